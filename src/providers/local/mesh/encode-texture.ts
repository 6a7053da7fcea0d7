import sharp from 'sharp';
import { TaskRejectedError } from '../../spec.ts';

export interface EncodedTexture {
  data: Buffer;
  mimeType: string;
  extension: string;
}

/** Formats (convert's texture_format) the local engine writes: through sharp, or BMP and TGA by hand. */
const SHARP_FORMATS: Record<string, { format: 'png' | 'jpeg' | 'webp' | 'tiff'; mimeType: string; extension: string }> = {
  PNG: { format: 'png', mimeType: 'image/png', extension: 'png' },
  JPEG: { format: 'jpeg', mimeType: 'image/jpeg', extension: 'jpg' },
  WEBP: { format: 'webp', mimeType: 'image/webp', extension: 'webp' },
  TIFF: { format: 'tiff', mimeType: 'image/tiff', extension: 'tif' },
};

/** An image re-encoded as `format`, shrunk to fit `maxSide` (never enlarged). */
export async function encodeTexture(image: Buffer, format: string, maxSide: number): Promise<EncodedTexture> {
  const resized = sharp(image).resize(maxSide, maxSide, { fit: 'inside', withoutEnlargement: true });
  const known = SHARP_FORMATS[format];
  if (known) return { data: await resized.toFormat(known.format).toBuffer(), mimeType: known.mimeType, extension: known.extension };
  if (format !== 'BMP' && format !== 'TARGA') throw new TaskRejectedError(`texture_format ${format} is not one the local engine writes (PNG, JPEG, WEBP, TIFF, BMP, TARGA)`);
  const { data, info } = await resized.removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return format === 'BMP' ? { data: bmp(data, info.width, info.height), mimeType: 'image/bmp', extension: 'bmp' } : { data: tga(data, info.width, info.height), mimeType: 'image/x-tga', extension: 'tga' };
}

/** 24-bit BMP: rows bottom-up, BGR, each padded to 4 bytes. */
function bmp(rgb: Buffer, width: number, height: number): Buffer {
  const stride = Math.ceil((width * 3) / 4) * 4;
  const out = Buffer.alloc(54 + stride * height);
  out.write('BM', 0, 'latin1');
  out.writeUInt32LE(out.length, 2);
  out.writeUInt32LE(54, 10);
  out.writeUInt32LE(40, 14);
  out.writeInt32LE(width, 18);
  out.writeInt32LE(height, 22);
  out.writeUInt16LE(1, 26);
  out.writeUInt16LE(24, 28);
  out.writeUInt32LE(stride * height, 34);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const src = (y * width + x) * 3, dst = 54 + (height - 1 - y) * stride + x * 3;
      out[dst] = rgb[src + 2]!;
      out[dst + 1] = rgb[src + 1]!;
      out[dst + 2] = rgb[src]!;
    }
  }
  return out;
}

/** Uncompressed true-colour TGA, top-left origin, BGR. */
function tga(rgb: Buffer, width: number, height: number): Buffer {
  const out = Buffer.alloc(18 + width * height * 3);
  out[2] = 2;
  out.writeUInt16LE(width, 12);
  out.writeUInt16LE(height, 14);
  out[16] = 24;
  out[17] = 0x20;
  for (let i = 0; i < width * height; i++) {
    out[18 + i * 3] = rgb[i * 3 + 2]!;
    out[18 + i * 3 + 1] = rgb[i * 3 + 1]!;
    out[18 + i * 3 + 2] = rgb[i * 3]!;
  }
  return out;
}
