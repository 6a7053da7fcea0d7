import { mulberry32 } from '../seeded-random.ts';
import type { SongPlan } from './song-plan.ts';

/** Sample rate of the songs the local engine writes. */
export const MUSIC_SAMPLE_RATE = 44100;

const MAJOR_SCALE = [0, 2, 4, 5, 7, 9, 11];
const MINOR_SCALE = [0, 2, 3, 5, 7, 8, 10];
/** Pentatonic degrees of the scales above: the melody's notes. */
const MAJOR_PENTATONIC = [0, 1, 2, 4, 5];
const MINOR_PENTATONIC = [0, 2, 3, 4, 6];
/** Bars of pad only before the drums, and before the melody. */
const INTRO_BARS = 2;
const MELODY_FROM_BAR = 4;
const FADE_OUT_SECONDS = 2;

/** A stereo track being mixed. */
export interface StereoTrack {
  left: Float32Array;
  right: Float32Array;
}

const frequency = (midi: number) => 440 * 2 ** ((midi - 69) / 12);

/** Semitones above the root of scale degree `degree` (any integer, wrapping into octaves). */
function degreeSemitones(scale: number[], degree: number): number {
  const octave = Math.floor(degree / scale.length);
  return scale[degree - octave * scale.length]! + 12 * octave;
}

/** Timing of the song in samples. */
export interface SongTiming {
  barSamples: number;
  beatSamples: number;
  bars: number;
  totalSamples: number;
}

export function songTiming(plan: SongPlan): SongTiming {
  const beatSamples = Math.round((60 / plan.bpm) * MUSIC_SAMPLE_RATE);
  const totalSamples = Math.round(plan.durationSeconds * MUSIC_SAMPLE_RATE);
  return { beatSamples, barSamples: beatSamples * 4, totalSamples, bars: Math.ceil(totalSamples / (beatSamples * 4)) };
}

/** Samples per wavetable period. */
const TABLE_SIZE = 4096;
const SINE = Float32Array.from({ length: TABLE_SIZE }, (_, i) => Math.sin((2 * Math.PI * i) / TABLE_SIZE));
/** Below this an envelope counts as silent and the note stops. */
const SILENT = 1e-4;
/** Notes end with a short linear release instead of a click. */
const RELEASE_SAMPLES = 200;

/** One period of a tone with the given harmonic weights, for table lookup instead of sin() per sample. */
function wavetable(harmonics: number[]): Float32Array {
  const table = new Float32Array(TABLE_SIZE);
  harmonics.forEach((weight, h) => {
    for (let i = 0; i < TABLE_SIZE; i++) table[i]! += weight * SINE[(i * (h + 1)) % TABLE_SIZE]!;
  });
  return table;
}

const PAD = wavetable([1, 0.5, 0.33, 0.25]);
const BASS = wavetable([1, 0.3, 0.1]);
const LEAD = wavetable([1, 0.3, 0.1]);

/** Adds a tone at `start` for `length` samples: a wavetable with linear attack, exponential decay and a short release. */
function addTone(
  track: StereoTrack, start: number, length: number, freq: number,
  opts: { level: number; table: Float32Array; attack: number; decay: number; pan: number; vibrato?: number },
): void {
  const { left, right } = track;
  const { table, vibrato } = opts;
  // Integer sample positions: a typed array ignores writes at fractional indexes.
  start = Math.round(start);
  const end = Math.min(left.length, start + Math.round(length));
  const gl = opts.level * (1 - opts.pan);
  const gr = opts.level * (1 + opts.pan);
  const step = (freq * TABLE_SIZE) / MUSIC_SAMPLE_RATE;
  const attackStep = 1 / Math.max(1, opts.attack * MUSIC_SAMPLE_RATE);
  const decayFactor = Math.exp(-opts.decay / MUSIC_SAMPLE_RATE);
  const releaseFrom = end - RELEASE_SAMPLES;
  const vibratoStep = (5.5 * TABLE_SIZE) / MUSIC_SAMPLE_RATE;
  let phase = 0;
  let vibratoPhase = 0;
  let rise = 0;
  let fall = 1;
  for (let i = start; i < end && fall > SILENT; i++) {
    rise = rise < 1 ? Math.min(1, rise + attackStep) : 1;
    fall *= decayFactor;
    const envelope = i < releaseFrom ? rise * fall : (rise * fall * (end - i)) / RELEASE_SAMPLES;
    const v = table[phase | 0]! * envelope;
    phase += vibrato ? step * (1 + vibrato * SINE[vibratoPhase | 0]!) : step;
    if (phase >= TABLE_SIZE) phase -= TABLE_SIZE;
    vibratoPhase += vibratoStep;
    if (vibratoPhase >= TABLE_SIZE) vibratoPhase -= TABLE_SIZE;
    left[i]! += v * gl;
    right[i]! += v * gr;
  }
}

