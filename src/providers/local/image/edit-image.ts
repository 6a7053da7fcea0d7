import sharp, { type Metadata } from 'sharp';
import { TaskFailedError, type GenerationOutput, type RunContext } from '../../spec.ts';
import type { LocalHandler } from '../local-handler.ts';
import { drawPicture } from './draw-picture.ts';
import { encodeImage, outputFormatOf, pictureKey, type ImageSize } from './image-output.ts';
import { checkDrawable, requestedSize } from './image-size.ts';

const EDITABLE_FORMATS = new Set(['png', 'jpeg', 'webp']);
/** How much of the prompt's picture goes into the edited pixels. */
const PICTURE_SHARE = 0.5;
/** How much of the further images (their mean) goes into the edited pixels. */
const REFERENCE_SHARE = 0.5;

interface DecodedInput {
  data: Buffer;
  /** After EXIF orientation. */
  size: ImageSize;
  hasAlpha: boolean;
}

/** Reads and checks one input image; what is not a png, jpeg or webp image fails the task. */
async function readImage(ctx: RunContext, ref: string, what: string): Promise<DecodedInput> {
  const { data } = await ctx.readInput(ref);
  let meta: Metadata;
  try {
    meta = await sharp(data).metadata();
  } catch (err) {
    throw new TaskFailedError(`${what} is not a readable image`, (err as Error).message);
  }
  if (!meta.format || !EDITABLE_FORMATS.has(meta.format)) throw new TaskFailedError(`${what} is ${meta.format ?? 'of an unknown format'}; edits take png, jpeg or webp images`);
  return { data, size: { width: meta.autoOrient.width, height: meta.autoOrient.height }, hasAlpha: meta.hasAlpha };
}

/**
 * 8-bit sRGB pixels of an input at `size` (cover crop when its size differs; an input that
 * already has that size is not resampled, so its pixels stay exact).
 */
async function pixelsOf(input: DecodedInput, size: ImageSize, channels: 3 | 4, what: string, fit: 'cover' | 'fill' = 'cover'): Promise<Buffer> {
  let image = sharp(input.data).autoOrient();
  if (input.size.width !== size.width || input.size.height !== size.height) image = image.resize(size.width, size.height, { fit });
  image = image.toColourspace('srgb');
  image = channels === 4 ? image.ensureAlpha() : image.removeAlpha();
  try {
    return await image.raw({ depth: 'uchar' }).toBuffer();
  } catch (err) {
    throw new TaskFailedError(`${what} could not be decoded`, (err as Error).message);
  }
}

/**
 * How much each pixel is edited, 0 (kept) to 255 (fully edited). OpenAI's convention: the
 * transparent areas of the mask are where the edit happens (weight = 255 - alpha). A mask
 * without any transparency (no alpha channel, or one that is opaque everywhere) says nothing
 * that way, so its luminance is read instead, as inpainting masks are drawn: white is edited,
 * black is kept.
 */
async function maskWeights(mask: DecodedInput, size: ImageSize): Promise<Uint8Array> {
  const rgba = await pixelsOf(mask, size, 4, 'mask', 'fill');
  const weights = new Uint8Array(size.width * size.height);
  let transparent = false;
  for (let p = 0; p < weights.length && !transparent; p++) transparent = rgba[p * 4 + 3]! < 255;
  for (let p = 0; p < weights.length; p++) {
    const at = p * 4;
    weights[p] = transparent ? 255 - rgba[at + 3]! : (rgba[at]! * 54 + rgba[at + 1]! * 183 + rgba[at + 2]! * 19) >> 8;
  }
  return weights;
}

/** The running mean of the further images at `size` (RGB), read one at a time. */
async function referenceMean(ctx: RunContext, refs: string[], size: ImageSize): Promise<Buffer | undefined> {
  let mean: Buffer | undefined;
  for (let k = 0; k < refs.length; k++) {
    const what = `image[${k + 1}]`;
    const pixels = await pixelsOf(await readImage(ctx, refs[k]!, what), size, 3, what);
    ctx.signal.throwIfAborted();
    if (!mean) {
      mean = pixels;
      continue;
    }
    for (let i = 0; i < mean.length; i++) mean[i] = Math.round(mean[i]! + (pixels[i]! - mean[i]!) / (k + 1));
  }
  return mean;
}

/**
 * The edited pixels: inside the edit (weight) the base moves toward the prompt's picture and
 * the further images; where the weight is 0 the base pixel is copied unchanged. Alpha stays
 * the base's.
 */
function blend(base: Buffer, channels: 3 | 4, picture: Buffer, references: Buffer | undefined, weights: Uint8Array | undefined): Buffer {
  const out = Buffer.alloc(base.length);
  const pixels = base.length / channels;
  for (let p = 0; p < pixels; p++) {
    const weight = weights ? weights[p]! / 255 : 1;
    for (let c = 0; c < 3; c++) {
      const at = p * channels + c;
      const from = base[at]!;
      let edited = from + (picture[p * 3 + c]! - from) * PICTURE_SHARE;
      if (references) edited += (references[p * 3 + c]! - edited) * REFERENCE_SHARE;
      out[at] = Math.round(from + (edited - from) * weight);
    }
    if (channels === 4) out[p * 4 + 3] = base[p * 4 + 3]!;
  }
  return out;
}

/**
 * Image edit: the first image is the base (output at its size unless size, aspect_ratio or
 * resolution say otherwise); the edit tints it toward a picture drawn from the prompt and
 * the seed and blends the further images in, inside the mask only when one is given and
 * everywhere otherwise. Deterministic for the same inputs, prompt and seed.
 */
export const editImage: LocalHandler<'images.edits'> = {
  check(job): void {
    // Sizes derived from the base are always drawable; an explicit size is checked here.
    checkDrawable(requestedSize(job.input, { width: 1, height: 1 }));
  },

  async run(job, ctx: RunContext): Promise<GenerationOutput> {
    const [baseRef, ...referenceRefs] = job.input.image;
    const base = await readImage(ctx, baseRef!, 'image[0]');
    const size = requestedSize(job.input, base.size);
    const channels = base.hasAlpha ? 4 : 3;
    const basePixels = await pixelsOf(base, size, channels, 'image[0]');
    const weights = job.input.mask !== undefined ? await maskWeights(await readImage(ctx, job.input.mask, 'mask'), size) : undefined;
    const references = await referenceMean(ctx, referenceRefs, size);
    const format = outputFormatOf(job.input);
    const files = [];
    for (let i = 0; i < (job.input.n ?? 1); i++) {
      ctx.signal.throwIfAborted();
      const picture = await drawPicture(job.input.prompt, pictureKey(job, i), size).raw({ depth: 'uchar' }).toBuffer();
      let edited = sharp(blend(basePixels, channels, picture, references, weights), { raw: { width: size.width, height: size.height, channels } });
      if (channels === 4 && format === 'jpeg') edited = edited.flatten({ background: '#ffffff' });
      files.push(await encodeImage(edited, format, job, i, size));
    }
    return { files };
  },
};
