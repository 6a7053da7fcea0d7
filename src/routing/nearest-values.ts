/**
 * The nearest allowed value to a requested one: numbers, resolutions, aspect ratios and image
 * sizes, read as numbers and compared. Pure functions; translate.ts applies them to a request.
 */
import type { ImageSizeRules } from '../catalog/capabilities.ts';

export type Range = readonly [min: number, max: number];
export type Size = readonly [width: number, height: number];

/** Ratios this close (relative) count as the same: sizes are whole pixels, ratios are not. */
const RATIO_TOLERANCE = 0.03;
/** The largest denominator of a ratio written as W:H (9:21 and 21:9 need 21). */
const MAX_RATIO_TERM = 32;
/** Rounding slack, so that 511.9999999 pixels count as 512. */
const EPSILON = 1e-9;

/** A WxH size, a ratio W:H, a resolution like 720p or 2K, as numbers to compare. */
export const parseSize = (text: string): Size | undefined => /^(\d+)x(\d+)$/.exec(text)?.slice(1).map(Number) as Size | undefined;
export const parseRatio = (text: string): number | undefined => {
  const m = /^(\d+(?:\.\d+)?):(\d+(?:\.\d+)?)$/.exec(text);
  return m ? Number(m[1]) / Number(m[2]) : undefined;
};
export const parseLines = (text: string): number | undefined => {
  const m = /^(\d+)([pk])$/i.exec(text);
  return m ? Number(m[1]) * (m[2]!.toLowerCase() === 'k' ? 1024 : 1) : undefined;
};

export const clamp = (value: number, [min, max]: Range): number => Math.min(max, Math.max(min, value));
export const inRange = (value: number, [min, max]: Range): boolean => value >= min && value <= max;
/** How far apart two ratios are, the same either way round (16:9 is as far from 1:1 as 9:16). */
const ratioDistance = (a: number, b: number) => Math.abs(Math.log(a / b));

export function nearestNumber(value: number, allowed: readonly number[]): number {
  let best = allowed[0]!;
  for (const candidate of allowed) if (Math.abs(candidate - value) < Math.abs(best - value)) best = candidate;
  return best;
}

/** The nearest point of any of `ranges` (value itself when one holds it). */
export function nearestInRanges(value: number, ranges: readonly Range[]): number {
  return nearestNumber(value, ranges.map((range) => clamp(value, range)));
}

/** The allowed value whose place in `order` is nearest to `value`'s; undefined when `value` or every allowed one is not in it. */
export function nearestInOrder(value: string, allowed: readonly string[], order: readonly string[]): string | undefined {
  const rank = order.indexOf(value);
  if (rank < 0) return undefined;
  const ranked = allowed.filter((a) => order.includes(a));
  const distance = (a: string) => Math.abs(order.indexOf(a) - rank);
  return ranked.reduce<string | undefined>((best, a) => (best === undefined || distance(a) < distance(best) ? a : best), undefined);
}

