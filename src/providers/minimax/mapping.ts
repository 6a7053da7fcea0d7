import { mapFields, type FieldRule } from '../field-mapping.ts';
import { TaskFailedError, type GenerationOutput, type TaskInputs } from '../spec.ts';
import type { Usage } from '../spec.ts';
import { readReply } from '../upstream-reply.ts';
import { MinimaxAsyncSubmitted, MinimaxAsyncTask, MinimaxBaseResp, MinimaxSpeechAudio, MinimaxSpeechInfo, MinimaxUploaded } from './reply-schemas.ts';

/**
 * Longest text sent to the synchronous call; longer texts (and uploaded text files) go through
 * the asynchronous long-text API. MiniMax documents the synchronous limit as 10,000 characters.
 */
export const DEFAULT_SYNC_TEXT_LIMIT = 10_000;

/** The speech fields that make up voice_setting (same names upstream). */
const VOICE_FIELDS: FieldRule[] = ['voice_id', 'speed', 'vol', 'pitch', 'emotion'].map((name) => ({ from: name, to: name }));

/** The audio the gateway asks for: mono, 32 kHz, 128 kbit/s, in the request's format (default MP3). */
const AUDIO = { sampleRate: 32_000, bitrate: 128_000, channel: 1 } as const;
const DEFAULT_FORMAT = 'mp3';
const MIME_TYPES: Record<string, string> = { mp3: 'audio/mpeg', wav: 'audio/wav', flac: 'audio/flac', pcm: 'audio/L16' };

/** A speech request as its service stored it. */
export type SpeechInput = TaskInputs['speech.generations'];

/** The audio format of a request (the optional `format`). */
export function formatOf(input: SpeechInput): string {
  return input.format ?? DEFAULT_FORMAT;
}

/** Whether a request goes through the long-text API: a text file, or text over the sync limit. */
export function runsAsync(input: SpeechInput, syncTextLimit: number): boolean {
  return input.text_file_id !== undefined || [...input.text].length > syncTextLimit;
}

/** POST /v1/t2a_v2 body. The reply's audio comes hex-encoded (the default output format). */
export function syncBody(input: SpeechInput, model: string): Record<string, unknown> {
  return {
    model,
    text: input.text,
    stream: false,
    voice_setting: mapFields(input, VOICE_FIELDS),
    audio_setting: { sample_rate: AUDIO.sampleRate, bitrate: AUDIO.bitrate, format: formatOf(input), channel: AUDIO.channel },
  };
}

/**
 * POST /v1/t2a_async_v2 body: the text file uploaded to MiniMax (`textFileId`) when the request
 * has one, else the text; the sample-rate key differs from the sync call's.
 */
export function asyncBody(input: SpeechInput, model: string, textFileId: UpstreamId | undefined): Record<string, unknown> {
  return {
    model,
    ...(textFileId !== undefined ? { text_file_id: textFileId } : { text: input.text }),
    voice_setting: mapFields(input, VOICE_FIELDS),
    audio_setting: { audio_sample_rate: AUDIO.sampleRate, bitrate: AUDIO.bitrate, format: formatOf(input), channel: AUDIO.channel },
  };
}

/** MiniMax ids are integers in its JSON; they go back exactly as they came. */
export type UpstreamId = number | string;

/** The file id of a /v1/files/upload reply `{file: {file_id, …}, base_resp}`. */
export function uploadedFileId(reply: unknown): UpstreamId {
  checkBaseResp(reply, 'the text file upload');
  return readReply(MinimaxUploaded, reply, 'minimax').file.file_id;
}

/** MiniMax answers errors with HTTP 200 and a non-zero base_resp.status_code: the task fails with status_msg. */
export function checkBaseResp(reply: unknown, call: string): void {
  const base = readReply(MinimaxBaseResp, reply, 'minimax').base_resp;
  if (base.status_code !== 0) throw new TaskFailedError(`minimax refused ${call} (status_code ${base.status_code})`, base.status_msg || `status_code ${base.status_code}`);
}

/** Usage of a synthesis: MiniMax bills characters, reported as input tokens. */
export function usageOf(characterCount: number): Usage {
  return { input_tokens: characterCount, output_tokens: 0, total_tokens: characterCount };
}

