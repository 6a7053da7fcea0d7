/**
 * Speech in OpenAI's shape (POST /v1/audio/speech and /openai/v1/audio/speech): the request
 * becomes a speech task of the same pipeline as /v1/speech/generations, run synchronously, and
 * the answer is the audio file's bytes.
 */
import { ApiError } from '../core/errors.ts';
import type { FileService } from '../files/file-service.ts';
import { endedResult, ownFileBytes } from '../tasks/ended-result.ts';
import type { GenerationCaller, GenerationOutcome } from '../tasks/generation-service.ts';
import type { OpenAiSpeechBody, SpeechInput } from '../endpoints/audio.ts';
import type { AudioService } from './service.ts';

const MIME_TYPES: Record<NonNullable<SpeechInput['format']>, string> = { mp3: 'audio/mpeg', wav: 'audio/wav', flac: 'audio/flac' };
/** The speed range of the speech task (OpenAI's is wider: 0.25 to 4). */
const SPEED_RANGE = { min: 0.5, max: 2 };
/** OpenAI's names of the speech task's fields, for the errors the task's checks raise. */
const OPENAI_PARAMS: Record<string, string> = { text: 'input', voice_id: 'voice', format: 'response_format' };

export class SpeechAudioService {
  private readonly deps: { audio: AudioService; files: FileService };

  constructor(deps: { audio: AudioService; files: FileService }) {
    this.deps = deps;
  }

  async synthesize(caller: GenerationCaller, body: OpenAiSpeechBody): Promise<{ data: Buffer; mimeType: string }> {
    const format = body.response_format ?? 'mp3';
    if (!(format in MIME_TYPES)) throw new ApiError('invalid_parameter', `response_format ${format} is not supported: mp3, wav or flac`, 'response_format');
    if (body.stream_format === 'sse') throw new ApiError('unsupported_parameter', 'stream_format sse is not supported: the answer is the audio file', 'stream_format');
    const input = {
      model: body.model,
      text: body.input,
      voice_id: body.voice,
      format: format as keyof typeof MIME_TYPES,
      ...(body.speed !== undefined ? { speed: Math.min(SPEED_RANGE.max, Math.max(SPEED_RANGE.min, body.speed)) } : {}),
    };
    let outcome: GenerationOutcome;
    try {
      outcome = await this.deps.audio.speech(caller, input, 'sync');
    } catch (err) {
      if (err instanceof ApiError && err.param && OPENAI_PARAMS[err.param]) {
        throw new ApiError(err.code, err.message.replaceAll(err.param, OPENAI_PARAMS[err.param]!), OPENAI_PARAMS[err.param]!);
      }
      throw err;
    }
    const url = endedResult(outcome).output[0];
    if (!url) throw new ApiError('task_failed', 'the speech task made no audio');
    return { data: await ownFileBytes(this.deps.files, url), mimeType: MIME_TYPES[input.format] };
  }
}
