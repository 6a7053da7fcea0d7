import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { OpenAiSpeechBody, TranscriptionFields } from '../../endpoints/audio.ts';
import { ApiError } from '../../core/errors.ts';
import { guessMimeType } from '../../core/mime-type.ts';
import type { InputFile } from '../../providers/spec.ts';
import { clientGoneSignal } from '../client-gone.ts';
import { callerOf } from '../generation-reply.ts';
import type { AppServices } from '../services.ts';

const security = [{ bearer: [] }];

/** POST /audio/speech and /audio/transcriptions (OpenAI's audio API), registered under /v1 and /openai/v1. */
export const openAiAudioRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  const { settings } = services;
  // Multipart text fields are text: checked with the coercion the app applies to query strings.
  const validateFields = app.validatorCompiler!({ schema: TranscriptionFields, method: 'POST', url: '/audio/transcriptions', httpPart: 'querystring' });

  /** The form's fields and its `file` part, read whole (the size limit is the upload limit). */
  async function readForm(request: FastifyRequest): Promise<{ fields: TranscriptionFields; file: InputFile }> {
    if (!request.isMultipart()) throw new ApiError('unsupported_content_type', 'send multipart/form-data with a file part', 'file');
    const fields: Record<string, unknown> = {};
    let file: InputFile | undefined;
    for await (const part of request.parts()) {
      if (part.type === 'field') {
        fields[part.fieldname.replace(/\[\]$/, '')] = part.value;
      } else if (part.fieldname === 'file' && !file) {
        const data = await part.toBuffer().catch((err: { code?: string }) => {
          throw err.code === 'FST_REQ_FILE_TOO_LARGE' ? new ApiError('file_too_large', `file is larger than the ${settings.maxFileBytes} byte upload limit`, 'file') : err;
        });
        file = { data, fileName: part.filename || 'audio', mimeType: guessMimeType(part.filename, data) };
      } else {
        part.file.resume();
      }
    }
    if (validateFields(fields) !== true) {
      throw Object.assign(new Error('invalid form fields'), { validation: (validateFields as { errors?: unknown[] }).errors, validationContext: 'body' });
    }
    if (!file) throw new ApiError('missing_parameter', 'file is required', 'file');
    if (file.data.length === 0) throw new ApiError('invalid_parameter', 'file is empty', 'file');
    return { fields: fields as TranscriptionFields, file };
  }

  app.post('/audio/speech', {
    schema: {
      tags: ['audio'],
      summary: 'Speak a text (OpenAI\'s speech API); the answer is the audio file',
      description: 'Runs a speech task like /v1/speech/generations and answers its bytes: audio/mpeg, audio/wav or audio/flac by response_format.',
      security,
      body: OpenAiSpeechBody,
    },
  }, async (request, reply) => {
    const audio = await services.speechAudio.synthesize(callerOf(request), request.body);
    return reply.type(audio.mimeType).send(audio.data);
  });

  app.post('/audio/transcriptions', {
    schema: {
      tags: ['audio'],
      summary: 'Transcribe audio (OpenAI\'s transcription API, multipart/form-data)',
      description: 'Parts: `file` (the audio), `model`, and optionally `language`, `prompt`, `response_format` (json, text, srt, verbose_json, vtt), `temperature`. ' +
        'The built-in engine recognises no words: its text is empty and it reports the duration, channels and the language the request points to.',
      security,
    },
  }, async (request, reply) => {
    const { fields, file } = await readForm(request);
    const model = services.transcriptions.model(fields);
    const rendered = await services.transcriptions.transcribe(model, fields, file, clientGoneSignal(reply));
    return reply.type(rendered.contentType).send(typeof rendered.body === 'string' ? rendered.body : JSON.stringify(rendered.body));
  });
};
