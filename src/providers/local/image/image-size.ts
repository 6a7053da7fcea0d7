import { TaskRejectedError } from '../../spec.ts';
import type { ImageRequest, ImageSize } from './image-output.ts';

/** The largest side the gateway draws: the long side of the 8K resolution. */
export const MAX_IMAGE_SIDE = 8192;

/** `resolution` values and the long side each gives (1K, 2K, 4K, 8K). */
const RESOLUTION_LONG_SIDE: Readonly<Record<NonNullable<ImageRequest['resolution']>, number>> = { '1K': 1024, '2K': 2048, '4K': 4096, '8K': 8192 };

/** Sides computed from aspect_ratio/resolution are multiples of 16, as most image models expect. */
const SIDE_MULTIPLE = 16;

const DEFAULT_SIDE = 1024;

/** Two positive integers joined by `separator`, as the endpoint's patterns of size (WxH) and aspect_ratio (W:H) guarantee. */
function pairOf(value: string, separator: string): [number, number] {
  const [first, second] = value.split(separator).map(Number);
  return [first!, second!];
}

const ratioOf = ([width, height]: [number, number]) => width / height;

function roundSide(side: number): number {
  return Math.min(MAX_IMAGE_SIDE, Math.max(SIDE_MULTIPLE, Math.round(side / SIDE_MULTIPLE) * SIDE_MULTIPLE));
}

/** Sides for a ratio with the given long side, both rounded to SIDE_MULTIPLE. */
function fromRatio(ratio: number, longSide: number): ImageSize {
  return ratio >= 1
    ? { width: roundSide(longSide), height: roundSide(longSide / ratio) }
    : { width: roundSide(longSide * ratio), height: roundSide(longSide) };
}

/**
 * The output size a request asks for. An explicit `size` wins as given. Otherwise
 * `aspect_ratio` and/or `resolution`: the long side from the resolution (else the base
 * image's, else 1024), the ratio from aspect_ratio (else the base image's, else 1:1). Then the
 * legacy `width`/`height`, then the base image's own size (capped at MAX_IMAGE_SIDE), then
 * 1024x1024.
 */
export function requestedSize(request: ImageRequest, base?: ImageSize): ImageSize {
  if (request.size !== undefined && request.size !== 'auto') {
    const [width, height] = pairOf(request.size, 'x');
    return { width, height };
  }
  const { resolution } = request;
  const ratio = request.aspect_ratio !== undefined ? ratioOf(pairOf(request.aspect_ratio, ':')) : undefined;
  if (ratio !== undefined || resolution !== undefined) {
    const longSide = resolution !== undefined ? RESOLUTION_LONG_SIDE[resolution] : base ? Math.max(base.width, base.height) : DEFAULT_SIDE;
    return fromRatio(ratio ?? (base ? base.width / base.height : 1), longSide);
  }
  if (request.width !== undefined && request.height !== undefined) return { width: request.width, height: request.height };
  if (base) {
    const scale = Math.min(1, MAX_IMAGE_SIDE / Math.max(base.width, base.height));
    return { width: Math.max(1, Math.round(base.width * scale)), height: Math.max(1, Math.round(base.height * scale)) };
  }
  return { width: DEFAULT_SIDE, height: DEFAULT_SIDE };
}

/** Longest side of a draft (the preview shown while a run goes on). */
const DRAFT_SIDE = 64;

/** The size of a draft of a picture of `size`: the same shape, its longest side DRAFT_SIDE at most. */
export function draftSize({ width, height }: ImageSize): ImageSize {
  const scale = Math.min(1, DRAFT_SIDE / Math.max(width, height));
  return { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)) };
}

/** Refuses sizes the engine cannot draw (zero or beyond MAX_IMAGE_SIDE). */
export function checkDrawable({ width, height }: ImageSize): void {
  if (width < 1 || height < 1 || width > MAX_IMAGE_SIDE || height > MAX_IMAGE_SIDE) {
    throw new TaskRejectedError(`the local engine draws from 1x1 to ${MAX_IMAGE_SIDE}x${MAX_IMAGE_SIDE}, got ${width}x${height}`);
  }
}
