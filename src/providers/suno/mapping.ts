import { fieldsSet, mapFields, type FieldRule } from '../field-mapping.ts';
import type { DownloadedFile } from '../adapter-support.ts';
import { TaskFailedError, TaskRejectedError, type GeneratedFile, type GenerationOutput, type TaskInputs } from '../spec.ts';
import { readReply } from '../upstream-reply.ts';
import { SunoEnvelope, SunoRecord, SunoSubmitted, type SunoRecordData } from './reply-schemas.ts';

/** Weights go upstream with two decimals, as the upstream documents them. */
const twoDecimals = (value: unknown) => Math.round(Number(value) * 100) / 100;
/** The spec accepts an empty negativeTags; the upstream gets none then. */
const nonEmpty = (value: unknown) => (value === '' ? undefined : value);

/** Fields sent in both modes. */
const COMMON_FIELDS: FieldRule[] = [
  { from: 'prompt', to: 'prompt' },
  { from: 'negativeTags', to: 'negativeTags', convert: nonEmpty },
  { from: 'styleWeight', to: 'styleWeight', convert: twoDecimals },
  { from: 'weirdnessConstraint', to: 'weirdnessConstraint', convert: twoDecimals },
  { from: 'audioWeight', to: 'audioWeight', convert: twoDecimals },
];

/** Fields the upstream reads in custom mode only (in description mode it wants them empty). */
const CUSTOM_MODE_FIELDS: FieldRule[] = [
  { from: 'tags', to: 'style' },
  { from: 'title', to: 'title' },
  { from: 'vocalGender', to: 'vocalGender' },
];

/** Longest prompt in description mode (customMode false). */
const DESCRIPTION_PROMPT_MAX = 500;

/** Length limits of custom mode, per upstream model. */
function customLimits(model: string): { prompt: number; tags: number; title: number } {
  return {
    prompt: model === 'V4' ? 3000 : 5000,
    tags: model === 'V4' ? 200 : 1000,
    title: model === 'V4' || model === 'V4_5ALL' ? 80 : 100,
  };
}

/** The POST /api/v1/generate body. */
export interface SunoGenerateBody {
  customMode: boolean;
  instrumental: boolean;
  model: string;
  callBackUrl: string;
  [field: string]: unknown;
}

/** A song request as its service stored it. */
export type SongInput = TaskInputs['song.generations'];

/** The text fields the limits apply to; an absent title counts as empty. */
function text(input: SongInput, field: 'prompt' | 'tags' | 'title'): string {
  return input[field] ?? '';
}

/**
 * The generate body of a song.generations request (spec names: makeInstrumental → instrumental,
 * tags → style), checked against the upstream's required fields and length limits per mode.
 * `dropped` names the fields the upstream ignores in description mode.
 */
export function generateBody(input: SongInput, model: string, callBackUrl: string): { body: SunoGenerateBody; dropped: string[] } {
  const customMode = input.customMode === true;
  const instrumental = input.makeInstrumental === true;
  const prompt = text(input, 'prompt');
  if (customMode) {
    const limits = customLimits(model);
    const required = instrumental ? (['tags', 'title'] as const) : (['tags', 'title', 'prompt'] as const);
    for (const field of required) {
      if (text(input, field).trim() === '') throw new TaskRejectedError(`custom mode${instrumental ? ' with makeInstrumental' : ''} needs a non-empty ${field}`);
    }
    for (const field of ['prompt', 'tags', 'title'] as const) {
      const length = text(input, field).length;
      if (length > limits[field]) throw new TaskRejectedError(`${field} is ${length} characters; ${model} takes at most ${limits[field]} in custom mode`);
    }
    return {
      body: { customMode, instrumental, model, callBackUrl, ...mapFields(input, COMMON_FIELDS), ...mapFields(input, CUSTOM_MODE_FIELDS) },
      dropped: [],
    };
  }
  if (prompt.trim() === '') throw new TaskRejectedError('a song description (prompt) is needed when customMode is off');
  if (prompt.length > DESCRIPTION_PROMPT_MAX) {
    throw new TaskRejectedError(`prompt is ${prompt.length} characters; without customMode the upstream takes at most ${DESCRIPTION_PROMPT_MAX}`);
  }
  return {
    body: { customMode, instrumental, model, callBackUrl, ...mapFields(input, COMMON_FIELDS) },
    dropped: fieldsSet(input, CUSTOM_MODE_FIELDS.map((rule) => rule.from)).filter((field) => input[field as keyof SongInput] !== ''),
  };
}

/** The upstream task id from a generate reply `{code: 200, msg, data: {taskId}}`. */
export function submittedTaskId(reply: unknown): string {
  const { code, msg } = readReply(SunoEnvelope, reply, 'suno');
  if (code !== 200) throw new TaskFailedError(`suno refused the song request (code ${code})`, msg ?? JSON.stringify(reply));
  return readReply(SunoSubmitted, reply, 'suno').data.taskId;
}

