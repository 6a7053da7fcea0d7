import { parseBuffer, type IAudioMetadata } from 'music-metadata';
import { runFfmpeg } from '../../src/providers/local/ffmpeg.ts';

/** Sample rate of decodePcm's output. */
export const PCM_RATE = 22050;

/** Tags and format of an audio file, read by music-metadata. */
export function audioMetadata(data: Buffer, mimeType = 'audio/mpeg'): Promise<IAudioMetadata> {
  return parseBuffer(data, { mimeType }, { duration: true });
}

/** Decodes an audio file to mono samples in [-1, 1] at PCM_RATE, through an optional ffmpeg filter. */
export async function decodePcm(data: Buffer, filter?: string): Promise<Float32Array> {
  const pcm = await runFfmpeg(['-i', 'pipe:0', ...(filter ? ['-af', filter] : []), '-f', 's16le', '-ac', '1', '-ar', String(PCM_RATE), 'pipe:1'], { input: data });
  const samples = new Float32Array(pcm.length / 2);
  for (let i = 0; i < samples.length; i++) samples[i] = pcm.readInt16LE(i * 2) / 32768;
  return samples;
}

/** Root mean square of the samples, or of the difference of two equally long signals. */
export function rms(a: Float32Array, b?: Float32Array): number {
  const n = b ? Math.min(a.length, b.length) : a.length;
  let sum = 0;
  for (let i = 0; i < n; i++) sum += (a[i]! - (b ? b[i]! : 0)) ** 2;
  return Math.sqrt(sum / Math.max(1, n));
}

/** Downloads a generated file. */
export async function download(url: string): Promise<{ data: Buffer; contentType: string | null }> {
  const res = await fetch(url);
  if (res.status !== 200) throw new Error(`GET ${url} answered ${res.status}`);
  return { data: Buffer.from(await res.arrayBuffer()), contentType: res.headers.get('content-type') };
}
