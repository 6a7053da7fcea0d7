// Writes the small media files the documentation's examples upload, into docs/samples/:
// photo.png (a picture to edit or turn into a 3D model), mask.png (transparent where an edit
// applies), style.jpg (a second reference picture), speech.mp3 (a spoken sentence) and clip.mp4
// (a short video with that speech as its sound). Run with `npm run docs:samples`; the output is
// the same on every run, so the committed files only change when this script does.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import ffmpegInstaller from '@ffmpeg-installer/ffmpeg';
import sharp from 'sharp';
import { MESPEAK_SAMPLE_RATE, speakUtterances } from '../src/providers/local/audio/mespeak.ts';

const OUT = 'docs/samples';
const SIDE = 256;
/** The transparent (edited) square of the mask. */
const HOLE = { left: 80, top: 64, size: 96 };
const SENTENCE = 'Hello from Gengate. This is a short sample of speech.';

/** A landscape: sky, sun, two hills; drawn, so it is the same on every run. */
const PHOTO_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="${SIDE}" height="${SIDE}">
  <defs><linearGradient id="sky" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="#5aa0e6"/><stop offset="1" stop-color="#cfe6fa"/></linearGradient></defs>
  <rect width="${SIDE}" height="${SIDE}" fill="url(#sky)"/>
  <circle cx="190" cy="60" r="28" fill="#ffd34d"/>
  <ellipse cx="70" cy="250" rx="150" ry="90" fill="#3f8f4a"/>
  <ellipse cx="210" cy="260" rx="130" ry="70" fill="#2f7a3c"/>
  <rect x="112" y="150" width="40" height="36" fill="#b5523b"/><polygon points="106,152 132,128 158,152" fill="#7a2e22"/>
</svg>`;

/** A pattern of stripes, for a second reference picture. */
const STYLE_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="${SIDE}" height="${SIDE}">
  ${Array.from({ length: 8 }, (_, i) => `<rect x="${i * 32}" width="32" height="${SIDE}" fill="hsl(${i * 45},70%,55%)"/>`).join('')}
  <circle cx="128" cy="128" r="70" fill="none" stroke="#222" stroke-width="10"/>
</svg>`;

async function mask(): Promise<Buffer> {
  const rgba = Buffer.alloc(SIDE * SIDE * 4, 255);
  for (let y = HOLE.top; y < HOLE.top + HOLE.size; y++) {
    for (let x = HOLE.left; x < HOLE.left + HOLE.size; x++) rgba[(y * SIDE + x) * 4 + 3] = 0;
  }
  return sharp(rgba, { raw: { width: SIDE, height: SIDE, channels: 4 } }).png().toBuffer();
}

const ffmpeg = (args: string[]) => execFileSync(ffmpegInstaller.path, ['-hide_banner', '-loglevel', 'error', '-y', ...args]);

fs.mkdirSync(OUT, { recursive: true });
await sharp(Buffer.from(PHOTO_SVG)).png().toFile(path.join(OUT, 'photo.png'));
fs.writeFileSync(path.join(OUT, 'mask.png'), await mask());
await sharp(Buffer.from(STYLE_SVG)).jpeg({ quality: 80 }).toFile(path.join(OUT, 'style.jpg'));

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'gengate-samples-'));
try {
  const [samples] = await speakUtterances('en/en', [{ text: SENTENCE, pitch: 50, speed: 165, amplitude: 100 }]);
  const raw = path.join(work, 'speech.f32');
  fs.writeFileSync(raw, Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength));
  const speech = path.join(OUT, 'speech.mp3');
  // -map_metadata -1 and -bitexact keep the encoder's version out of the file, so runs agree.
  ffmpeg(['-f', 'f32le', '-ar', String(MESPEAK_SAMPLE_RATE), '-ac', '1', '-i', raw, '-map_metadata', '-1', '-bitexact', '-c:a', 'libmp3lame', '-b:a', '48k', speech]);
  ffmpeg(['-loop', '1', '-framerate', '12', '-i', path.join(OUT, 'photo.png'), '-i', speech, '-vf', "zoompan=z='1+0.002*on':d=1:s=256x256:fps=12,format=yuv420p",
    '-t', '3', '-shortest', '-map_metadata', '-1', '-bitexact', '-c:v', 'libx264', '-preset', 'veryfast', '-crf', '30', '-c:a', 'aac', '-b:a', '48k', '-movflags', '+faststart', path.join(OUT, 'clip.mp4')]);
} finally {
  fs.rmSync(work, { recursive: true, force: true });
}
for (const file of fs.readdirSync(OUT).sort()) process.stdout.write(`${OUT}/${file}: ${fs.statSync(path.join(OUT, file)).size} bytes\n`);
