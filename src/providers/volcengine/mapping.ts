import type { LiveModel } from '../../catalog/catalog.ts';
import type { ImageCapabilityFields } from '../../catalog/schema.ts';
import { fieldsSet, mapFields } from '../field-mapping.ts';
import { TaskFailedError, TaskRejectedError, type GenerationOutput, type TaskInputs } from '../spec.ts';
import type { MediaSize, Usage } from '../spec.ts';
import { readReply } from '../upstream-reply.ts';
import { ArkCreated, ArkError, ArkTask, SeedreamImages } from './reply-schemas.ts';

/** A video.generations request as its service stored it, and one of its content items. */
type VideoInput = TaskInputs['video.generations'];
type RequestItem = VideoInput['content'][number];

/** A content item of an Ark generation task. */
export type ArkContentItem =
  | { type: 'text'; text: string }
  | { type: 'image_url'; image_url: { url: string }; role?: string }
  | { type: 'video_url'; video_url: { url: string }; role: 'reference_video' }
  | { type: 'audio_url'; audio_url: { url: string }; role: 'reference_audio' };

/** Upstream roles of request image roles; an image without a role goes without one (the upstream takes it as the first frame). */
const IMAGE_ROLES: Record<string, string> = { first_frame: 'first_frame', last_frame: 'last_frame', reference: 'reference_image' };
const FRAME_ROLES = new Set(['first_frame', 'last_frame']);

const RESOLUTIONS = new Set(['480p', '720p', '1080p']);
/** Ratios Ark takes; the API's keep_ratio is Ark's adaptive (follow the input picture). */
const RATIOS = new Set(['16:9', '4:3', '1:1', '3:4', '9:16', '21:9', 'adaptive', 'keep_ratio']);

/**
 * The request's settings, each with its Ark task field and, for the older prompt-flag style
 * (options.parameter_style "flags"), its inline flag. A setting without a flag stays a field.
 */
const VIDEO_PARAMS: { from: string; field: string; flag?: string; convert?: (value: unknown) => unknown }[] = [
  { from: 'resolution', field: 'resolution', flag: 'rs' },
  { from: 'aspect_ratio', field: 'ratio', flag: 'rt', convert: (v) => (v === 'keep_ratio' ? 'adaptive' : v) },
  { from: 'duration', field: 'duration', flag: 'dur' },
  { from: 'framespersecond', field: 'framespersecond', flag: 'fps' },
  { from: 'seed', field: 'seed', flag: 'seed' },
  { from: 'camerafixed', field: 'camera_fixed', flag: 'cf' },
  { from: 'watermark', field: 'watermark', flag: 'wm' },
  { from: 'audio', field: 'generate_audio' },
];

/** Request fields Seedance has no use for: dropped with a warning. */
const UNSUPPORTED_FIELDS = ['negative_prompt', 'cfg_scale', 'camera_control'];

export type ParameterStyle = 'fields' | 'flags';

/** The upstream role of a media item, or the reason Seedance cannot take it. */
function upstreamRole(item: RequestItem): { role?: string } | { refused: string } {
  switch (item.type) {
    case 'text':
      return {};
    case 'image_url':
      if (item.role === undefined) return {};
      return IMAGE_ROLES[item.role] ? { role: IMAGE_ROLES[item.role] } : { refused: `an image with role ${item.role}` };
    case 'video_url':
      if (item.video_url?.refer_type === 'base' || item.role === 'video_base') return { refused: 'video editing (a video_base video)' };
      if (item.role !== undefined && item.role !== 'video_feature') return { refused: `a video with role ${item.role}` };
      return { role: 'reference_video' };
    case 'audio_url':
      if (item.role !== undefined) return { refused: `an audio with role ${item.role}` };
      return { role: 'reference_audio' };
    default:
      return { refused: `${item.type} content` };
  }
}

