import type { LiveModel } from '../../catalog/catalog.ts';
import { SOURCE_VIDEO_ROLE, type DigitalHumanCreateExtra } from '../../endpoints/digital-human-engines.ts';
import { digitalHumanModeOf, type DigitalHumanMode } from '../../endpoints/digital-human-options.ts';
import type { VideoInput } from '../local/video/media-input.ts';
import { fieldsSet, mapFields, type FieldRule } from '../field-mapping.ts';
import { TaskFailedError, type GenerationOutput, type TaskInputs } from '../spec.ts';
import { readReply } from '../upstream-reply.ts';
import { VisualEnvelope, VisualRespData, VisualResult, VisualSubmitted, type RespData, type ResultData } from './reply-schemas.ts';

/** A digital-human.generations request as its service stored it, with the resource the gateway adds. */
type GenerationInput = TaskInputs['digital-human.generations'];

/** Clone-avatar training: a source video becomes an upstream avatar (resource_id). */
export const TRAINING_REQ_KEY = 'realman_avatar_training_task';
/** Clone-avatar video: a trained avatar (resource_id) speaks an audio track. */
export const AVATAR_VIDEO_REQ_KEY = 'realman_avatar_creation_task';
/** Video lip-sync, per mode: a given video's mouth follows an audio track. */
const LIP_SYNC_REQ_KEYS: Record<DigitalHumanMode, string> = { lite: 'realman_change_lips', basic: 'realman_change_lips_basic_chimera' };

const same = (names: string[]): FieldRule[] => names.map((name) => ({ from: name, to: name }));

/** Options each upstream task takes (the API's names are the upstream's). */
const AVATAR_VIDEO_OPTIONS = same(['templ_start_strategy', 'templ_start_seconds']);
const LIP_SYNC_OPTIONS: Record<DigitalHumanMode, FieldRule[]> = {
  lite: same(['separate_vocal', 'align_audio', 'align_audio_reverse', 'templ_start_seconds']),
  basic: same(['separate_vocal', 'open_scenedet']),
};

/**
 * The generation options with the values the route fills in: an option at its
 * default asks nothing of a task that lacks it, any other value is reported as not honoured.
 */
const GENERATION_OPTION_DEFAULTS: Record<string, unknown> = {
  image_url: undefined,
  templ_start_strategy: undefined,
  templ_start_seconds: 0,
  separate_vocal: false,
  open_scenedet: false,
  align_audio: true,
  align_audio_reverse: false,
};

/** The CVSubmitTask body of digital-human.create: train an avatar on the source video. */
export function trainingBody(input: TaskInputs['digital-human.create'], videoUrl: string, callbackUrl: string | undefined): Record<string, unknown> {
  return {
    req_key: TRAINING_REQ_KEY,
    video_url: videoUrl,
    interaction_optimise: input.interaction_optimise,
    ...(callbackUrl ? { callback_url: callbackUrl } : {}),
  };
}

/**
 * Which upstream task makes a digital-human.generations video: a request video_url is lip-synced
 * (Lite or Basic by the model); otherwise the resource's trained upstream avatar speaks the audio;
 * a resource made without an upstream avatar has its source video lip-synced instead.
 */
export type GenerationPlan =
  | { task: 'avatar_video'; upstreamResourceId: string }
  | { task: 'lip_sync'; videoRef: string };

export function generationPlan(input: GenerationInput): GenerationPlan {
  if (input.video_url !== undefined) return { task: 'lip_sync', videoRef: input.video_url };
  const { resource } = input;
  if (!resource) throw new TaskFailedError('the digital-human resource of the request is missing');
  if (resource.upstream_resource_id) return { task: 'avatar_video', upstreamResourceId: resource.upstream_resource_id };
  if (resource.source) return { task: 'lip_sync', videoRef: resource.source };
  throw new TaskFailedError(`digital-human resource ${resource.id} has neither an upstream avatar nor a source video`);
}

/**
 * The CVSubmitTask body of a generation. `dropped` names options set to something the chosen
 * task cannot honour (they are not sent).
 */
export function generationBody(
  plan: GenerationPlan,
  model: LiveModel,
  input: GenerationInput,
  urls: { audio: string; video?: string },
  callbackUrl: string | undefined,
): { body: Record<string, unknown>; dropped: string[] } {
  const mode = digitalHumanModeOf(model);
  const options = plan.task === 'avatar_video' ? AVATAR_VIDEO_OPTIONS : LIP_SYNC_OPTIONS[mode];
  const body = plan.task === 'avatar_video'
    ? { req_key: AVATAR_VIDEO_REQ_KEY, resource_id: plan.upstreamResourceId, audio_url: urls.audio }
    : { req_key: LIP_SYNC_REQ_KEYS[mode], url: urls.video, pure_audio_url: urls.audio };
  const taken = new Set(options.map((rule) => rule.from));
  const dropped = fieldsSet(input, Object.keys(GENERATION_OPTION_DEFAULTS))
    .filter((name) => !taken.has(name) && input[name as keyof GenerationInput] !== GENERATION_OPTION_DEFAULTS[name]);
  return { body: { ...body, ...mapFields(input, options), ...(callbackUrl ? { callback_url: callbackUrl } : {}) }, dropped };
}