/** A drum hit: a falling sine (kick, snare body) and/or filtered noise (snare, hat). */
function addHit(
  track: StereoTrack, start: number, next: () => number,
  opts: { level: number; fromHz: number; toHz: number; tone: number; noise: number; decay: number; bright: boolean; pan: number },
): void {
  const { left, right } = track;
  const end = Math.min(left.length, start + Math.round(MUSIC_SAMPLE_RATE * 0.4));
  const sweepFactor = Math.exp(-30 / MUSIC_SAMPLE_RATE);
  const decayFactor = Math.exp(-opts.decay / MUSIC_SAMPLE_RATE);
  let sweep = 1;
  let envelope = opts.level;
  let phase = 0;
  let previous = 0;
  for (let i = start; i < end && envelope > SILENT; i++) {
    phase += ((opts.toHz + (opts.fromHz - opts.toHz) * sweep) * TABLE_SIZE) / MUSIC_SAMPLE_RATE;
    sweep *= sweepFactor;
    const white = next() * 2 - 1;
    // A first difference keeps only the hiss of the noise, for hats.
    const noise = opts.bright ? white - previous : white;
    previous = white;
    const v = (opts.tone * SINE[Math.floor(phase) % TABLE_SIZE]! + opts.noise * noise) * envelope;
    envelope *= decayFactor;
    left[i]! += v * (1 - opts.pan);
    right[i]! += v * (1 + opts.pan);
  }
}

/**
 * Renders the backing track of a plan: a pad playing the chord progression one chord a bar, a
 * bass line, drums (kick, snare, hats) after a two-bar intro, a pentatonic melody from bar 5 in
 * an A A B B phrase pattern, and a fade-out. Pure JavaScript synthesis, deterministic.
 */
export function renderBackingTrack(plan: SongPlan): StereoTrack {
  const timing = songTiming(plan);
  const { barSamples, beatSamples, bars, totalSamples } = timing;
  const eighth = beatSamples / 2;
  const track: StereoTrack = { left: new Float32Array(totalSamples), right: new Float32Array(totalSamples) };
  const next = mulberry32(plan.seed);
  const scale = plan.minor ? MINOR_SCALE : MAJOR_SCALE;
  const pentatonic = plan.minor ? MINOR_PENTATONIC : MAJOR_PENTATONIC;
  const bassPattern = Array.from({ length: 8 }, (_, i) => i === 0 || next() < 0.45);
  const kickExtras = Array.from({ length: 8 }, (_, i) => i % 4 !== 0 && next() < 0.15);
  // Two four-bar phrases of eighth notes: a pentatonic step (or null for a rest) each.
  const phrases = [0, 1].map(() => {
    let position = 5 + Math.floor(next() * 3);
    return Array.from({ length: 32 }, () => {
      if (next() < 0.3) return null;
      position = Math.max(0, Math.min(10, position + Math.round((next() - 0.5) * 4)));
      return { position, offScale: next() < plan.offScale, held: next() < 0.35 };
    });
  });

  for (let bar = 0; bar < bars; bar++) {
    const barStart = bar * barSamples;
    const chordDegree = plan.progression[bar % plan.progression.length]!;
    const chordRoot = plan.rootMidi + degreeSemitones(scale, chordDegree);
    for (const [i, third] of [0, 2, 4].entries()) {
      const midi = plan.rootMidi + 12 + degreeSemitones(scale, chordDegree + third);
      addTone(track, barStart, barSamples, frequency(midi) * (1 + (i - 1) * 0.002), {
        level: 0.05, table: PAD, attack: 0.15, decay: 0.25, pan: (i - 1) * 0.5,
      });
    }
    bassPattern.forEach((on, i) => {
      if (on) addTone(track, barStart + i * eighth, eighth, frequency(chordRoot - 12), {
        level: 0.22 * plan.rhythmLevel, table: BASS, attack: 0.005, decay: 6, pan: 0,
      });
    });
    if (plan.drums && bar >= INTRO_BARS) {
      for (let i = 0; i < 8; i++) {
        const at = Math.round(barStart + i * eighth);
        if (i % 4 === 0 || kickExtras[i]) addHit(track, at, next, { level: 0.6 * plan.rhythmLevel, fromHz: 140, toHz: 45, tone: 1, noise: 0.05, decay: 12, bright: false, pan: 0 });
        if (i % 4 === 2) addHit(track, at, next, { level: 0.25 * plan.rhythmLevel, fromHz: 240, toHz: 180, tone: 0.5, noise: 0.8, decay: 22, bright: false, pan: 0.1 });
        addHit(track, at, next, { level: 0.06 * plan.rhythmLevel, fromHz: 0, toHz: 0, tone: 0, noise: 1, decay: 70, bright: true, pan: -0.3 });
      }
    }
    if (bar >= MELODY_FROM_BAR) {
      // A A B B: the phrase changes every eight bars.
      const phrase = phrases[Math.floor((bar - MELODY_FROM_BAR) / 8) % 2]!;
      for (let i = 0; i < 8; i++) {
        const note = phrase[((bar - MELODY_FROM_BAR) % 4) * 8 + i];
        if (!note) continue;
        const octave = Math.floor(note.position / pentatonic.length);
        const degree = pentatonic[note.position % pentatonic.length]! + octave * scale.length;
        const midi = plan.rootMidi + 12 + degreeSemitones(scale, degree) + (note.offScale ? 1 : 0);
        addTone(track, barStart + i * eighth, note.held ? eighth * 2 : eighth, frequency(midi), {
          level: 0.12, table: LEAD, attack: 0.01, decay: 2, pan: 0.2, vibrato: 0.004,
        });
      }
    }
  }
  fadeOut(track);
  return track;
}

/** Fades the last seconds to silence. */
function fadeOut(track: StereoTrack): void {
  const length = Math.round(FADE_OUT_SECONDS * MUSIC_SAMPLE_RATE);
  const from = track.left.length - length;
  for (let i = Math.max(0, from); i < track.left.length; i++) {
    const gain = (track.left.length - i) / length;
    track.left[i]! *= gain;
    track.right[i]! *= gain;
  }
}
