import type { GenerationOutput, RunContext } from '../../spec.ts';
import type { LocalHandler } from '../local-handler.ts';
import { mulberry32 } from '../seeded-random.ts';
import { encodeAudio, softLimit } from './encode-audio.ts';
import { MESPEAK_SAMPLE_RATE, speakUtterances } from './mespeak.ts';
import { planSong, type SongInput, type SongPlan } from './song-plan.ts';
import { voiceForText } from './speech-voice.ts';
import { MUSIC_SAMPLE_RATE, renderBackingTrack, songTiming, type StereoTrack } from './synthesize-music.ts';

/** Distinct lyric lines sung, and words per line. */
const MAX_LYRIC_LINES = 16;
const MAX_LINE_WORDS = 10;
/** The voice starts with the melody (bar 5) and stops before the last two bars. */
const VOCALS_FROM_BAR = 4;
const VOCALS_END_BARS_BEFORE = 2;
/** Loudness of the backing track (peak) and of the voice (RMS while it sounds). */
const BACKING_PEAK = 0.6;
const VOICE_RMS = 0.12;
/** eSpeak settings of the vocal line: drawn-out words, a base pitch per gender. */
const VOCAL_WORDS_PER_MINUTE = 130;
const VOCAL_WORD_GAP = 3;
const VOCAL_PITCH = { m: 32, f: 68 } as const;
const VOCAL_VARIANT = { m: 'm3', f: 'f2' } as const;
/** eSpeak pitch offsets of successive lines: a rising and falling contour. */
const LINE_CONTOUR = [0, 6, 10, 4, -4, 2, 8, 0];

/**
 * The words the voice sings: in custom mode the prompt is the lyrics (as with Suno), otherwise
 * the title, or the prompt when there is none. Section markers such as `[Verse]` are dropped;
 * lines break at new lines and punctuation, long lines every ten words.
 */
function lyricLines(input: SongInput): string[] {
  const source = input.customMode ? input.prompt : input.title?.trim() || input.prompt;
  const lines = source
    .replace(/\[[^\]]*\]/g, '\n')
    .split(/[\n.!?;,。！？；，]+/)
    .map((line) => line.trim())
    .filter((line) => /[\p{L}\p{N}]/u.test(line))
    .flatMap((line) => {
      const words = line.split(/\s+/);
      const parts: string[] = [];
      for (let i = 0; i < words.length; i += MAX_LINE_WORDS) parts.push(words.slice(i, i + MAX_LINE_WORDS).join(' '));
      return parts;
    });
  return lines.slice(0, MAX_LYRIC_LINES);
}

/** The title written into the file: the request's, or the prompt's first line cut at 80 characters. */
function songTitle(input: SongInput): string {
  const given = input.title?.trim();
  if (given) return given;
  const firstLine = input.prompt.replace(/\[[^\]]*\]/g, '').trim().split('\n')[0]!.trim();
  return firstLine.length > 80 ? `${firstLine.slice(0, 79)}…` : firstLine;
}

/** Doubles the sample rate of mespeak's voice (22050 → 44100 Hz) by linear interpolation. */
function upsample(samples: Float32Array): Float32Array {
  const factor = MUSIC_SAMPLE_RATE / MESPEAK_SAMPLE_RATE;
  const out = new Float32Array(Math.floor(samples.length * factor));
  for (let i = 0; i < out.length; i++) {
    const x = i / factor;
    const j = Math.floor(x);
    const a = samples[j] ?? 0;
    const b = samples[j + 1] ?? a;
    out[i] = a + (b - a) * (x - j);
  }
  return out;
}

/**
 * Sings the lyrics over the track: each line is spoken by eSpeak at a pitch following a contour,
 * starting on a bar line; the lines repeat from the start until the vocal section ends.
 */
async function addVocals(track: StereoTrack, plan: SongPlan, input: SongInput, signal: AbortSignal): Promise<void> {
  const lines = lyricLines(input);
  if (lines.length === 0) return;
  const gender = input.vocalGender ?? (mulberry32(plan.seed)() < 0.5 ? 'm' : 'f');
  const voices = await speakUtterances(
    voiceForText(lines.join(' ')),
    lines.map((text, i) => ({
      text,
      variant: VOCAL_VARIANT[gender],
      pitch: VOCAL_PITCH[gender] + LINE_CONTOUR[i % LINE_CONTOUR.length]!,
      speed: VOCAL_WORDS_PER_MINUTE,
      amplitude: 100,
      wordgap: VOCAL_WORD_GAP,
    })),
    signal,
  ).then((parts) => parts.map(upsample));

  let sum = 0;
  let count = 0;
  for (const voice of voices) for (const s of voice) (sum += s * s), count++;
  const gain = count > 0 && sum > 0 ? VOICE_RMS / Math.sqrt(sum / count) : 0;

  const { barSamples, bars } = songTiming(plan);
  const end = (bars - VOCALS_END_BARS_BEFORE) * barSamples;
  let at = VOCALS_FROM_BAR * barSamples;
  for (let i = 0; ; i++) {
    const voice = voices[i % voices.length]!;
    if (at + voice.length > Math.min(end, track.left.length)) break;
    for (let k = 0; k < voice.length; k++) {
      const v = voice[k]! * gain;
      track.left[at + k]! += v;
      track.right[at + k]! += v;
    }
    at += Math.ceil(voice.length / barSamples) * barSamples;
  }
}

/** Scales the backing track so that its loudest sample is BACKING_PEAK. */
function normalise(track: StereoTrack): void {
  let peak = 0;
  for (const channel of [track.left, track.right]) for (const s of channel) peak = Math.max(peak, Math.abs(s));
  const gain = peak > 0 ? BACKING_PEAK / peak : 0;
  for (const channel of [track.left, track.right]) for (let i = 0; i < channel.length; i++) channel[i]! *= gain;
}

function interleave(track: StereoTrack): Float32Array {
  const out = new Float32Array(track.left.length * 2);
  for (let i = 0; i < track.left.length; i++) {
    out[2 * i] = track.left[i]!;
    out[2 * i + 1] = track.right[i]!;
  }
  return out;
}

/**
 * One song per task, as an MP3 (44.1 kHz stereo, 128 kbit/s) with the title and tags in its ID3
 * tag: a synthesized backing track (song-plan.ts, synthesize-music.ts) and, unless
 * makeInstrumental, a voice singing the lyrics. The same request gives the same file.
 */
export const generateSong: LocalHandler<'song.generations'> = {
  async run(job, ctx: RunContext): Promise<GenerationOutput> {
    const input = job.input;
    const plan = planSong(job.model.alias, input);
    const track = renderBackingTrack(plan);
    normalise(track);
    if (!input.makeInstrumental) await addVocals(track, plan, input, ctx.signal);
    const data = await encodeAudio(softLimit(interleave(track)), {
      sampleRate: MUSIC_SAMPLE_RATE,
      channels: 2,
      format: 'mp3',
      metadata: { title: songTitle(input), genre: input.tags },
      signal: ctx.signal,
    });
    return { files: [{ type: 'audio', data, fileName: `${job.taskId}.mp3`, mimeType: 'audio/mpeg' }] };
  },
};
