/**
 * An image request (generations, edits, the deprecated ai.generations) fitted to a fallback
 * model's image capability and its adapter's limits: size, width and height, aspect ratio,
 * resolution, image count, quality and mask.
 */
import { imageInputsLimitOf, imageOutputsLimitOf, imageSizeRulesOf, type ImageSizeRules } from '../catalog/capabilities.ts';
import type { ImageCapabilityFields } from '../catalog/schema.ts';
import { listOf, type InputChanges, type InputFitter } from './input-changes.ts';
import { describeRatios, nearestBy, nearestImageSize, nearestRatioText, parseLines, parseSize, type Range, type Size } from './nearest-values.ts';

/** The smallest of the limits that are set. */
function lowest(...limits: (number | undefined)[]): number | undefined {
  const set = limits.filter((n): n is number => n !== undefined);
  return set.length ? Math.min(...set) : undefined;
}

function pixelRange([min, max]: Range, unit: string): string {
  if (min <= 1) return `${unit} of at most ${max} pixels`;
  return Number.isFinite(max) ? `${unit} of ${min} to ${max} pixels` : `${unit} of at least ${min} pixels`;
}

/** What the size rules allow, as a warning says it. */
function describeSizeRules(rules: ImageSizeRules, capability: ImageCapabilityFields | undefined): string {
  if (rules.listed) return listOf(capability?.output_resolutions ?? rules.listed);
  const parts: string[] = [];
  if (rules.ratios) parts.push(describeRatios(rules.ratios));
  if (rules.pixels) parts.push(pixelRange(rules.pixels, 'sizes'));
  if (rules.sides) parts.push(pixelRange(rules.sides, 'sides'));
  if (rules.multiple) parts.push(`sides in multiples of ${rules.multiple}`);
  return parts.join('; ');
}

const sizeText = ([width, height]: Size) => `${width}x${height}`;

/** `size`: a listed one when the model takes no custom size, else the nearest size its rules allow. */
function fitSize(changes: InputChanges, rules: ImageSizeRules, capability: ImageCapabilityFields | undefined): void {
  const size = changes.input.size;
  if (typeof size !== 'string') return;
  if (size === 'auto') {
    if (rules.listed && !capability?.output_resolutions?.includes('auto')) changes.drop('size', `takes only ${describeSizeRules(rules, capability)}`);
    return;
  }
  const asked = parseSize(size);
  if (!asked) return;
  const fitted = sizeText(nearestImageSize(asked, rules));
  if (fitted !== size) changes.set('size', fitted, describeSizeRules(rules, capability));
}

/** The deprecated endpoint's `width` and `height`: the nearest size, one warning per side changed. */
function fitWidthHeight(changes: InputChanges, rules: ImageSizeRules, capability: ImageCapabilityFields | undefined): void {
  const { width, height } = changes.input;
  if (typeof width !== 'number' || typeof height !== 'number') return;
  const [w, h] = nearestImageSize([width, height], rules);
  if (w !== width) changes.set('width', w, describeSizeRules(rules, capability));
  if (h !== height) changes.set('height', h, describeSizeRules(rules, capability));
}

export const fitImageInput: InputFitter = (changes, { endpoint, target, declaration }) => {
  const edit = endpoint === 'images.edits';
  const capability = edit ? target.capabilities.image_edit ?? target.capabilities.image_generate : target.capabilities.image_generate;
  const limits = declaration?.limits;
  const { input } = changes;
  const inputImages = Array.isArray(input.image) ? input.image.length : 0;
  const maxInputs = lowest(capability && imageInputsLimitOf(capability), limits?.maxInputImages);
  if (edit && maxInputs !== undefined && inputImages > maxInputs) return `takes at most ${maxInputs} input image${maxInputs === 1 ? '' : 's'}, not ${inputImages}`;
  const maxOutputs = lowest(capability && imageOutputsLimitOf(capability, inputImages), limits?.maxOutputs);
  if (maxOutputs !== undefined && maxOutputs < 1) return `makes no image beside ${inputImages} input images`;

  const rules: ImageSizeRules = capability ? imageSizeRulesOf(capability) : {};
  if (limits?.maxImageSide !== undefined) rules.sides = [rules.sides?.[0] ?? 1, Math.min(rules.sides?.[1] ?? Number.POSITIVE_INFINITY, limits.maxImageSide)];
  fitSize(changes, rules, capability);
  fitWidthHeight(changes, rules, capability);
  if (typeof input.aspect_ratio === 'string' && rules.ratios) {
    const ratio = nearestRatioText(input.aspect_ratio, rules.ratios);
    if (ratio !== input.aspect_ratio) changes.set('aspect_ratio', ratio, describeSizeRules({ ratios: rules.ratios }, capability));
  }
  const levels = capability?.output_resolutions?.filter((s) => parseLines(s));
  if (typeof input.resolution === 'string' && levels?.length && !levels.includes(input.resolution)) {
    const level = nearestBy(input.resolution, levels, parseLines);
    if (level) changes.set('resolution', level, listOf(levels));
  }
  if (typeof input.n === 'number' && maxOutputs !== undefined && input.n > maxOutputs) changes.set('n', maxOutputs, `at most ${maxOutputs}${inputImages ? ` beside ${inputImages} input images` : ''}`);
  const qualities = capability?.quality_options;
  if (typeof input.quality === 'string') {
    if (capability?.support_quality_control === false) changes.drop('quality', 'has no quality control');
    else if (qualities?.length && !qualities.includes(input.quality)) {
      if (qualities.includes('auto')) changes.set('quality', 'auto', listOf(qualities));
      else changes.drop('quality', `takes only ${listOf(qualities)}`);
    }
  }
  if (input.mask !== undefined && capability?.input_parameters && !capability.input_parameters.some((p) => p.type === 'mask')) changes.drop('mask', 'takes no mask');
  return undefined;
};
