import { runFfmpeg } from '../ffmpeg.ts';

/** Audio file formats the local engine writes. */
export type AudioFormat = 'mp3' | 'wav' | 'flac';

export const AUDIO_MIME_TYPES: Record<AudioFormat, string> = {
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
  flac: 'audio/flac',
};

const CODEC_ARGS: Record<AudioFormat, string[]> = {
  mp3: ['-c:a', 'libmp3lame', '-b:a', '128k', '-id3v2_version', '3', '-f', 'mp3'],
  wav: ['-c:a', 'pcm_s16le', '-f', 'wav'],
  flac: ['-c:a', 'flac', '-f', 'flac'],
};

export interface EncodeAudioOptions {
  sampleRate: number;
  channels: 1 | 2;
  format: AudioFormat;
  /** Tags written into the file (ID3 for MP3), e.g. `{title}`. */
  metadata?: Record<string, string>;
  signal?: AbortSignal;
}

/**
 * Encodes interleaved samples in [-1, 1] with ffmpeg (a child process). The output is written to
 * a file rather than a pipe so that the MP3 encoder can go back and fill in its Xing/LAME header,
 * which lets players read the exact duration.
 */
export function encodeAudio(samples: Float32Array, opts: EncodeAudioOptions): Promise<Buffer> {
  const metadata = Object.entries(opts.metadata ?? {}).flatMap(([key, value]) => ['-metadata', `${key}=${value}`]);
  const outputFile = `output.${opts.format}`;
  return runFfmpeg(
    [
      '-f', 'f32le', '-ar', String(opts.sampleRate), '-ac', String(opts.channels), '-i', 'pipe:0',
      // bitexact: the same samples always give the same bytes (no encoder version tags).
      ...metadata, '-fflags', '+bitexact', '-flags:a', '+bitexact',
      ...CODEC_ARGS[opts.format], '-y', outputFile,
    ],
    { input: Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength), outputFile, signal: opts.signal },
  );
}

/** Soft limiting: unchanged near zero, approaching ±1 smoothly instead of clipping. */
export function softLimit(samples: Float32Array): Float32Array {
  for (let i = 0; i < samples.length; i++) samples[i] = Math.tanh(samples[i]!);
  return samples;
}
