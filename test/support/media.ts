import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import ffprobeInstaller from '@ffprobe-installer/ffprobe';
import { runFfmpeg } from '../../src/providers/local/ffmpeg.ts';
import type { TestServer } from './server.ts';

const execFileAsync = promisify(execFile);

export interface ProbedStream {
  codec_type: string;
  codec_name: string;
  width?: number;
  height?: number;
  pix_fmt?: string;
  r_frame_rate?: string;
  duration?: string;
}

export interface Probed {
  format: { format_name: string; duration: string };
  streams: ProbedStream[];
}

/** What ffprobe (a separate program from the one the server runs) says of a media file. */
export async function ffprobe(data: Buffer): Promise<Probed> {
  const dir = await mkdtemp(join(tmpdir(), 'gengate-probe-'));
  try {
    const file = join(dir, 'media');
    await writeFile(file, data);
    const { stdout } = await execFileAsync(ffprobeInstaller.path, ['-v', 'error', '-of', 'json', '-show_format', '-show_streams', file]);
    return JSON.parse(stdout) as Probed;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export function videoStream(probed: Probed): ProbedStream | undefined {
  return probed.streams.find((s) => s.codec_type === 'video');
}

export function audioStream(probed: Probed): ProbedStream | undefined {
  return probed.streams.find((s) => s.codec_type === 'audio');
}

export type Rgb = [number, number, number];

/** The mean colour of the middle of every frame (the centre half, away from corner marks), in order. */
export async function frameColours(video: Buffer): Promise<Rgb[]> {
  const raw = await runFfmpeg(['-i', 'video', '-vf', 'crop=iw/2:ih/2,scale=1:1:flags=area', '-f', 'rawvideo', '-pix_fmt', 'rgb24', 'pipe:1'], { files: { video } });
  const colours: Rgb[] = [];
  for (let i = 0; i + 2 < raw.length; i += 3) colours.push([raw[i]!, raw[i + 1]!, raw[i + 2]!]);
  return colours;
}

/** True when two colours differ by at most `tolerance` in every channel (H.264 shifts colours a little). */
export function near(actual: Rgb, expected: Rgb, tolerance = 24): boolean {
  return actual.every((v, i) => Math.abs(v - expected[i]!) <= tolerance);
}

/** A mono 16-bit PCM WAV of a sine tone. */
export function wav(seconds: number, rate = 16_000, hz = 440): Buffer {
  const samples = Math.round(seconds * rate);
  const data = Buffer.alloc(samples * 2);
  for (let i = 0; i < samples; i++) data.writeInt16LE(Math.round(Math.sin((2 * Math.PI * hz * i) / rate) * 12_000), i * 2);
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'latin1');
  header.writeUInt32LE(36 + data.length, 4);
  header.write('WAVE', 8, 'latin1');
  header.write('fmt ', 12, 'latin1');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(rate, 24);
  header.writeUInt32LE(rate * 2, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36, 'latin1');
  header.writeUInt32LE(data.length, 40);
  return Buffer.concat([header, data]);
}

/** An MP4 showing each colour for `secondsEach` at `fps`, optionally with a tone. */
export async function colourVideo(colours: string[], opts: { secondsEach: number; width: number; height: number; fps: number; audio?: boolean }): Promise<Buffer> {
  const inputs = colours.flatMap((c) => ['-f', 'lavfi', '-i', `color=c=${c}:s=${opts.width}x${opts.height}:r=${opts.fps}:d=${opts.secondsEach}`]);
  const concat = `${colours.map((_, i) => `[${i}:v]`).join('')}concat=n=${colours.length}:v=1:a=0,format=yuv420p[v]`;
  const total = opts.secondsEach * colours.length;
  const audio = opts.audio ? ['-f', 'lavfi', '-i', `sine=frequency=300:duration=${total}`] : [];
  const maps = opts.audio ? ['-map', '[v]', '-map', `${colours.length}:a`, '-c:a', 'aac'] : ['-map', '[v]'];
  return runFfmpeg(['-y', ...inputs, ...audio, '-filter_complex', concat, ...maps, '-c:v', 'libx264', '-preset', 'ultrafast', '-t', String(total), 'out.mp4'], { outputFile: 'out.mp4' });
}

/** Uploads bytes through /v1/files/upload and answers the file's URL. */
export async function upload(srv: TestServer, token: string, data: Buffer, fileName: string, type: string): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(data)], { type }), fileName);
  const res = await srv.fetch('/v1/files/upload', { method: 'POST', token, body: form });
  const body = (await res.json()) as { data: { url?: string } };
  if (res.status !== 200 || !body.data.url) throw new Error(`upload failed: ${res.status} ${JSON.stringify(body)}`);
  return body.data.url;
}

/** The bytes behind a URL the server returned. */
export async function download(url: string): Promise<Buffer> {
  const res = await fetch(url);
  if (res.status !== 200) throw new Error(`GET ${url} answered ${res.status}`);
  return Buffer.from(await res.arrayBuffer());
}

/** Fails unless `actual` is within `tolerance` of `expected`, naming what was measured. */
export function assertNear(actual: number, expected: number, tolerance: number, what: string): void {
  assert.ok(Math.abs(actual - expected) <= tolerance, `${what}: ${actual} is not within ${tolerance} of ${expected}`);
}
