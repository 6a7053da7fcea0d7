/**
 * Queries over a catalog model's capabilities. The types they answer come from the catalog
 * schema (schema.ts), the one description of the catalog file.
 */
import type { BaseModel, CapabilityName, ImageCapabilityFields, LanguageCapabilityFields, SpeechSynthesisCapabilityFields, VideoCapabilityFields, Voice } from './schema.ts';

type Range = readonly [min: number, max: number];

/** The language fields of a chat model: its text_generate capability's, else its omni capability's. */
export function languageCapabilityOf(model: Pick<BaseModel, 'capabilities'>): LanguageCapabilityFields | undefined {
  return model.capabilities.text_generate ?? model.capabilities.omni;
}

/** The voices a text_to_speech model lists in the catalog (none: it takes any voice id). */
export function speechVoicesOf(model: Pick<BaseModel, 'capabilities'>): Voice[] {
  return model.capabilities.text_to_speech?.voices ?? [];
}

/** The volume range of a text_to_speech model when its capability declares none (MiniMax's). */
const DEFAULT_VOLUME_RANGE = { min: 0, max: 10 };

/** The `vol` values a text_to_speech capability takes: its tts_params.volume_range, else 0 to 10. */
export function speechVolumeRangeOf(capability: SpeechSynthesisCapabilityFields | undefined): { min: number; max: number } {
  return (capability?.tts_params || undefined)?.volume_range ?? DEFAULT_VOLUME_RANGE;
}

/** The video capability a model runs a task needing one of `types` with: the first of them it has. */
export function videoCapabilityOf(model: Pick<BaseModel, 'capabilities'>, types: readonly CapabilityName[]): VideoCapabilityFields | undefined {
  const capabilities = model.capabilities as Partial<Record<CapabilityName, VideoCapabilityFields>>;
  for (const type of types) if (capabilities[type]) return capabilities[type];
  return undefined;
}

/** Every value of a `mapOrList` field: the list, or the lists of every key (per mode) together. */
export function mapOrListValues<T>(value: T[] | Record<string, T[]> | undefined): T[] | undefined {
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value : [...new Set(Object.values(value).flat())];
}

/** The duration ranges of a video capability: its duration_range, or each of its ranges per key. */
export function durationRangesOf(capability: VideoCapabilityFields): Range[] {
  const declared = capability.duration_range;
  if (declared === undefined) return [];
  return Array.isArray(declared) ? [declared] : Object.values(declared);
}

/** What an image capability allows of an output size (WxH), read from its fields. */
export interface ImageSizeRules {
  /** The sizes it draws when it takes no custom size: the WxH entries of output_resolutions. */
  listed?: string[];
  /**
   * The aspect ratios a size may have: the listed ones (aspect_ratio_allowed) when it takes no
   * custom size or declares no ratio range, else the range of width / height (aspect_ratio_range).
   */
  ratios?: { list: string[] } | { range: Range };
  /** The range of each side in pixels (width_height_range). */
  sides?: Range;
  /** The range of the pixel count (output_size_range; output_max_size lowers its maximum). */
  pixels?: Range;
  /** Sides are multiples of this (width_height_multiple). */
  multiple?: number;
}

const WXH = /^\d+x\d+$/;

/** The size rules of an image capability. */
export function imageSizeRulesOf(capability: ImageCapabilityFields): ImageSizeRules {
  const custom = capability.allow_custom_width_height_size === true;
  const listed = capability.output_resolutions?.filter((s) => WXH.test(s));
  const list = capability.aspect_ratio_allowed;
  const range = capability.aspect_ratio_range;
  const ratios = list?.length && (!custom || !range) ? { list } : range ? { range } : undefined;
  const maxPixels = capability.output_max_size || undefined;
  const declaredPixels = capability.output_size_range;
  const pixels: Range | undefined = declaredPixels || maxPixels !== undefined
    ? [declaredPixels?.[0] ?? 0, Math.min(declaredPixels?.[1] ?? Number.POSITIVE_INFINITY, maxPixels ?? Number.POSITIVE_INFINITY)]
    : undefined;
  return {
    ...(listed?.length && !custom ? { listed } : {}),
    ...(ratios ? { ratios } : {}),
    ...(capability.width_height_range ? { sides: capability.width_height_range } : {}),
    ...(pixels ? { pixels } : {}),
    ...(capability.width_height_multiple ? { multiple: capability.width_height_multiple } : {}),
  };
}

/**
 * The most output images one request may ask of an image capability, `inputImages` counting
 * against input_output_max_images_count; undefined when it sets no limit.
 */
export function imageOutputsLimitOf(capability: ImageCapabilityFields, inputImages = 0): number | undefined {
  const limits = [
    capability.output_multiple_images === false ? 1 : undefined,
    capability.output_max_images_count || undefined,
    capability.input_output_max_images_count ? capability.input_output_max_images_count - inputImages : undefined,
  ].filter((n): n is number => n !== undefined);
  return limits.length ? Math.min(...limits) : undefined;
}

/** The most input images an image_edit capability takes; undefined when it sets no limit. */
export function imageInputsLimitOf(capability: ImageCapabilityFields): number | undefined {
  if (capability.input_multiple_images === false) return 1;
  return capability.input_max_images_count || undefined;
}
