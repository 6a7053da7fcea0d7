/**
 * Request bodies of the song and speech endpoints (docs/api/audio.md) and the task inputs they become.
 */
import { Type, type Static } from 'typebox';
import { SubmitFields } from './submit-fields.ts';

/** The music weights: 0 to 1 with at most two decimals. */
export const MUSIC_WEIGHTS = ['styleWeight', 'weirdnessConstraint', 'audioWeight'] as const;
const musicWeight = (description: string) => Type.Optional(Type.Number({ minimum: 0, maximum: 1, description: `${description}; 0 to 1, two decimals` }));

export const SongBody = Type.Object({
  ...SubmitFields,
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
export type SongBody = Static<typeof SongBody>;

/** Emotions of MiniMax's voice_setting.emotion (`fluent` is newer; `neutral` the older name for calm delivery). */
const SPEECH_EMOTIONS = ['happy', 'sad', 'angry', 'fearful', 'disgusted', 'surprised', 'calm', 'neutral', 'fluent'] as const;
/** The speech formats the gateway writes. */
export const SPEECH_FORMATS = ['mp3', 'wav', 'flac'] as const;

export const SpeechBody = Type.Object({
  ...SubmitFields,
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
export type SpeechBody = Static<typeof SpeechBody>;

/** Task input of `song.generations`: the body without `model`. */
export const SongInput = Type.Omit(SongBody, ['model']);
export type SongInput = Static<typeof SongInput>;

/** Task input of `speech.generations`: the body without `model`. */
export const SpeechInput = Type.Omit(SpeechBody, ['model']);
export type SpeechInput = Static<typeof SpeechInput>;

/** OpenAI's speech formats; the gateway writes mp3, wav and flac. */
export const OPENAI_SPEECH_FORMATS = ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'] as const;

/** The body of POST /v1/audio/speech and /openai/v1/audio/speech (OpenAI's speech API). */
export const OpenAiSpeechBody = Type.Object({
  ...SubmitFields,
  model: Type.String({ minLength: 1, description: 'catalog alias of a text_to_speech model' }),
  input: Type.String({ minLength: 1, maxLength: 10_000, description: 'the text to speak' }),
  voice: Type.String({ minLength: 1, description: 'one of the model\'s text_to_speech.voices[].id (any id when the model lists none)' }),
  instructions: Type.Optional(Type.String({ description: 'style steering; accepted, not applied by the built-in engine' })),
  response_format: Type.Optional(Type.Enum([...OPENAI_SPEECH_FORMATS], { description: 'mp3 (default), wav or flac; opus, aac and pcm are refused' })),
  speed: Type.Optional(Type.Number({ minimum: 0.25, maximum: 4, description: '0.25 to 4, applied within 0.5 to 2' })),
  stream_format: Type.Optional(Type.Enum(['audio', 'sse'], { description: 'audio only' })),
}, { additionalProperties: false });
export type OpenAiSpeechBody = Static<typeof OpenAiSpeechBody>;

export const TRANSCRIPTION_FORMATS = ['json', 'text', 'srt', 'verbose_json', 'vtt'] as const;
export type TranscriptionFormat = (typeof TRANSCRIPTION_FORMATS)[number];

/** The text fields of POST /v1/audio/transcriptions (multipart, OpenAI's transcription API); the audio comes as the `file` part. */
export const TranscriptionFields = Type.Object({
  model: Type.String({ minLength: 1, description: 'catalog alias of a speech_to_text model' }),
  language: Type.Optional(Type.String({ pattern: '^[A-Za-z]{2,3}$', description: 'ISO-639-1 language of the speech' })),
  prompt: Type.Optional(Type.String()),
  response_format: Type.Optional(Type.Enum([...TRANSCRIPTION_FORMATS], { description: 'json (default), text, srt, verbose_json or vtt' })),
  temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  stream: Type.Optional(Type.Boolean({ description: 'false only' })),
}, { additionalProperties: true });
export type TranscriptionFields = Static<typeof TranscriptionFields>;
