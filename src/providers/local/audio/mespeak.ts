import { fileURLToPath } from 'node:url';
import { runChild } from '../run-child.ts';

/** Sample rate of everything mespeak produces (16-bit mono). */
export const MESPEAK_SAMPLE_RATE = 22050;

/** The voice files shipped with mespeak, by the id the child loads (`voices/<id>.json`). */
export const MESPEAK_VOICES = [
  'ca', 'cs', 'de', 'el', 'eo', 'es', 'es-la', 'fi', 'fr', 'hu', 'it', 'kn', 'la', 'lv', 'nl', 'pl', 'pt', 'pt-pt', 'ro', 'sk', 'sv', 'tr', 'zh', 'zh-yue',
  'en/en', 'en/en-us', 'en/en-rp', 'en/en-sc', 'en/en-n', 'en/en-wm',
] as const;

export type MespeakVoice = (typeof MESPEAK_VOICES)[number];

/** One utterance: eSpeak's own units (pitch 0–99, speed in words per minute, amplitude 0–200). */
export interface Utterance {
  text: string;
  pitch: number;
  speed: number;
  amplitude: number;
  /** eSpeak voice variant, e.g. `m3`, `f2`, `klatt`. */
  variant?: string;
  /** Extra pause between words, in units of 10 ms. */
  wordgap?: number;
}

const CHILD_SCRIPT = fileURLToPath(new URL('./mespeak-child.cjs', import.meta.url));
const STDERR_TAIL_CHARS = 2000;

/**
 * Speaks each utterance in `voice` with mespeak, which is GPL and therefore runs in a child Node
 * process (mespeak-child.cjs). Returns one array of samples in [-1, 1] per utterance, at
 * MESPEAK_SAMPLE_RATE. The child is killed when `signal` aborts.
 */
export async function speakUtterances(voice: MespeakVoice, items: Utterance[], signal?: AbortSignal): Promise<Float32Array[]> {
  const run = await runChild(process.execPath, [CHILD_SCRIPT], { input: JSON.stringify({ voice, items }), stderrTailChars: STDERR_TAIL_CHARS, signal });
  if (run.code !== 0) throw new Error(`speech synthesis exited with code ${run.code}: ${run.stderr.trim().split('\n').pop() ?? ''}`);
  return splitWavs(run.stdout, items.length);
}

/** The child's output: `count` length-prefixed WAV files. */
function splitWavs(data: Buffer, count: number): Float32Array[] {
  const out: Float32Array[] = [];
  let at = 0;
  for (let i = 0; i < count; i++) {
    if (at + 4 > data.length) throw new Error(`speech synthesis returned ${i} of ${count} utterances`);
    const length = data.readUInt32LE(at);
    out.push(wavSamples(data.subarray(at + 4, at + 4 + length)));
    at += 4 + length;
  }
  return out;
}

/** The samples of a 16-bit mono WAV file, scaled to [-1, 1]. */
function wavSamples(wav: Buffer): Float32Array {
  if (wav.toString('latin1', 0, 4) !== 'RIFF' || wav.toString('latin1', 8, 12) !== 'WAVE') throw new Error('speech synthesis returned a non-WAV utterance');
  let at = 12;
  while (at + 8 <= wav.length) {
    const id = wav.toString('latin1', at, at + 4);
    const size = wav.readUInt32LE(at + 4);
    if (id === 'data') {
      const end = Math.min(wav.length, at + 8 + size);
      const samples = new Float32Array(Math.floor((end - at - 8) / 2));
      for (let i = 0; i < samples.length; i++) samples[i] = wav.readInt16LE(at + 8 + i * 2) / 32768;
      return samples;
    }
    at += 8 + size + (size % 2);
  }
  throw new Error('speech synthesis returned a WAV without samples');
}
