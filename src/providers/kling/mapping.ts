/**
 * Kling video: a video.generations task input → the body of text2video, image2video or
 * omni-video, and the API's `{code, message, request_id, data}` replies → task states.
 * Pure functions.
 */
import type { LiveModel } from '../../catalog/catalog.ts';
import { mapOrListValues } from '../../catalog/capabilities.ts';
import type { VideoCapabilityFields } from '../../catalog/schema.ts';
import type { VideoContentItem, VideoGenerationInput } from '../../endpoints/video.ts';
import { TaskFailedError, TaskRejectedError } from '../spec.ts';
import { readReply } from '../upstream-reply.ts';
import { KlingCreated, KlingEnvelope, KlingTask } from './reply-schemas.ts';

/** The Kling task families this adapter submits to (`/v1/videos/<family>`). */
export type KlingFamily = 'text2video' | 'image2video' | 'omni-video';

/** The resolution each Kling mode renders when the catalog row does not say otherwise. */
const MODE_RESOLUTION: Record<string, string> = { std: '720p', pro: '1080p' };

/** Camera moves Kling takes as a bare type (`simple` needs a config the gateway's field cannot carry). */
const CAMERA_MOVES = new Set(['down_back', 'forward_up', 'right_turn_forward', 'left_turn_forward']);

/** Aspect ratios Kling renders when the catalog row lists none. */
const KLING_RATIOS = ['16:9', '9:16', '1:1'];

/** The request's ratios that mean "follow the input picture". */
const FOLLOW_INPUT = new Set(['adaptive', 'keep_ratio']);

/** Kling takes an image as a URL or as raw base64 (no data: prefix). */
export type ImageValue = string;

/** Which family a task goes to: omni models take everything there; pictures go to image2video. */
export function familyOf(model: LiveModel, input: VideoGenerationInput): KlingFamily {
  if (model.modelTypes.includes('omni_video')) return 'omni-video';
  return input.content.some((item) => item.type === 'image_url') ? 'image2video' : 'text2video';
}

function capabilityOf(model: LiveModel, family: KlingFamily): VideoCapabilityFields | undefined {
  const caps = model.capabilities as Record<string, VideoCapabilityFields | undefined>;
  if (family === 'omni-video') return caps.omni_video;
  return family === 'image2video' ? caps.image_to_video ?? caps.video_generate : caps.video_generate ?? caps.image_to_video;
}

const lines = (resolution: string) => Number.parseInt(resolution, 10);

/** The modes of the model and the resolutions each renders, from the catalog row. */
function modeResolutions(capability: VideoCapabilityFields | undefined): [mode: string, resolutions: string[]][] {
  const declared = capability?.output_resolutions;
  const modes = capability?.supported_modes?.length ? capability.supported_modes : Object.keys(MODE_RESOLUTION);
  if (declared && !Array.isArray(declared)) return modes.map((mode) => [mode, declared[mode] ?? []]);
  if (declared && modes.length === 1) return [[modes[0]!, declared]];
  // A flat list: the modes whose usual resolution it lists.
  const listed = modes.filter((mode) => !declared || declared.includes(MODE_RESOLUTION[mode] ?? ''));
  return (listed.length > 0 ? listed : modes).map((mode) => [mode, [MODE_RESOLUTION[mode] ?? '720p']]);
}

/**
 * The Kling mode of a resolution: the mode that renders it, else the mode whose resolution is
 * nearest (with a warning saying what is rendered instead).
 */
export function modeFor(resolution: string, model: LiveModel, capability: VideoCapabilityFields | undefined): { mode: string; warning?: string } {
  const options = modeResolutions(capability).flatMap(([mode, resolutions]) => resolutions.map((r) => ({ mode, resolution: r })));
  const exact = options.find((o) => o.resolution === resolution);
  if (exact) return { mode: exact.mode };
  const nearest = options.reduce((a, b) => (Math.abs(lines(b.resolution) - lines(resolution)) < Math.abs(lines(a.resolution) - lines(resolution)) ? b : a));
  return {
    mode: nearest.mode,
    warning: `resolution ${resolution} rendered as ${nearest.resolution} (mode ${nearest.mode}): ${model.alias} renders ${options.map((o) => o.resolution).join(', ')}`,
  };
}

function ratiosOf(capability: VideoCapabilityFields | undefined): string[] {
  return mapOrListValues(capability?.aspect_ratio_allowed) ?? KLING_RATIOS;
}

/** The text of the request: its prompt items joined. */
function promptOf(content: VideoContentItem[]): string {
  return content.filter((item) => item.type === 'text' && item.role === undefined && item.text).map((item) => item.text!.trim()).join('\n');
}