/** One generated track of a record-info reply (`data.response.sunoData[]`). */
export interface SunoTrack {
  id: string;
  audioUrl: string;
  imageUrl?: string;
  title?: string;
  tags?: string;
  duration?: number;
  modelName?: string;
}

export type SunoTaskState =
  | { state: 'running'; progress: number; message: string }
  | { state: 'failed'; message: string; original: string }
  | { state: 'succeeded'; tracks: SunoTrack[] };

/** Progress shown for the upstream's intermediate statuses. */
const RUNNING: Record<string, { progress: number; message: string }> = {
  PENDING: { progress: 10, message: 'queued upstream' },
  TEXT_SUCCESS: { progress: 40, message: 'lyrics written' },
  FIRST_SUCCESS: { progress: 70, message: 'first track ready' },
};

/** Why a task ended in each failure status. */
const FAILED: Record<string, string> = {
  CREATE_TASK_FAILED: 'suno could not create the song task',
  GENERATE_AUDIO_FAILED: 'suno could not generate the song audio',
  CALLBACK_EXCEPTION: 'suno failed while calling back',
  SENSITIVE_WORD_ERROR: 'suno refused the request for sensitive words',
};

/** The tracks of a record once every one has its audio URL. */
function completeTracks(data: SunoRecordData): SunoTrack[] | undefined {
  const tracks = data.response?.sunoData;
  if (!tracks?.length || !tracks.every((t) => t.audioUrl)) return undefined;
  return tracks.map((t) => ({
    id: t.id,
    audioUrl: t.audioUrl!,
    ...(t.imageUrl != null ? { imageUrl: t.imageUrl } : {}),
    ...(t.title != null ? { title: t.title } : {}),
    ...(t.tags != null ? { tags: t.tags } : {}),
    ...(t.duration != null ? { duration: t.duration } : {}),
    ...(t.modelName != null ? { modelName: t.modelName } : {}),
  }));
}

/** Reads a record-info reply `{code, msg, data: {status, response: {sunoData}, errorCode, errorMessage}}`. */
export function taskState(reply: unknown): SunoTaskState {
  if (readReply(SunoEnvelope, reply, 'suno').code !== 200) throw new TaskFailedError('suno answered an unexpected task record', JSON.stringify(reply).slice(0, 2000));
  const { data } = readReply(SunoRecord, reply, 'suno');
  const { status } = data;
  if (status === 'SUCCESS') {
    const tracks = completeTracks(data);
    if (!tracks) throw new TaskFailedError('suno reported success without the tracks audio URLs', JSON.stringify(reply).slice(0, 2000));
    return { state: 'succeeded', tracks };
  }
  // The callback address may be a placeholder (see the adapter): a failed callback of a finished song still delivers the song.
  if (status === 'CALLBACK_EXCEPTION') {
    const tracks = completeTracks(data);
    if (tracks) return { state: 'succeeded', tracks };
  }
  const failure = FAILED[status] ?? (/(FAILED|ERROR|EXCEPTION)$/.test(status) ? `suno task ended with ${status}` : undefined);
  if (failure) {
    const detail = data.errorMessage || status;
    return { state: 'failed', message: failure, original: data.errorCode != null ? `${detail} (errorCode ${data.errorCode})` : detail };
  }
  return { state: 'running', ...(RUNNING[status] ?? { progress: 10, message: status.toLowerCase() }) };
}

const IMAGE_EXTENSIONS: Record<string, string> = { 'image/png': 'png', 'image/webp': 'webp', 'image/jpeg': 'jpg' };

/**
 * The song task's outputs: each track's audio (in upstream order), then its cover picture when it
 * has one; track details (duration in seconds, title, tags) go in `extra.tracks`.
 */
export function songOutput(tracks: SunoTrack[], audio: DownloadedFile[], covers: (DownloadedFile | undefined)[]): GenerationOutput {
  const files: GeneratedFile[] = audio.map((file, i) => ({
    type: 'audio',
    data: file.data,
    fileName: `song-${i + 1}.mp3`,
    mimeType: file.mimeType.startsWith('audio/') ? file.mimeType : 'audio/mpeg',
  }));
  covers.forEach((cover, i) => {
    if (!cover) return;
    files.push({ type: 'image', role: 'cover', data: cover.data, fileName: `cover-${i + 1}.${IMAGE_EXTENSIONS[cover.mimeType] ?? 'jpg'}`, mimeType: IMAGE_EXTENSIONS[cover.mimeType] ? cover.mimeType : 'image/jpeg' });
  });
  return {
    files,
    extra: {
      tracks: tracks.map((t) => ({
        id: t.id,
        ...(t.title !== undefined ? { title: t.title } : {}),
        ...(t.tags !== undefined ? { tags: t.tags } : {}),
        ...(t.duration !== undefined ? { duration: t.duration } : {}),
        ...(t.modelName !== undefined ? { model_name: t.modelName } : {}),
      })),
    },
  };
}
