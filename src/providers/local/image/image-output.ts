import { createHash } from 'node:crypto';
import type { Sharp } from 'sharp';
import type { ImageGenerationInput } from '../../../endpoints/images.ts';
import type { GeneratedFile, JobContext, JobOf } from '../../spec.ts';

export type OutputFormat = 'png' | 'jpeg' | 'webp';

const FORMATS: Readonly<Record<NonNullable<ImageRequest['output_format']>, OutputFormat>> = { png: 'png', jpeg: 'jpeg', jpg: 'jpeg', webp: 'webp' };
const EXTENSIONS: Readonly<Record<OutputFormat, string>> = { png: 'png', jpeg: 'jpg', webp: 'webp' };

/** What the local image handlers read of an image task's input. */
export type ImageRequest = Pick<ImageGenerationInput, 'prompt' | 'size' | 'aspect_ratio' | 'resolution' | 'n' | 'seed' | 'output_format'> & {
  /** The deprecated endpoint's sides, used when nothing else names a size. */
  width?: number;
  height?: number;
};

/** The image jobs of the local engine. */
export type ImageJob = JobOf<'images.generations' | 'ai.generations' | 'images.edits'>;

/** The request of an image job: the deprecated endpoint gives its prompt, sides and seed; its other parameters are a workflow's. */
export function imageRequestOf(job: ImageJob): ImageRequest {
  if (job.endpoint !== 'ai.generations') return job.input;
  const { prompt = '', width, height, seed } = job.input;
  return { prompt, width, height, seed };
}

/** `output_format` of the request (png, jpeg or jpg, webp); png by default. */
export function outputFormatOf(request: ImageRequest): OutputFormat {
  return FORMATS[request.output_format ?? 'png'];
}

/**
 * What makes picture `index` of a job differ from others: the model, the prompt and the seed
 * when one is given (so a seed reproduces a picture whatever else changes), else the whole input.
 */
export function pictureKey(job: ImageJob, index: number): string {
  const { seed, prompt } = imageRequestOf(job);
  const basis = seed !== undefined ? { prompt, seed } : job.input;
  return createHash('sha256').update(JSON.stringify([job.model.alias, basis, index])).digest('hex');
}

/** A picture's size in pixels. */
export interface ImageSize {
  width: number;
  height: number;
}

/** Encodes a pipeline as one output file of the job. */
export async function encodeImage(image: Sharp, format: OutputFormat, job: JobContext, index: number, size: ImageSize): Promise<GeneratedFile> {
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