/** Refuses what Seedance cannot do before anything is sent (TaskRejectedError). */
export function checkVideoRequest(input: VideoInput): void {
  const items = input.content;
  const roles: string[] = [];
  items.forEach((item, i) => {
    const mapped = upstreamRole(item);
    if ('refused' in mapped) throw new TaskRejectedError(`Seedance cannot take ${mapped.refused} (content[${i}])`);
    if (mapped.role) roles.push(mapped.role);
  });
  if (!items.some((item) => item.type === 'text' && item.text?.trim()) && roles.length === 0) throw new TaskRejectedError('Seedance needs a text prompt or an image');
  const frames = roles.filter((role) => FRAME_ROLES.has(role));
  if (frames.length > 0 && frames.length !== roles.length) throw new TaskRejectedError('Seedance cannot mix first/last frames with reference media in one request');
  for (const role of FRAME_ROLES) {
    if (frames.filter((r) => r === role).length > 1) throw new TaskRejectedError(`only one ${role} image is allowed`);
  }
  if (frames.includes('last_frame') && !frames.includes('first_frame')) throw new TaskRejectedError('a last_frame image needs a first_frame image');
  if (!RESOLUTIONS.has(input.resolution)) throw new TaskRejectedError(`Seedance renders 480p, 720p or 1080p, not ${input.resolution}`);
  if (!RATIOS.has(input.aspect_ratio)) throw new TaskRejectedError(`Seedance has no ${input.aspect_ratio} aspect ratio`);
  if (!Number.isInteger(input.duration)) throw new TaskRejectedError('Seedance takes a whole number of seconds as duration');
}

/** The media URLs of a request, in content order, to make fetchable before building the task. */
export function mediaRefs(input: VideoInput): string[] {
  return input.content.flatMap((item) => {
    const url = item.image_url?.url ?? item.video_url?.url ?? item.audio_url?.url;
    return item.type !== 'text' && url ? [url] : [];
  });
}

/**
 * The POST /contents/generations/tasks body. `urls` maps each request media reference to a URL
 * the upstream can fetch. `dropped` names request fields Seedance has no use for.
 */
export function createTaskBody(
  input: VideoInput,
  model: string,
  urls: ReadonlyMap<string, string>,
  opts: { style: ParameterStyle; callbackUrl?: string },
): { body: Record<string, unknown>; dropped: string[] } {
  const items = input.content;
  const media: ArkContentItem[] = [];
  for (const item of items) {
    const mapped = upstreamRole(item);
    if ('refused' in mapped || item.type === 'text') continue;
    const url = urls.get((item.image_url ?? item.video_url ?? item.audio_url)!.url)!;
    if (item.type === 'image_url') media.push({ type: 'image_url', image_url: { url }, ...(mapped.role ? { role: mapped.role } : {}) });
    else if (item.type === 'video_url') media.push({ type: 'video_url', video_url: { url }, role: 'reference_video' });
    else media.push({ type: 'audio_url', audio_url: { url }, role: 'reference_audio' });
  }
  const settings: Record<string, unknown> = { ...input };
  // Without a picture there is nothing to adapt to: the upstream picks its default ratio.
  if (!media.some((m) => m.type === 'image_url') && (settings.aspect_ratio === 'adaptive' || settings.aspect_ratio === 'keep_ratio')) delete settings.aspect_ratio;
  const asFlags = opts.style === 'flags' ? VIDEO_PARAMS.filter((p) => p.flag) : [];
  const asFields = VIDEO_PARAMS.filter((p) => !asFlags.includes(p));
  const flags = mapFields(settings, asFlags.map((p) => ({ from: p.from, to: p.flag!, convert: p.convert })));
  const prompt = [
    items.filter((item) => item.type === 'text' && item.text).map((item) => item.text!.trim()).join('\n'),
    ...Object.entries(flags).map(([flag, value]) => `--${flag} ${String(value)}`),
  ].filter((part) => part !== '').join(' ');
  const content: ArkContentItem[] = [...(prompt ? [{ type: 'text' as const, text: prompt }] : []), ...media];
  return {
    body: {
      model,
      content,
      ...mapFields(settings, asFields.map((p) => ({ from: p.from, to: p.field, convert: p.convert }))),
      ...(opts.callbackUrl ? { callback_url: opts.callbackUrl } : {}),
    },
    dropped: fieldsSet(input, UNSUPPORTED_FIELDS),
  };
}

/** The task id of a create reply `{id}`. */
export function createdTaskId(reply: unknown): string {
  return readReply(ArkCreated, reply, 'ark').id;
}

