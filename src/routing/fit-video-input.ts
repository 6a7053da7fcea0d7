/**
 * A video request fitted to a fallback model: the model must have a capability type its content
 * needs and take its media (counts, audio, frames) and prompt length; resolution, duration,
 * aspect ratio and audio output are fitted to that capability.
 */
import { durationRangesOf, mapOrListValues, videoCapabilityOf } from '../catalog/capabilities.ts';
import type { VideoCapabilityFields } from '../catalog/schema.ts';
import { capabilitiesForContent } from '../endpoints/video-content-capabilities.ts';
import type { VideoContentItem } from '../endpoints/video.ts';
import { listOf, type InputChanges, type InputFitter } from './input-changes.ts';
import { describeRatios, inRange, nearestBy, nearestInRanges, nearestNumber, nearestRatioText, parseLines } from './nearest-values.ts';

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** Why the capability cannot take the content's media or prompt, if it cannot. */
function contentMisfit(content: readonly VideoContentItem[], capability: VideoCapabilityFields): string | undefined {
  const count = (type: VideoContentItem['type']) => content.filter((item) => item.type === type).length;
  const images = count('image_url');
  const elements = count('element');
  const counted: [number | undefined, number, string][] = [
    [capability.max_images, images, 'image'],
    [capability.max_videos, count('video_url'), 'video'],
    [capability.max_audios, count('audio_url'), 'audio'],
    [capability.max_elements, elements, 'element'],
    [capability.max_images_and_elements, images + elements, 'image or element'],
  ];
  for (const [max, n, word] of counted) if (max !== undefined && n > max) return `takes at most ${plural(max, word)}, not ${n}`;
  if (count('audio_url') > 0 && capability.input_audio === false) return 'takes no audio input';
  if (content.some((item) => item.role === 'last_frame')) {
    const first = content.some((item) => item.type === 'image_url' && (item.role === undefined || item.role === 'first_frame'));
    if (first && capability.input_first_last_frame === false) return 'takes no first and last frame together';
    if (!first && capability.input_last_frame === false) return 'takes no last frame alone';
  }
  const limit = capability.prompt_length_limit?.max;
  const prompt = content.filter((item) => item.type === 'text' && item.role === undefined).map((item) => item.text ?? '').join('\n');
  if (limit !== undefined && [...prompt].length > limit) return `takes prompts of at most ${limit} characters, not ${[...prompt].length}`;
  return undefined;
}

function fitDuration(changes: InputChanges, capability: VideoCapabilityFields, content: readonly VideoContentItem[]): void {
  const duration = changes.input.duration;
  if (typeof duration !== 'number') return;
  // With a video among the inputs an omni model may list other lengths.
  const withVideo = content.some((item) => item.type === 'video_url') ? capability.limits_with_video?.duration_options : undefined;
  const options = withVideo ?? mapOrListValues(capability.duration_options);
  const ranges = durationRangesOf(capability);
  if (options?.length) {
    if (!options.includes(duration)) changes.set('duration', nearestNumber(duration, options), `durations of ${listOf(options)} s`);
  } else if (ranges.length && !ranges.some((range) => inRange(duration, range))) {
    changes.set('duration', nearestInRanges(duration, ranges), `durations of ${ranges.map(([min, max]) => `${min} to ${max}`).join(' or ')} s`);
  }
}

export const fitVideoInput: InputFitter = (changes, { endpoint, target }) => {
  const { input } = changes;
  const content = (input.content ?? []) as VideoContentItem[];
  const types = capabilitiesForContent(content);
  if (!types.some((t) => target.modelTypes.includes(t))) return `cannot do ${endpoint} with this content (it has none of ${listOf(types)})`;
  const capability = videoCapabilityOf(target, types);
  if (!capability) return undefined;
  const misfit = contentMisfit(content, capability);
  if (misfit) return misfit;

  const resolutions = mapOrListValues(capability.output_resolutions);
  if (typeof input.resolution === 'string' && resolutions?.length && !resolutions.includes(input.resolution)) {
    const resolution = nearestBy(input.resolution, resolutions, parseLines);
    if (resolution) changes.set('resolution', resolution, listOf(resolutions));
  }
  fitDuration(changes, capability, content);
  const ratios = mapOrListValues(capability.aspect_ratio_allowed);
  const rule = ratios?.length ? { list: ratios } : capability.aspect_ratio_range ? { range: capability.aspect_ratio_range } : undefined;
  if (typeof input.aspect_ratio === 'string' && rule) {
    const ratio = nearestRatioText(input.aspect_ratio, rule);
    if (ratio !== input.aspect_ratio) changes.set('aspect_ratio', ratio, describeRatios(rule));
  }
  if (input.audio === true && capability.output_audio === false) changes.drop('audio', 'makes no audio');
  return undefined;
};
