import { createHash } from 'node:crypto';
import type { Sharp } from 'sharp';
import { TaskRejectedError, type GeneratedFile, type GenerationJob } from '../../spec.ts';
import { checkDrawable, type ImageSize } from './image-size.ts';

export type OutputFormat = 'png' | 'jpeg' | 'webp';

const FORMATS: Readonly<Record<string, OutputFormat>> = { png: 'png', jpeg: 'jpeg', jpg: 'jpeg', webp: 'webp' };
const EXTENSIONS: Readonly<Record<OutputFormat, string>> = { png: 'png', jpeg: 'jpg', webp: 'webp' };
const MAX_IMAGES = 10;

/** `output_format` of the request (png, jpeg or jpg, webp); png by default. */
export function outputFormatOf(input: Record<string, unknown>): OutputFormat {
  const value = input.output_format ?? 'png';
  const format = typeof value === 'string' ? FORMATS[value.toLowerCase()] : undefined;
  if (!format) throw new TaskRejectedError(`output_format must be png, jpeg or webp, got ${JSON.stringify(value)}`);
  return format;
}

/** `n` of the request: 1 to 10 images, 1 by default. */
export function imageCountOf(input: Record<string, unknown>): number {
  const n = input.n ?? 1;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > MAX_IMAGES) throw new TaskRejectedError(`n must be an integer from 1 to ${MAX_IMAGES}`);
  return n;
}

/** The checks every image handler makes before it starts: count, format and (when known) size. */
export function checkImageOutput(input: Record<string, unknown>, size?: ImageSize): void {
  imageCountOf(input);
  outputFormatOf(input);
  if (size) checkDrawable(size);
}

/**
 * What makes picture `index` of a job differ from others: the model, the prompt and the seed
 * when one is given (so a seed reproduces a picture whatever else changes), else the whole input.
 */
export function pictureKey(job: GenerationJob, index: number): string {
  const { seed, prompt } = job.input;
  const basis = seed !== undefined ? { prompt, seed } : job.input;
  return createHash('sha256').update(JSON.stringify([job.model.alias, basis, index])).digest('hex');
}

/** Encodes a pipeline as one output file of the job. */
export async function encodeImage(image: Sharp, format: OutputFormat, job: GenerationJob, index: number, size: ImageSize): Promise<GeneratedFile> {
  const encoded = format === 'png'
    // Large pictures compress less hard: an 8K PNG at the default level takes several seconds.
    ? image.png({ compressionLevel: size.width * size.height > 4_194_304 ? 2 : 6 })
    : format === 'jpeg' ? image.jpeg({ quality: 90 }) : image.webp({ quality: 90 });
  return {
    type: 'image',
    data: await encoded.toBuffer(),
    fileName: `${job.taskId}-${index}.${EXTENSIONS[format]}`,
    mimeType: `image/${format}`,
    mediaSize: { type: 'image', ...size, status: 1 },
  };
}
