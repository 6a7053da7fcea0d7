/**
 * Request bodies of the song and speech endpoints (spec document 1) and the task inputs they become.
 */
import { Type, type Static } from 'typebox';

/** The music weights: 0 to 1 with at most two decimals (spec document 1, limits). */
export const MUSIC_WEIGHTS = ['styleWeight', 'weirdnessConstraint', 'audioWeight'] as const;
const musicWeight = (description: string) => Type.Optional(Type.Number({ minimum: 0, maximum: 1, description: `${description}; 0 to 1, two decimals` }));

export const SongBody = Type.Object({
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
const SPEECH_FORMATS = ['mp3', 'wav', 'flac'] as const;

export const SpeechBody = Type.Object({
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
export type SongInput = Omit<SongBody, 'model'>;

/** Task input of `speech.generations`: the body without `model`. */
export type SpeechInput = Omit<SpeechBody, 'model'>;