export type ArkTaskState =
  | { state: 'running'; progress: number; message: string }
  | { state: 'failed'; message: string; original: string }
  | { state: 'succeeded'; videoUrl: string; usage?: Usage; seed?: number };

/** A GET /contents/generations/tasks/{id} reply. */
export function taskState(reply: unknown): ArkTaskState {
  const task = readReply(ArkTask, reply, 'ark');
  switch (task.status) {
    case 'queued':
      return { state: 'running', progress: 10, message: 'queued upstream' };
    case 'running':
      return { state: 'running', progress: 50, message: 'generating' };
    case 'succeeded': {
      const videoUrl = task.content?.video_url;
      if (!videoUrl) throw new TaskFailedError('ark reported success without content.video_url', JSON.stringify(reply).slice(0, 2000));
      const usage = usageOf(task.usage?.completion_tokens, task.usage?.total_tokens);
      return { state: 'succeeded', videoUrl, ...(usage ? { usage } : {}), ...(task.seed != null ? { seed: task.seed } : {}) };
    }
    case 'failed': {
      const code = task.error?.code ?? 'unknown';
      const message = task.error?.message ?? 'no message';
      return { state: 'failed', message: `seedance video task failed (${code})`, original: message };
    }
    case 'cancelled':
    case 'expired':
      return { state: 'failed', message: `the seedance video task was ${task.status} upstream`, original: `task status ${task.status}` };
    default:
      throw new TaskFailedError('ark answered the task query with an unknown status', JSON.stringify(reply).slice(0, 2000));
  }
}

/** The video task's output: the MP4 with its probed size. */
export function videoOutput(data: Buffer, size: { width: number; height: number }, hasAudio: boolean, done: { usage?: Usage; seed?: number }, upstreamTaskId: string): GenerationOutput {
  const mediaSize: MediaSize = { type: 'video', width: size.width, height: size.height, status: 1 };
  return {
    files: [{ type: 'video', data, fileName: 'video.mp4', mimeType: 'video/mp4', mediaSize, hasAudio }],
    ...(done.usage ? { usage: done.usage } : {}),
    extra: { upstream_task_id: upstreamTaskId, ...(done.seed !== undefined ? { seed: done.seed } : {}) },
  };
}

// ---- Seedream images: POST /images/generations ----

type SeedreamInput = TaskInputs['images.generations'] | TaskInputs['images.edits'];

/** Long side of each resolution tier; Seedream takes the tier itself, or WxH. */
const TIER_SIDE: Record<string, number> = { '1K': 1024, '2K': 2048, '4K': 4096 };
/** Ark's pixel sizes are multiples of this. */
const SIZE_STEP = 16;
/** Reference images plus images made: at most this many in one request. */
export const SEEDREAM_MAX_IMAGES = 15;
/** Reference images one request takes. */
export const SEEDREAM_MAX_INPUT_IMAGES = 14;

/** Request fields the Seedream mapping reads; others set in a request are the task's warnings. */
export const SEEDREAM_FIELDS = ['prompt', 'image', 'n', 'size', 'aspect_ratio', 'resolution', 'seed', 'watermark'];

/** The `size` to send: the request's WxH, its resolution tier, or the tier's area at its aspect ratio. */
function seedreamSize(input: SeedreamInput): string | undefined {
  if (input.size && input.size !== 'auto') return input.size;
  if (!input.aspect_ratio) return input.resolution;
  const [w, h] = input.aspect_ratio.split(':').map(Number) as [number, number];
  const side = TIER_SIDE[input.resolution ?? '2K'] ?? TIER_SIDE['2K']!;
  const width = Math.round((side * Math.sqrt(w / h)) / SIZE_STEP) * SIZE_STEP;
  const height = Math.round((side * Math.sqrt(h / w)) / SIZE_STEP) * SIZE_STEP;
  return `${width}x${height}`;
}

