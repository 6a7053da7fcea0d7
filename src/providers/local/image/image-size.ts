import { TaskRejectedError } from '../../spec.ts';

/** The largest side the gateway draws: the long side of the 8K resolution. */
export const MAX_IMAGE_SIDE = 8192;

/** `resolution` values and the long side each gives (1K, 2K, 4K, 8K). */
const RESOLUTION_LONG_SIDE: Readonly<Record<string, number>> = { '1K': 1024, '2K': 2048, '4K': 4096, '8K': 8192 };

/** Sides computed from aspect_ratio/resolution are multiples of 16, as most image models expect. */
const SIDE_MULTIPLE = 16;

const DEFAULT_SIDE = 1024;

export interface ImageSize {
  width: number;
  height: number;
}

/** `<w>x<h>` (`*` tolerated), or undefined when absent or `auto`; throws TaskRejectedError when malformed. */
function parseSize(value: unknown): ImageSize | undefined {
  if (value === undefined || value === null || value === '' || value === 'auto') return undefined;
  const match = typeof value === 'string' ? /^(\d+)[x*](\d+)$/i.exec(value) : null;
  if (!match) throw new TaskRejectedError(`size must look like 1024x1024, got ${JSON.stringify(value)}`);
  return { width: Number(match[1]), height: Number(match[2]) };
}

/** `W:H` as a ratio (width / height), or undefined when absent; throws TaskRejectedError when malformed. */
function parseAspectRatio(value: unknown): number | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const match = typeof value === 'string' ? /^(\d+):(\d+)$/.exec(value) : null;
  const w = Number(match?.[1]);
  const h = Number(match?.[2]);
  if (!match || w <= 0 || h <= 0) throw new TaskRejectedError(`aspect_ratio must look like 16:9, got ${JSON.stringify(value)}`);
  return w / h;
}

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
export function requestedSize(input: Record<string, unknown>, base?: ImageSize): ImageSize {
  const explicit = parseSize(input.size);
  if (explicit) return explicit;
  const ratio = parseAspectRatio(input.aspect_ratio);
  const resolution = input.resolution;
  if (resolution !== undefined && (typeof resolution !== 'string' || !(resolution in RESOLUTION_LONG_SIDE))) {
    throw new TaskRejectedError(`resolution must be one of ${Object.keys(RESOLUTION_LONG_SIDE).join(', ')}, got ${JSON.stringify(resolution)}`);
  }
  if (ratio !== undefined || resolution !== undefined) {
    const longSide = resolution !== undefined ? RESOLUTION_LONG_SIDE[resolution]! : base ? Math.max(base.width, base.height) : DEFAULT_SIDE;
    return fromRatio(ratio ?? (base ? base.width / base.height : 1), longSide);
  }
  const w = Number(input.width);
  const h = Number(input.height);
  if (Number.isInteger(w) && Number.isInteger(h) && w > 0 && h > 0) return { width: w, height: h };
  if (base) {
    const scale = Math.min(1, MAX_IMAGE_SIDE / Math.max(base.width, base.height));
    return { width: Math.max(1, Math.round(base.width * scale)), height: Math.max(1, Math.round(base.height * scale)) };
  }
  return { width: DEFAULT_SIDE, height: DEFAULT_SIDE };
}

/** Refuses sizes the engine cannot draw (zero or beyond MAX_IMAGE_SIDE). */
export function checkDrawable({ width, height }: ImageSize): void {
  if (width < 1 || height < 1 || width > MAX_IMAGE_SIDE || height > MAX_IMAGE_SIDE) {
    throw new TaskRejectedError(`the local engine draws from 1x1 to ${MAX_IMAGE_SIDE}x${MAX_IMAGE_SIDE}, got ${width}x${height}`);
  }
}
