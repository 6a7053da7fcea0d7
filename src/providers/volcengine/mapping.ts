import { fieldsSet, mapFields } from '../field-mapping.ts';
import { TaskFailedError, TaskRejectedError, type GenerationOutput, type TaskInputs } from '../spec.ts';
import type { MediaSize, Usage } from '../spec.ts';

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
  const id = (reply as { id?: unknown } | null)?.id;
  if (typeof id !== 'string' || id === '') throw new TaskFailedError('ark answered the video request without a task id', JSON.stringify(reply).slice(0, 2000));
  return id;
}

export type ArkTaskState =
  | { state: 'running'; progress: number; message: string }
  | { state: 'failed'; message: string; original: string }
  | { state: 'succeeded'; videoUrl: string; usage?: Usage; seed?: number };

/** A GET /contents/generations/tasks/{id} reply. */
export function taskState(reply: unknown): ArkTaskState {
  const task = reply as {
    status?: unknown;
    error?: { code?: unknown; message?: unknown } | null;
    content?: { video_url?: unknown } | null;
    usage?: { completion_tokens?: unknown; total_tokens?: unknown } | null;
    seed?: unknown;
  } | null;
  switch (task?.status) {
    case 'queued':
      return { state: 'running', progress: 10, message: 'queued upstream' };
    case 'running':
      return { state: 'running', progress: 50, message: 'generating' };
    case 'succeeded': {
      const videoUrl = task.content?.video_url;
      if (typeof videoUrl !== 'string' || videoUrl === '') throw new TaskFailedError('ark reported success without content.video_url', JSON.stringify(reply).slice(0, 2000));
      const completion = task.usage?.completion_tokens;
      const total = task.usage?.total_tokens;
      const usage = typeof completion === 'number' && typeof total === 'number'
        ? { input_tokens: Math.max(0, total - completion), output_tokens: completion, total_tokens: total }
        : undefined;
      return { state: 'succeeded', videoUrl, ...(usage ? { usage } : {}), ...(typeof task.seed === 'number' ? { seed: task.seed } : {}) };
    }
    case 'failed': {
      const code = typeof task.error?.code === 'string' ? task.error.code : 'unknown';
      const message = typeof task.error?.message === 'string' ? task.error.message : 'no message';
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