/** Refuses what Kling cannot do before anything is sent (TaskRejectedError). */
export function checkKlingRequest(input: VideoGenerationInput, model: LiveModel): void {
  const family = familyOf(model, input);
  const capability = capabilityOf(model, family);
  input.content.forEach((item, i) => {
    const at = `content[${i}]`;
    if (item.role === 'shot_prompt') throw new TaskRejectedError(`Kling multi-shot prompts are not supported (${at})`);
    if (item.type === 'audio_url') throw new TaskRejectedError(`Kling takes no audio input (${at})`);
    if (family !== 'omni-video' && (item.type === 'video_url' || item.type === 'element')) throw new TaskRejectedError(`${model.alias} takes no ${item.type} content; an omni model does (${at})`);
    if (item.type === 'element' && item.element?.inline_element) throw new TaskRejectedError(`Kling takes subjects by element id only, not inline (${at})`);
    if (item.type === 'image_url' && family === 'image2video' && !(item.role === undefined || item.role === 'first_frame' || item.role === 'last_frame')) {
      throw new TaskRejectedError(`Kling image-to-video takes first and last frames, not an image with role ${item.role} (${at})`);
    }
    if (item.type === 'image_url' && family === 'omni-video' && item.role === 'digital_human_frame') throw new TaskRejectedError(`Kling takes no image with role digital_human_frame (${at})`);
  });
  const images = input.content.filter((item) => item.type === 'image_url');
  if (family === 'image2video') {
    const first = images.filter((item) => item.role !== 'last_frame');
    if (first.length !== 1) throw new TaskRejectedError('Kling image-to-video takes one first frame (an image without a role, or role first_frame)');
    if (images.length > 2) throw new TaskRejectedError('Kling image-to-video takes at most a first and a last frame');
  }
  if (family !== 'image2video' && !promptOf(input.content)) throw new TaskRejectedError('Kling needs a text prompt');
  if (!Number.isInteger(input.duration)) throw new TaskRejectedError('Kling takes a whole number of seconds as duration');
  const durations = mapOrListValues(capability?.duration_options);
  const range = Array.isArray(capability?.duration_range) ? capability.duration_range : undefined;
  const referenced = family === 'omni-video' && input.content.some((item) => item.type === 'video_url' || item.type === 'element' || (item.type === 'image_url' && item.role !== 'first_frame' && item.role !== 'last_frame'));
  // Omni references allow any length in the range; plain text and frames only the listed lengths.
  const allowed = referenced && range ? input.duration >= range[0] && input.duration <= range[1] : !durations || durations.includes(input.duration);
  if (!allowed) throw new TaskRejectedError(`${model.alias} renders ${referenced && range ? `${range[0]} to ${range[1]}` : durations!.join(' or ')} seconds, not ${input.duration}`);
  const ratio = input.aspect_ratio;
  if (!FOLLOW_INPUT.has(ratio) && family !== 'image2video' && !ratiosOf(capability).includes(ratio)) throw new TaskRejectedError(`${model.alias} has no ${ratio} aspect ratio (it renders ${ratiosOf(capability).join(', ')})`);
  if (input.camera_control !== undefined && !CAMERA_MOVES.has(input.camera_control)) {
    throw new TaskRejectedError(`Kling camera_control takes ${[...CAMERA_MOVES].join(', ')}, not ${input.camera_control}`);
  }
}

/** The image and video references of a request, in content order, for the adapter to turn into values Kling takes. */
export function mediaRefs(input: VideoGenerationInput): { images: string[]; videos: string[] } {
  return {
    images: input.content.flatMap((item) => (item.type === 'image_url' && item.image_url ? [item.image_url.url] : [])),
    videos: input.content.flatMap((item) => (item.type === 'video_url' && item.video_url ? [item.video_url.url] : [])),
  };
}

/** A create request: the family it goes to, its body, and what the run could not pass on. */
export interface KlingRequest {
  family: KlingFamily;
  body: Record<string, unknown>;
  warnings: string[];
}

/**
 * The body of POST /v1/videos/<family>. `values` maps each image reference to what Kling takes
 * (a URL, or raw base64) and each video reference to a URL it can fetch.
 */