/** Success code of the visual API's envelope `{code, message, data, request_id, …}`. */
const OK = 10_000;
/** Codes that mean "busy, ask again": QPS, concurrency, internal errors. */
const BUSY = new Set([50_429, 50_430, 50_500, 50_501]);

/** Checks the envelope of a reply: a code other than OK fails the task with the upstream's message. */
function checkEnvelope(reply: unknown, call: string): void {
  const { code, message } = readReply(VisualEnvelope, reply, 'volcengine');
  if (code !== OK) throw new TaskFailedError(`volcengine refused ${call} (code ${code})`, message ?? JSON.stringify(reply).slice(0, 2000));
}

/** The task id of a CVSubmitTask reply. */
export function submittedTaskId(reply: unknown): string {
  checkEnvelope(reply, 'the task submission');
  return readReply(VisualSubmitted, reply, 'volcengine').data.task_id;
}

export type VisualTaskState =
  | { state: 'running'; progress: number; message: string }
  | { state: 'failed'; message: string; original: string }
  | { state: 'succeeded'; data: ResultData; respData: RespData };

/** resp_data, which comes as a JSON string (sometimes as an object). */
function respDataOf(raw: unknown): RespData {
  if (raw == null || raw === '') return {};
  let parsed = raw;
  if (typeof raw === 'string') {
    try {
      parsed = JSON.parse(raw);
    } catch {
      throw new TaskFailedError('volcengine answered resp_data that is not JSON', raw.slice(0, 2000));
    }
  }
  return readReply(VisualRespData, parsed, 'volcengine', '/data/resp_data');
}

/** A CVGetResult reply: in_queue, generating, done (which may still be a failure), not_found, expired. */
export function resultState(reply: unknown): VisualTaskState {
  if (BUSY.has(readReply(VisualEnvelope, reply, 'volcengine').code)) return { state: 'running', progress: 0, message: 'upstream busy' };
  checkEnvelope(reply, 'the task query');
  const { data } = readReply(VisualResult, reply, 'volcengine');
  const respData = respDataOf(data.resp_data);
  switch (data.status) {
    case 'in_queue':
      return { state: 'running', progress: 10, message: 'queued upstream' };
    case 'generating':
      return { state: 'running', progress: respData.progress != null ? Math.max(10, respData.progress) : 50, message: 'generating' };
    case 'done': {
      const resultCode = respData.code;
      if (resultCode !== undefined && resultCode !== 0 && resultCode !== OK) {
        return { state: 'failed', message: `the volcengine task failed (code ${resultCode})`, original: respData.msg ?? JSON.stringify(respData).slice(0, 2000) };
      }
      return { state: 'succeeded', data, respData };
    }
    case 'not_found':
    case 'expired':
      return { state: 'failed', message: `the volcengine task is ${data.status}`, original: `task status ${data.status}` };
    default:
      throw new TaskFailedError('volcengine answered the task query with an unknown status', JSON.stringify(reply).slice(0, 2000));
  }
}

/** The trained avatar's id in a finished training task. */
export function trainedResourceId(respData: RespData): string {
  const id = respData.resource_id;
  if (!id) throw new TaskFailedError('volcengine finished the avatar training without a resource_id', JSON.stringify(respData).slice(0, 2000));
  return id;
}

/** The video URL of a finished video task: the docs disagree on where it sits, so every known place is read. */
export function resultVideoUrl(done: { data: ResultData; respData: RespData }): string {
  const url = done.data.url || done.respData.vid?.url || done.data.video_url;
  if (!url) throw new TaskFailedError('volcengine finished the video task without a video URL', JSON.stringify(done.data).slice(0, 2000));
  return url;
}

const VIDEO_EXTENSIONS: Record<string, string> = { 'video/webm': 'webm', 'video/quicktime': 'mov', 'video/x-matroska': 'mkv', 'video/x-msvideo': 'avi' };

/** The create task's output: the source video (kept as the owner's asset), its playback data and the upstream avatar id. */
export function createOutput(source: { data: Buffer; mimeType: string }, video: VideoInput, upstreamResourceId: string, taskId: string): GenerationOutput {
  const extra: DigitalHumanCreateExtra = {
    video: { width: video.width, height: video.height, fps: video.fps, duration_seconds: video.durationSeconds, has_audio: video.hasAudio },
    upstream_resource_id: upstreamResourceId,
  };
  const mimeType = source.mimeType.startsWith('video/') ? source.mimeType : 'video/mp4';
  return {
    files: [{
      type: 'video',
      data: source.data,
      fileName: `${taskId}-source.${VIDEO_EXTENSIONS[mimeType] ?? 'mp4'}`,
      mimeType,
      role: SOURCE_VIDEO_ROLE,
      mediaSize: { type: 'video', width: video.width, height: video.height, status: 1 },
      hasAudio: video.hasAudio,
    }],
    extra: { ...extra },
  };
}

/** The generation's output: the lip-synced video. */
export function generationOutput(data: Buffer, video: VideoInput, reqKey: string, upstreamTaskId: string): GenerationOutput {
  return {
    files: [{ type: 'video', data, fileName: 'digital-human.mp4', mimeType: 'video/mp4', mediaSize: { type: 'video', width: video.width, height: video.height, status: 1 }, hasAudio: video.hasAudio }],
    extra: { req_key: reqKey, upstream_task_id: upstreamTaskId },
  };
}