/** The allowed text nearest to `value` by a numeric reading of both; undefined when they do not read as numbers. */
export function nearestBy(value: string, allowed: readonly string[], read: (text: string) => number | undefined, distance = (a: number, b: number) => Math.abs(a - b)): string | undefined {
  const v = read(value);
  if (v === undefined) return undefined;
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of allowed) {
    const c = read(candidate);
    if (c === undefined) continue;
    const d = distance(v, c);
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

/** The listed size nearest in shape and area (both compared on a log scale). */
export function nearestListedSize([width, height]: Size, allowed: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of allowed) {
    const c = parseSize(candidate);
    if (!c) continue;
    const d = ratioDistance(width / height, c[0] / c[1]) + Math.abs(Math.log((width * height) / (c[0] * c[1])));
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

/** A ratio written as W:H in the smallest terms that come nearest to it. */
export function ratioText(ratio: number): string {
  let best = '1:1';
  let bestDistance = Number.POSITIVE_INFINITY;
  for (let h = 1; h <= MAX_RATIO_TERM; h++) {
    const w = Math.max(1, Math.round(ratio * h));
    const d = ratioDistance(w / h, ratio);
    if (d < bestDistance - EPSILON) {
      best = `${w}:${h}`;
      bestDistance = d;
    }
  }
  return best;
}

/** The allowed aspect ratio (width / height) nearest to `ratio`: `ratio` itself when allowed. */
export function nearestRatio(ratio: number, rule: ImageSizeRules['ratios']): number {
  if (!rule) return ratio;
  if ('range' in rule) return inRange(ratio, rule.range) ? ratio : clamp(ratio, rule.range);
  const values = rule.list.map(parseRatio).filter((v): v is number => v !== undefined);
  if (values.length === 0 || values.some((v) => ratioDistance(v, ratio) <= Math.log1p(RATIO_TOLERANCE))) return ratio;
  return values.reduce((best, v) => (ratioDistance(v, ratio) < ratioDistance(best, ratio) ? v : best));
}

/** What a ratio rule allows, as a warning says it. */
export function describeRatios(rule: NonNullable<ImageSizeRules['ratios']>): string {
  return 'list' in rule ? `aspect ratios ${rule.list.join(', ')}` : `aspect ratios of ${rule.range[0]} to ${rule.range[1]}`;
}

/**
 * The aspect ratio text allowed nearest to `text`: a listed one, or the ratio brought into the
 * range; `text` itself when allowed or not a ratio (adaptive, keep_ratio).
 */
export function nearestRatioText(text: string, rule: ImageSizeRules['ratios']): string {
  const ratio = parseRatio(text);
  if (ratio === undefined || !rule) return text;
  if ('list' in rule) return rule.list.includes(text) ? text : nearestBy(text, rule.list, parseRatio, ratioDistance) ?? text;
  const allowed = nearestRatio(ratio, rule);
  return allowed === ratio ? text : ratioText(allowed);
}

/**
 * The allowed size nearest to `size`: a listed size when the model takes no custom size; else
 * its ratio kept if allowed (the nearest allowed ratio if not, at the same area), scaled into
 * the pixel-count range, then into the side range keeping the ratio (each side clamped when no
 * scale fits both), sides rounded to the model's multiple.
 */
export function nearestImageSize(size: Size, rules: ImageSizeRules): Size {
  if (rules.listed) return parseSize(nearestListedSize(size, rules.listed) ?? '') ?? size;
  let [w, h] = size;
  const ratio = nearestRatio(w / h, rules.ratios);
  if (ratio !== w / h) [w, h] = [Math.sqrt(w * h * ratio), Math.sqrt((w * h) / ratio)];
  if (rules.pixels) {
    const scale = Math.sqrt(clamp(w * h, rules.pixels) / (w * h));
    [w, h] = [w * scale, h * scale];
  }
  if (rules.sides) {
    const shrink = rules.sides[1] / Math.max(w, h);
    const grow = rules.sides[0] / Math.min(w, h);
    if (grow > shrink) [w, h] = [clamp(w, rules.sides), clamp(h, rules.sides)];
    else if (shrink < 1) [w, h] = [w * shrink, h * shrink];
    else if (grow > 1) [w, h] = [w * grow, h * grow];
  }
  const step = rules.multiple ?? 1;
  const [low, high] = rules.sides ?? [step, Number.POSITIVE_INFINITY];
  const sideRange: Range = [Math.max(step, Math.ceil(low / step - EPSILON) * step), Math.floor(high / step + EPSILON) * step];
  const side = (n: number, round: (x: number) => number) => clamp(round(n / step) * step, sideRange);
  let fitted: Size = [side(w, Math.round), side(h, Math.round)];
  const area = fitted[0] * fitted[1];
  if (rules.pixels && area > rules.pixels[1]) fitted = [side(w, (x) => Math.floor(x + EPSILON)), side(h, (x) => Math.floor(x + EPSILON))];
  else if (rules.pixels && area < rules.pixels[0]) fitted = [side(w, (x) => Math.ceil(x - EPSILON)), side(h, (x) => Math.ceil(x - EPSILON))];
  return fitted;
}