export function klingRequest(input: VideoGenerationInput, model: LiveModel, values: ReadonlyMap<string, string>, callbackUrl?: string): KlingRequest {
  const family = familyOf(model, input);
  const capability = capabilityOf(model, family);
  const warnings: string[] = [];
  const { mode, warning } = modeFor(input.resolution, model, capability);
  if (warning) warnings.push(warning);
  const body: Record<string, unknown> = { model_name: model.defaultRealModelName };
  const prompt = promptOf(input.content);
  if (prompt) body.prompt = prompt;
  if (input.negative_prompt) body.negative_prompt = input.negative_prompt;
  body.mode = mode;

  const images = input.content.filter((item) => item.type === 'image_url');
  const baseVideo = input.content.some((item) => item.type === 'video_url' && (item.video_url?.refer_type === 'base' || item.role === 'video_base'));
  const firstFrame = images.some((item) => item.role === 'first_frame' || (family === 'image2video' && item.role !== 'last_frame'));
  if (family === 'image2video') {
    body.image = values.get(images.find((item) => item.role !== 'last_frame')!.image_url!.url);
    const tail = images.find((item) => item.role === 'last_frame');
    if (tail) body.image_tail = values.get(tail.image_url!.url);
  } else if (family === 'omni-video') {
    const imageList = images.map((item) => ({
      image_url: values.get(item.image_url!.url),
      ...(item.role === 'first_frame' ? { type: 'first_frame' } : item.role === 'last_frame' ? { type: 'end_frame' } : {}),
    }));
    if (imageList.length > 0) body.image_list = imageList;
    const elements = input.content.flatMap((item) => (item.type === 'element' && item.element?.system_element_id ? [{ element_id: item.element.system_element_id }] : []));
    if (elements.length > 0) body.element_list = elements;
    const videos = input.content.flatMap((item) => (item.type === 'video_url' && item.video_url ? [{
      video_url: values.get(item.video_url.url),
      refer_type: item.video_url.refer_type ?? (item.role === 'video_base' ? 'base' : 'feature'),
      ...(item.video_url.keep_original_sound ? { keep_original_sound: item.video_url.keep_original_sound } : {}),
    }] : []));
    if (videos.length > 0) body.video_list = videos;
  }

  // image2video follows its picture; omni needs a ratio unless a first frame or the edited video sets it.
  const followsInput = family === 'image2video' || firstFrame || baseVideo;
  if (!FOLLOW_INPUT.has(input.aspect_ratio)) {
    if (family === 'image2video') warnings.push(`aspect_ratio ${input.aspect_ratio} was not sent: Kling image-to-video follows the first frame`);
    else body.aspect_ratio = input.aspect_ratio;
  } else if (family === 'omni-video' && !followsInput) {
    body.aspect_ratio = '16:9';
  }
  // An edited video keeps its own length.
  if (!baseVideo) body.duration = String(input.duration);

  if (input.audio !== undefined) {
    if (capability?.output_audio) body.sound = input.audio ? 'on' : 'off';
    else if (input.audio) warnings.push(`audio was not sent: ${model.alias} makes no sound`);
  }
  if (input.camera_control !== undefined) body.camera_control = { type: input.camera_control };
  if (input.cfg_scale !== undefined) {
    // Kling 2.x and the omni models take no cfg_scale; earlier models take 0 to 1.
    if (/^kling-v1/.test(model.defaultRealModelName) && input.cfg_scale <= 1) body.cfg_scale = input.cfg_scale;
    else warnings.push(`cfg_scale was not sent: ${model.defaultRealModelName} takes none${/^kling-v1/.test(model.defaultRealModelName) ? ' above 1' : ''}`);
  }
  if (input.seed !== undefined && input.seed !== -1) warnings.push('seed was not sent: Kling takes none');
  if (input.framespersecond !== undefined) warnings.push('framespersecond was not sent: Kling takes none');
  if (input.camerafixed) warnings.push('camerafixed was not sent: Kling takes none');
  if (input.watermark) warnings.push('watermark was not sent: Kling takes none');
  if (callbackUrl) body.callback_url = callbackUrl;
  return { family, body, warnings };
}

/** Checks the envelope of a reply: a code other than 0 fails the task with Kling's message. */
function checkEnvelope(reply: unknown, call: string): void {
  const envelope = readReply(KlingEnvelope, reply, 'kling');
  if (envelope.code !== 0) throw new TaskFailedError(`kling answered ${call} with code ${envelope.code}`, envelope.message ?? JSON.stringify(reply).slice(0, 2000));
}

/** The task id of a create reply. */
export function createdTaskId(reply: unknown): string {
  checkEnvelope(reply, 'the video request');
  return readReply(KlingCreated, reply, 'kling').data.task_id;
}

export type KlingTaskState =
  | { state: 'running'; progress: number; message: string }
  | { state: 'failed'; message: string; original: string }
  | { state: 'succeeded'; videoUrl: string; units?: number };

/** A GET /v1/videos/<family>/{task_id} reply. */
export function taskState(reply: unknown): KlingTaskState {
  checkEnvelope(reply, 'the task query');
  const task = readReply(KlingTask, reply, 'kling').data;
  switch (task.task_status) {
    case 'submitted':
      return { state: 'running', progress: 10, message: 'queued upstream' };
    case 'processing':
      return { state: 'running', progress: 50, message: 'generating' };
    case 'succeed': {
      const url = task.task_result?.videos?.[0]?.url;
      if (!url) throw new TaskFailedError('kling reported success without a video URL', JSON.stringify(reply).slice(0, 2000));
      const units = Number(task.final_unit_deduction);
      return { state: 'succeeded', videoUrl: url, ...(task.final_unit_deduction !== undefined && Number.isFinite(units) ? { units } : {}) };
    }
    case 'failed':
      return { state: 'failed', message: 'kling video task failed', original: task.task_status_msg || 'no reason given' };
    default:
      throw new TaskFailedError('kling answered the task query with an unknown status', JSON.stringify(reply).slice(0, 2000));
  }
}

/** Kling's own words in an error reply: `<code> <message>` of its envelope, else the text. */
export function errorText(text: string): string {
  try {
    const envelope: unknown = JSON.parse(text);
    if (KlingEnvelope.Check(envelope) && envelope.message !== undefined) return `${envelope.code} ${envelope.message}`;
  } catch {
    // Not the envelope: the text as it came.
  }
  return text;
}
