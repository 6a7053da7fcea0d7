import { createHash } from 'node:crypto';

/** The song request as the route validated it. */
export interface SongInput {
  prompt: string;
  tags: string;
  negativeTags: string;
  title?: string;
  makeInstrumental?: boolean;
  customMode?: boolean;
  vocalGender?: 'm' | 'f';
  styleWeight?: number;
  weirdnessConstraint?: number;
  audioWeight?: number;
}

/** Everything the backing track is made of; the same request always gives the same plan. */
export interface SongPlan {
  /** Seed of the note and noise choices. */
  seed: number;
  durationSeconds: number;
  bpm: number;
  /** MIDI note of the key's root (octave 3). */
  rootMidi: number;
  minor: boolean;
  /** Scale degree (0-based) of each bar's chord, repeating. */
  progression: number[];
  drums: boolean;
  /** Level of drums and bass against pad and melody (0.5–1.5, from styleWeight). */
  rhythmLevel: number;
  /** Share of melody notes off the scale (from weirdnessConstraint). */
  offScale: number;
}

/** Shortest and longest song, in seconds. */
export const SONG_SECONDS = { min: 30, max: 90 } as const;

const PROGRESSIONS = [
  [0, 4, 5, 3],
  [5, 3, 0, 4],
  [0, 3, 4, 3],
  [1, 4, 0, 5],
  [0, 5, 3, 4],
];

const SLOW = /ballad|slow|ambient|lullaby|chill|lo-?fi|sad|sleep/i;
const FAST = /edm|dance|punk|metal|rock|techno|house|fast|drum ?(and|&|n) ?bass|upbeat|disco|trance/i;
const MINOR = /sad|dark|minor|melanchol|blues|metal|goth|emo|horror|epic/i;
const MAJOR = /happy|bright|major|upbeat|pop|sunny|cheer|summer|country/i;
const NO_DRUMS = /ambient|lullaby|classical|a ?cappella|solo piano|piano solo|meditat/i;
const DRUMS_WORDS = /drum|percussion|beat/i;

function digestOf(value: unknown): Buffer {
  return createHash('sha256').update(JSON.stringify(value)).digest();
}

/**
 * Plans the backing track. The length is 30 to 90 s, from a hash of prompt and tags only; tempo,
 * mode and drums follow words in the tags (slow/fast, sad/happy, ambient...), each left to the
 * hash when the tags say nothing; negativeTags naming drums or percussion remove the drums.
 * makeInstrumental and vocalGender are not part of the plan: a vocal song and its instrumental
 * share one backing track.
 */
export function planSong(modelAlias: string, input: SongInput): SongPlan {
  const length = digestOf([input.prompt, input.tags]);
  const style = digestOf([
    modelAlias, input.prompt, input.tags, input.negativeTags, input.title ?? null, input.customMode ?? false,
    input.styleWeight ?? null, input.weirdnessConstraint ?? null, input.audioWeight ?? null,
  ]);
  const span = (lo: number, hi: number, byte: number) => lo + (byte % (hi - lo + 1));
  const bpm = SLOW.test(input.tags) ? span(66, 84, style[0]!) : FAST.test(input.tags) ? span(120, 150, style[0]!) : span(88, 116, style[0]!);
  const minor = MINOR.test(input.tags) ? true : MAJOR.test(input.tags) ? false : style[1]! % 2 === 1;
  return {
    seed: style.readUInt32LE(4),
    durationSeconds: SONG_SECONDS.min + (length.readUInt32LE(0) % (SONG_SECONDS.max - SONG_SECONDS.min + 1)),
    bpm,
    rootMidi: 48 + (style[2]! % 12),
    minor,
    progression: PROGRESSIONS[style[3]! % PROGRESSIONS.length]!,
    drums: !NO_DRUMS.test(input.tags) && !DRUMS_WORDS.test(input.negativeTags),
    rhythmLevel: 0.5 + (input.styleWeight ?? 0.5),
    offScale: 0.3 * (input.weirdnessConstraint ?? 0.3),
  };
}
