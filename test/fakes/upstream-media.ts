import { Document, NodeIO } from '@gltf-transform/core';
import sharp from 'sharp';
import { runFfmpeg } from '../../src/providers/local/ffmpeg.ts';

/** Real media files for fake upstreams to hand out; those made with ffmpeg are made once per test process. */
const made = new Map<string, Promise<Buffer>>();

function once(key: string, make: () => Promise<Buffer>): Promise<Buffer> {
  let file = made.get(key);
  if (!file) {
    file = make();
    made.set(key, file);
  }
  return file;
}

/** A mono MP3 tone of `seconds` at `hz`. */
export function sampleMp3(seconds: number, hz = 440): Promise<Buffer> {
  return once(`mp3:${seconds}:${hz}`, () => runFfmpeg(['-f', 'lavfi', '-i', `sine=frequency=${hz}:duration=${seconds}`, '-ac', '1', '-c:a', 'libmp3lame', '-b:a', '64k', '-f', 'mp3', 'pipe:1']));
}

/** An H.264 MP4 test pattern, with an AAC tone when `audio`. */
export function sampleMp4(opts: { width: number; height: number; seconds: number; audio: boolean }): Promise<Buffer> {
  const { width, height, seconds, audio } = opts;
  return once(`mp4:${width}x${height}:${seconds}:${audio}`, () => runFfmpeg([
    '-f', 'lavfi', '-i', `testsrc=size=${width}x${height}:rate=24:duration=${seconds}`,
    ...(audio ? ['-f', 'lavfi', '-i', `sine=frequency=330:duration=${seconds}`, '-c:a', 'aac', '-shortest'] : []),
    '-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-movflags', '+faststart', 'out.mp4',
  ], { outputFile: 'out.mp4' }));
}

/** A small GLB: one triangle mesh node per part name. */
export async function sampleGlb(parts: string[] = ['body']): Promise<Buffer> {
  const doc = new Document();
  const buffer = doc.createBuffer();
  const scene = doc.createScene('scene');
  for (const [i, name] of parts.entries()) {
    const position = doc.createAccessor().setType('VEC3').setBuffer(buffer).setArray(new Float32Array([i, 0, 0, i + 1, 0, 0, i, 1, 0]));
    const mesh = doc.createMesh(name).addPrimitive(doc.createPrimitive().setAttribute('POSITION', position));
    scene.addChild(doc.createNode(name).setMesh(mesh));
  }
  return Buffer.from(await new NodeIO().writeBinary(doc));
}

/** A plain square picture (a preview, a cover) in the given format. */
export function samplePicture(format: 'webp' | 'png' = 'webp', opts: { size?: number; colour?: string } = {}): Promise<Buffer> {
  const size = opts.size ?? 8;
  return sharp({ create: { width: size, height: size, channels: 3, background: opts.colour ?? '#c87828' } }).toFormat(format).toBuffer();
}