/** The audio of a sync reply: hex bytes, or a URL to fetch when the upstream hands out links. */
export function syncAudio(reply: unknown): { audio: Buffer } | { url: string } {
  checkBaseResp(reply, 'the speech request');
  const { audio } = readReply(MinimaxSpeechAudio, reply, 'minimax').data;
  if (/^https?:\/\//.test(audio)) return { url: audio };
  if (!/^(?:[0-9a-f]{2})+$/i.test(audio)) throw new TaskFailedError('minimax answered the speech request with audio that is not hex', audio.slice(0, 200));
  return { audio: Buffer.from(audio, 'hex') };
}

/** extra_info of a sync reply: characters billed and the audio's length. */
export function syncInfo(reply: unknown): { characters: number; audioLengthMs?: number } {
  const info = readReply(MinimaxSpeechInfo, reply, 'minimax').extra_info;
  return {
    characters: info?.usage_characters ?? 0,
    ...(info?.audio_length != null ? { audioLengthMs: info.audio_length } : {}),
  };
}

/** Upstream reference of a long-text task, saved for a resumed run. */
export type MinimaxAsyncRef = { task_id: string; usage_characters: number };

/** The task of a t2a_async_v2 reply `{task_id, task_token, file_id, usage_characters, base_resp}`. */
export function asyncSubmitted(reply: unknown): MinimaxAsyncRef {
  checkBaseResp(reply, 'the long-text speech request');
  const body = readReply(MinimaxAsyncSubmitted, reply, 'minimax');
  return { task_id: String(body.task_id), usage_characters: body.usage_characters ?? 0 };
}

export type MinimaxAsyncState =
  | { state: 'running' }
  | { state: 'failed'; message: string; original: string }
  | { state: 'succeeded'; fileId: string };

/** A t2a_async_query_v2 reply `{task_id, status, file_id, base_resp}`; statuses are compared without case. */
export function asyncState(reply: unknown): MinimaxAsyncState {
  checkBaseResp(reply, 'the speech task query');
  const body = readReply(MinimaxAsyncTask, reply, 'minimax');
  const status = body.status.toLowerCase();
  if (status === 'processing') return { state: 'running' };
  if (status === 'success') {
    if (body.file_id == null) throw new TaskFailedError('minimax reported success without file_id', JSON.stringify(reply).slice(0, 2000));
    return { state: 'succeeded', fileId: String(body.file_id) };
  }
  if (status === 'failed' || status === 'expired') return { state: 'failed', message: `minimax speech task ${status}`, original: `task status ${body.status}` };
  throw new TaskFailedError('minimax answered the speech task query with an unknown status', JSON.stringify(reply).slice(0, 2000));
}

/** Regular files of a tar archive. */
function tarEntries(archive: Buffer): { name: string; data: Buffer }[] {
  const entries: { name: string; data: Buffer }[] = [];
  const field = (header: Buffer, start: number, length: number) => header.subarray(start, start + length).toString('utf8').replace(/\0[\s\S]*$/, '');
  for (let offset = 0; offset + 512 <= archive.length;) {
    const header = archive.subarray(offset, offset + 512);
    if (header.every((byte) => byte === 0)) break;
    const size = parseInt(field(header, 124, 12).trim() || '0', 8);
    const prefix = field(header, 345, 155);
    const name = (prefix ? `${prefix}/` : '') + field(header, 0, 100);
    const type = String.fromCharCode(header[156]!);
    offset += 512;
    if (type === '0' || type === '\0') entries.push({ name, data: archive.subarray(offset, offset + size) });
    offset += Math.ceil(size / 512) * 512;
  }
  return entries;
}

/**
 * The audio of a long-text result file. Client code shows the file as a tar archive holding the
 * audio next to subtitles and metadata; a bare audio file is taken as it is.
 */
export function asyncAudio(file: Buffer, format: string): Buffer {
  const isTar = file.length >= 512 && file.subarray(257, 262).toString('latin1') === 'ustar';
  if (!isTar) return file;
  const audio = tarEntries(file).find((entry) => entry.name.toLowerCase().endsWith(`.${format}`));
  if (!audio) throw new TaskFailedError(`minimax's result archive holds no .${format} file`, tarEntries(file).map((e) => e.name).join(', '));
  return audio.data;
}

/** The speech task's output: one audio file and the characters billed. */
export function speechOutput(audio: Buffer, format: string, characterCount: number, extra: Record<string, unknown>): GenerationOutput {
  return {
    files: [{ type: 'audio', data: audio, fileName: `speech.${format}`, mimeType: MIME_TYPES[format] ?? 'application/octet-stream' }],
    usage: usageOf(characterCount),
    extra: { usage_characters: characterCount, ...extra },
  };
}
