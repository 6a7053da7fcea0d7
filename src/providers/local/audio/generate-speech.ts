import { speechVoicesOf } from '../../../catalog/capabilities.ts';
import { TaskFailedError, type GenerationOutput, type RunContext } from '../../spec.ts';
import type { LocalHandler } from '../local-handler.ts';
import { AUDIO_MIME_TYPES, encodeAudio, softLimit } from './encode-audio.ts';
import { MESPEAK_SAMPLE_RATE, speakUtterances } from './mespeak.ts';
import { localVoiceFor } from './speech-voice.ts';

/** Longest text the local engine reads from a `text_file_id` file (about 25 minutes of speech). */
const MAX_FILE_TEXT_CHARS = 20_000;
/** Utterances handed to eSpeak at once: whole sentences up to this many characters. */
const CHUNK_CHARS = 400;
/** eSpeak's speed at speed 1, in words per minute (its own default). */
const BASE_WORDS_PER_MINUTE = 175;
/** eSpeak pitch units (0–99) per step of the request's pitch (−12…12). */
const PITCH_UNITS_PER_STEP = 3;
/** Loudness at vol 1, as the RMS of the samples; vol scales it linearly, a soft limiter keeps it in range. */
const RMS_AT_VOL_1 = 0.08;

/** How an emotion shifts the delivery: eSpeak pitch units, a speed factor and a loudness factor. */
const EMOTION_STYLES: Record<string, { pitch: number; speed: number; gain: number }> = {
  happy: { pitch: 8, speed: 1.1, gain: 1.1 },
  sad: { pitch: -8, speed: 0.85, gain: 0.8 },
  angry: { pitch: 4, speed: 1.15, gain: 1.3 },
  fearful: { pitch: 10, speed: 1.2, gain: 0.9 },
  disgusted: { pitch: -4, speed: 0.9, gain: 1 },
  surprised: { pitch: 12, speed: 1.05, gain: 1.1 },
  calm: { pitch: -2, speed: 0.95, gain: 0.9 },
};
const NEUTRAL_STYLE = { pitch: 0, speed: 1, gain: 1 };

const clamp = (value: number, min: number, max: number) => Math.min(max, Math.max(min, value));

/**
 * The text of a `text_file_id` reference: a UTF-8 text file (an upload's URL, an asset hash, a
 * data URI or a URL), spoken instead of `text`, as MiniMax's long-text API takes a file instead
 * of the text.
 */
async function readTextFile(ctx: RunContext, ref: string): Promise<string> {
  const file = await ctx.readInput(ref);
  if (/^(image|audio|video)\//.test(file.mimeType)) throw new TaskFailedError(`text_file_id must be a text file, got ${file.mimeType}`);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(file.data).trim();
  } catch {
    throw new TaskFailedError('text_file_id must be a UTF-8 text file');
  }
  if (!text) throw new TaskFailedError('the text_file_id file is empty');
  if (text.length > MAX_FILE_TEXT_CHARS) throw new TaskFailedError(`the text_file_id file has ${text.length} characters; the local engine speaks at most ${MAX_FILE_TEXT_CHARS}`);
  return text;
}

/** Splits text into utterances of whole sentences, each at most CHUNK_CHARS long. */
function speechChunks(text: string): string[] {
  const sentences = text.match(/[^.!?;。！？；\n]+[.!?;。！？；\n]*/g) ?? [];
  const pieces = sentences.flatMap((sentence) => {
    if (sentence.length <= CHUNK_CHARS) return [sentence];
    // A sentence too long for one utterance breaks between words (CJK text has no spaces: anywhere).
    return sentence.match(new RegExp(`.{1,${CHUNK_CHARS}}(\\s|,|，|$)|.{1,${CHUNK_CHARS}}`, 'gu')) ?? [];
  });
  const chunks: string[] = [];
  for (const piece of pieces) {
    const last = chunks.length - 1;
    if (last >= 0 && chunks[last]!.length + piece.length <= CHUNK_CHARS) chunks[last] += piece;
    else chunks.push(piece);
  }
  return chunks.map((c) => c.trim()).filter((c) => /[\p{L}\p{N}]/u.test(c));
}

function concat(parts: Float32Array[]): Float32Array {
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** Scales samples to RMS_AT_VOL_1 × gain, then limits them softly to [-1, 1]. */
function applyVolume(samples: Float32Array, gain: number): Float32Array {
  let sum = 0;
  for (const s of samples) sum += s * s;
  const rms = Math.sqrt(sum / Math.max(1, samples.length));
  const scale = rms > 0 ? (RMS_AT_VOL_1 * gain) / rms : 0;
  for (let i = 0; i < samples.length; i++) samples[i]! *= scale;
  return softLimit(samples);
}

/**
 * Speech from the request's text with eSpeak (mespeak in a child process): the voice id maps to
 * a language and variant (speech-voice.ts), speed to words per minute (175 × speed), pitch to
 * eSpeak pitch, vol to loudness, emotion to small shifts of all three. Deterministic.
 */
export const generateSpeech: LocalHandler<'speech.generations'> = {
  async run(job, ctx: RunContext): Promise<GenerationOutput> {
    const input = job.input;
    const text = input.text_file_id ? await readTextFile(ctx, input.text_file_id) : input.text;
    const entry = speechVoicesOf(job.model).find((v) => v.id === input.voice_id);
    const voice = localVoiceFor(input.voice_id, entry, text);
    const style = (input.emotion && EMOTION_STYLES[input.emotion]) || NEUTRAL_STYLE;
    const utterance = {
      variant: voice.variant,
      pitch: clamp(Math.round(voice.pitch + PITCH_UNITS_PER_STEP * (input.pitch ?? 0) + style.pitch), 0, 99),
      speed: clamp(Math.round(BASE_WORDS_PER_MINUTE * (input.speed ?? 1) * style.speed), 80, 450),
      amplitude: 100,
    };
    const chunks = speechChunks(text);
    if (chunks.length === 0) throw new TaskFailedError('the text has nothing to speak (no letters or digits)');
    const parts = await speakUtterances(voice.voice, chunks.map((chunk) => ({ ...utterance, text: chunk })), ctx.signal);
    const samples = applyVolume(concat(parts), (input.vol ?? 1) * style.gain);
    const format = input.format ?? 'mp3';
    const data = await encodeAudio(samples, { sampleRate: MESPEAK_SAMPLE_RATE, channels: 1, format, signal: ctx.signal });
    return { files: [{ type: 'audio', data, fileName: `${job.taskId}.${format}`, mimeType: AUDIO_MIME_TYPES[format] }] };
  },
};
