import { Type, type Static } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { LiveModel } from '../../catalog/catalog.ts';
import { ApiError } from '../../core/errors.ts';
import { asyncHeaders, generateFor, sendOutcome } from '../generation-reply.ts';
import type { AppServices } from '../services.ts';

const security = [{ bearer: [] }];

/** The music weights: 0 to 1 with at most two decimals (limits). */
const MUSIC_WEIGHTS = ['styleWeight', 'weirdnessConstraint', 'audioWeight'] as const;
const musicWeight = (description: string) => Type.Optional(Type.Number({ minimum: 0, maximum: 1, description: `${description}; 0 to 1, two decimals` }));

const SongBody = Type.Object({
  prompt: Type.String({ minLength: 1, description: 'what the song is about; the lyrics in custom mode' }),
  model: Type.String({ minLength: 1, description: 'catalog alias of a model with audio_generate' }),
  makeInstrumental: Type.Optional(Type.Boolean({ description: 'no vocals' })),
  customMode: Type.Optional(Type.Boolean({ description: 'the prompt is the lyrics and tags the style' })),
  title: Type.Optional(Type.String({ description: 'song title, written into the file' })),
  tags: Type.String({ minLength: 1, description: 'style tags' }),
  negativeTags: Type.String({ description: 'styles to avoid; an empty string is accepted' }),
  vocalGender: Type.Optional(Type.Enum(['m', 'f'], { description: 'm or f' })),
  styleWeight: musicWeight('how strongly the style tags shape the song'),
  weirdnessConstraint: musicWeight('how far the song may wander'),
  audioWeight: musicWeight('weight of the reference audio'),
}, { additionalProperties: false });

/** Emotions of MiniMax's voice_setting.emotion (`fluent` is newer; `neutral` the older name for calm delivery). */
const SPEECH_EMOTIONS = ['happy', 'sad', 'angry', 'fearful', 'disgusted', 'surprised', 'calm', 'neutral', 'fluent'] as const;
const SPEECH_FORMATS = ['mp3', 'wav', 'flac'] as const;
/** The volume range when the model's capability declares none (MiniMax's). */
const DEFAULT_VOLUME_RANGE = { min: 0, max: 10 };

const SpeechBody = Type.Object({
  model: Type.String({ minLength: 1, description: 'catalog alias of a model with text_to_speech' }),
  text: Type.String({ minLength: 1, maxLength: 10_000, description: 'the text to speak (MiniMax\'s synchronous limit: 10000 characters)' }),
  text_file_id: Type.Optional(Type.String({
    minLength: 1,
    description: 'a UTF-8 text file to speak instead of `text` (for long texts): a /v1/files/upload URL, an asset hash blake3:<hex>, a data: URI or a URL',
  })),
  voice_id: Type.String({ minLength: 1, description: 'one of the model\'s text_to_speech.voices[].id (any id when the model lists none)' }),
  speed: Type.Optional(Type.Number({ minimum: 0.5, maximum: 2, description: '0.5 to 2; 1 is normal' })),
  vol: Type.Optional(Type.Number({ minimum: 0, description: 'loudness, within the model\'s volume_range (default 0 to 10); 1 is normal' })),
  pitch: Type.Optional(Type.Integer({ minimum: -12, maximum: 12, description: '-12 to 12; 0 is the voice\'s own pitch' })),
  emotion: Type.Optional(Type.Enum([...SPEECH_EMOTIONS], { description: SPEECH_EMOTIONS.join(', ') })),
  format: Type.Optional(Type.Enum([...SPEECH_FORMATS], { description: 'audio file format; default mp3' })),
}, { additionalProperties: false });

/** Rules of a song request beyond its schema: two-decimal weights, instrumental only where the model can. */
function checkSong(body: Static<typeof SongBody>, model: LiveModel): void {
  for (const name of MUSIC_WEIGHTS) {
    const value = body[name];
    if (value !== undefined && Math.abs(value * 100 - Math.round(value * 100)) > 1e-9) {
      throw new ApiError('invalid_parameter', `${name} has at most two decimals, got ${value}`, name);
    }
  }
  if (body.makeInstrumental && model.capabilities.audio_generate?.supports_instrumental === false) {
    throw new ApiError('unsupported_parameter', `model ${model.alias} cannot make instrumentals`, 'makeInstrumental');
  }
}

/** Rules of a speech request that depend on the model's text_to_speech capability. */
function checkSpeech(body: Static<typeof SpeechBody>, model: LiveModel): void {
  if (!body.text.trim()) throw new ApiError('invalid_parameter', 'text must not be blank', 'text');
  const capability = model.capabilities.text_to_speech;
  const voices = capability?.voices ?? [];
  if (voices.length > 0 && !voices.some((v) => v.id === body.voice_id)) {
    throw new ApiError('invalid_parameter', `model ${model.alias} has no voice ${body.voice_id}`, 'voice_id');
  }
  const params = capability?.tts_params || undefined;
  const range = params?.volume_range ?? DEFAULT_VOLUME_RANGE;
  if (body.vol !== undefined && (body.vol < range.min || body.vol > range.max)) {
    throw new ApiError('invalid_parameter', `vol must be from ${range.min} to ${range.max}`, 'vol');
  }
  if (body.emotion !== undefined && params?.emotion === false) {
    throw new ApiError('unsupported_parameter', `model ${model.alias} has no emotion control`, 'emotion');
  }
  if (body.format !== undefined && params?.audio_formats && !params.audio_formats.includes(body.format)) {
    throw new ApiError('invalid_parameter', `model ${model.alias} writes ${params.audio_formats.join(', ')}`, 'format');
  }
}

/** Music (Suno-style) and speech synthesis (MiniMax-style); sync by default, async with x-async. */
export const audioRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  app.post('/v1/song/generations', {
    schema: {
      tags: ['generation'],
      summary: 'Generate a song; waits for the result unless x-async is set',
      description: 'Sync: the task result (output: one MP3 URL). Async: `{task_id, request_id, status}`.',
      security,
      headers: asyncHeaders,
      body: SongBody,
    },
  }, async (request, reply) => {
    const { model, ...input } = request.body;
    checkSong(request.body, services.generations.resolveModel(model, ['audio_generate']));
    const outcome = await generateFor(services.generations, request, {
      endpoint: 'song.generations',
      capabilities: ['audio_generate'],
      outputType: 'audio',
      model,
      input,
    });
    return sendOutcome(reply, outcome);
  });

  app.post('/v1/speech/generations', {
    schema: {
      tags: ['generation'],
      summary: 'Synthesize speech; waits for the result unless x-async is set',
      description: 'Sync: the task result (output: one audio URL, MP3 unless `format` says otherwise). Async: `{task_id, request_id, status}`.',
      security,
      headers: asyncHeaders,
      body: SpeechBody,
    },
  }, async (request, reply) => {
    const { model, ...input } = request.body;
    checkSpeech(request.body, services.generations.resolveModel(model, ['text_to_speech']));
    const outcome = await generateFor(services.generations, request, {
      endpoint: 'speech.generations',
      capabilities: ['text_to_speech'],
      outputType: 'audio',
      model,
      input,
    });
    return sendOutcome(reply, outcome);
  });
};