/** Refuses what the model cannot draw before anything is sent: a tier it lacks, a size outside its pixel range, too many images. */
export function checkSeedreamRequest(input: SeedreamInput, imageCount: number, model: LiveModel): void {
  const capability = (model.capabilities as Record<string, ImageCapabilityFields | undefined>)[imageCount > 0 ? 'image_edit' : 'image_generate'];
  const tiers = capability?.output_resolutions ?? Object.keys(TIER_SIDE);
  if (input.resolution !== undefined && !input.size && !tiers.includes(input.resolution)) throw new TaskRejectedError(`${model.alias} renders ${tiers.join(', ')}, not ${input.resolution}`);
  const size = seedreamSize(input);
  const sides = size ? /^(\d+)x(\d+)$/.exec(size) : null;
  const range = capability?.output_size_range;
  if (sides && range) {
    const pixels = Number(sides[1]) * Number(sides[2]);
    if (pixels < range[0] || pixels > range[1]) throw new TaskRejectedError(`${model.alias} draws ${range[0]} to ${range[1]} pixels, not ${size} (${pixels})`);
  }
  if (imageCount > SEEDREAM_MAX_INPUT_IMAGES) throw new TaskRejectedError(`Seedream takes at most ${SEEDREAM_MAX_INPUT_IMAGES} reference images`);
  if (imageCount + (input.n ?? 1) > SEEDREAM_MAX_IMAGES) throw new TaskRejectedError(`Seedream makes at most ${SEEDREAM_MAX_IMAGES} images counting the reference images (${imageCount} given, n ${input.n ?? 1})`);
}

/**
 * The POST /images/generations body: `images` are the reference images (URLs or data URIs), one
 * as a string, several as a list; n above 1 asks for a group of up to n related images.
 */
export function seedreamBody(input: SeedreamInput, model: string, images: string[]): Record<string, unknown> {
  const size = seedreamSize(input);
  const n = input.n ?? 1;
  return {
    model,
    prompt: input.prompt,
    ...(images.length === 1 ? { image: images[0] } : images.length > 1 ? { image: images } : {}),
    ...(size ? { size } : {}),
    ...(input.seed !== undefined ? { seed: input.seed } : {}),
    sequential_image_generation: n > 1 ? 'auto' : 'disabled',
    ...(n > 1 ? { sequential_image_generation_options: { max_images: n } } : {}),
    response_format: 'url',
    ...(typeof input.watermark === 'boolean' ? { watermark: input.watermark } : {}),
  };
}

export interface SeedreamReply {
  /** Image URLs, in order. */
  urls: string[];
  /** Images of the group the upstream could not make: their index and Ark's error. */
  failed: { index: number; code: string; message: string }[];
  usage?: Usage;
}

/** An images reply: its images and the group's failed items; a reply with an error and no image fails the task. */
export function seedreamReply(reply: unknown): SeedreamReply {
  const r = readReply(SeedreamImages, reply, 'seedream');
  const urls: string[] = [];
  const failed: SeedreamReply['failed'] = [];
  (r.data ?? []).forEach((item, index) => {
    if (item.url) urls.push(item.url);
    else failed.push({ index, code: String(item.error?.code ?? 'unknown'), message: String(item.error?.message ?? 'no image and no error') });
  });
  if (urls.length === 0) {
    const error = r.error ?? (failed[0] ? { code: failed[0].code, message: failed[0].message } : undefined);
    throw new TaskFailedError(`seedream made no image (${String(error?.code ?? 'no data')})`, error ? String(error.message) : JSON.stringify(reply).slice(0, 2000));
  }
  const usage = usageOf(r.usage?.output_tokens, r.usage?.total_tokens);
  return { urls, failed, ...(usage ? { usage } : {}) };
}

/** Ark's usage when it reports both counts: the input is what the total has beyond the output. */
function usageOf(output: number | null | undefined, total: number | null | undefined): Usage | undefined {
  return output != null && total != null ? { input_tokens: Math.max(0, total - output), output_tokens: output, total_tokens: total } : undefined;
}

/** Ark's own words in an error reply (`{error: {code, message}}`): `code: message`, else the text. */
export function arkErrorText(text: string): string {
  try {
    const body: unknown = JSON.parse(text);
    if (ArkError.Check(body)) return `${String(body.error.code)}: ${body.error.message}`;
  } catch {
    // Not Ark's error shape: the text as it came.
  }
  return text;
}
