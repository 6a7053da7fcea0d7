import type { ServerResponse } from 'node:http';
import { RecordingUpstream, sendBytes, sendJson, type RecordedRequest } from './recording-upstream.ts';
import { sampleMp3 } from './upstream-media.ts';

/** Seconds of the fake's synchronous and long-text audio. */
export const SYNC_SECONDS = 1.5;
export const ASYNC_SECONDS = 4;

const OK = { status_code: 0, status_msg: 'success' };

/** A tar archive (ustar) of regular files, as MiniMax packs long-text results. */
function tar(files: { name: string; data: Buffer }[]): Buffer {
  const parts: Buffer[] = [];
  for (const file of files) {
    const header = Buffer.alloc(512);
    header.write(file.name, 0, 100, 'utf8');
    header.write('0000644\0', 100, 'ascii');
    header.write('0000000\0', 108, 'ascii');
    header.write('0000000\0', 116, 'ascii');
    header.write(`${file.data.length.toString(8).padStart(11, '0')}\0`, 124, 'ascii');
    header.write(`${Math.floor(Date.now() / 1000).toString(8).padStart(11, '0')}\0`, 136, 'ascii');
    header.write('        ', 148, 'ascii');
    header.write('0', 156, 'ascii');
    header.write('ustar\0', 257, 'ascii');
    header.write('00', 263, 'ascii');
    let sum = 0;
    for (const byte of header) sum += byte;
    header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'ascii');
    parts.push(header, file.data, Buffer.alloc((512 - (file.data.length % 512)) % 512));
  }
  parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}

interface AsyncTask {
  taskId: number;
  fileId: number;
  polls: number;
}

/**
 * MiniMax T2A v2 as its docs describe it: errors are HTTP 200 with a non-zero
 * base_resp.status_code; sync audio comes hex-encoded; long text goes through a file upload
 * (multipart, purpose t2a_async_input), t2a_async_v2, the task query and retrieve_content, which
 * hands back a tar archive with the MP3 and its subtitles. Records every request.
 */
export class MinimaxUpstream extends RecordingUpstream {
  /** Statuses a long-text task reports on successive queries (the last one repeats). */
  statuses = ['Processing', 'Processing', 'Success'];
  /** While set, long-text tasks stay Processing. */
  holding = false;
  /** A base_resp error answered to the next sync calls. */
  syncError: { status_code: number; status_msg: string } | undefined;
  /** HTTP statuses answered to the next sync calls before one is served (e.g. 503, 429). */
  httpErrors: number[] = [];
  /** When set, sync calls never answer (a hung upstream). */
  hangSync = false;
  /** Text files uploaded, by file id. */
  readonly uploads = new Map<number, { purpose: string; fileName: string; text: string }>();
  readonly tasks = new Map<number, AsyncTask>();
  private nextId = 190_000_000_000_000;

  readonly apiKey: string;

  private constructor(apiKey: string) {
    super();
    this.apiKey = apiKey;
  }

  static start(apiKey: string): Promise<MinimaxUpstream> {
    return new MinimaxUpstream(apiKey).listen();
  }

  protected async handle(req: RecordedRequest, res: ServerResponse): Promise<void> {
    if (req.headers.authorization !== `Bearer ${this.apiKey}`) {
      return sendJson(res, 200, { base_resp: { status_code: 1004, status_msg: 'login fail: Please carry the API secret key in the Authorization field' } });
    }
    const route = `${req.method} ${req.path}`;
    if (route === 'POST /v1/t2a_v2') return this.synthesize(req, res);
    if (route === 'POST /v1/files/upload') return this.upload(req, res);
    if (route === 'POST /v1/t2a_async_v2') return this.submit(req, res);
    if (route === 'GET /v1/query/t2a_async_query_v2') return this.query(req, res);
    if (route === 'GET /v1/files/retrieve_content') return this.retrieve(req, res);
    sendJson(res, 404, { base_resp: { status_code: 404, status_msg: 'not found' } });
  }

  private async synthesize(req: RecordedRequest, res: ServerResponse): Promise<void> {
    if (this.hangSync) return;
    const status = this.httpErrors.shift();
    if (status !== undefined) return sendJson(res, status, { base_resp: { status_code: 1002, status_msg: 'rate limit' } });
    if (this.syncError) return sendJson(res, 200, { trace_id: 'trace-error', base_resp: this.syncError });
    const body = req.json as { text?: unknown; voice_setting?: { voice_id?: unknown } };
    if (typeof body?.text !== 'string' || typeof body.voice_setting?.voice_id !== 'string') {
      return sendJson(res, 200, { base_resp: { status_code: 2013, status_msg: 'invalid params, text and voice_setting.voice_id are required' } });
    }
    const audio = await sampleMp3(SYNC_SECONDS, 220);
    sendJson(res, 200, {
      data: { audio: audio.toString('hex'), status: 2, ced: '' },
      extra_info: {
        audio_length: SYNC_SECONDS * 1000,
        audio_sample_rate: 32000,
        audio_size: audio.length,
        bitrate: 128000,
        word_count: body.text.split(/\s+/).length,
        invisible_character_ratio: 0,
        usage_characters: [...body.text].length,
        audio_format: 'mp3',
        audio_channel: 1,
      },
      trace_id: 'trace-sync',
      base_resp: OK,
    });
  }

  private upload(req: RecordedRequest, res: ServerResponse): void {
    const file = req.files?.find((f) => f.field === 'file');
    const purpose = req.fields?.find(([name]) => name === 'purpose')?.[1];
    if (!file || purpose === undefined) return sendJson(res, 200, { base_resp: { status_code: 2013, status_msg: 'file and purpose are required' } });
    const fileId = this.nextId++;
    this.uploads.set(fileId, { purpose, fileName: file.fileName, text: file.data.toString('utf8') });
    sendJson(res, 200, { file: { file_id: fileId, bytes: file.data.length, created_at: Math.floor(Date.now() / 1000), filename: file.fileName, purpose }, base_resp: OK });
  }

  private submit(req: RecordedRequest, res: ServerResponse): void {
    const body = req.json as { text?: unknown; text_file_id?: unknown };
    let text: string | undefined;
    if (body?.text_file_id !== undefined) text = this.uploads.get(body.text_file_id as number)?.text;
    else if (typeof body?.text === 'string') text = body.text;
    if (text === undefined) return sendJson(res, 200, { base_resp: { status_code: 2013, status_msg: 'invalid params, text or a known text_file_id is required' } });
    const task: AsyncTask = { taskId: this.nextId++, fileId: this.nextId++, polls: 0 };
    this.tasks.set(task.taskId, task);
    sendJson(res, 200, { task_id: task.taskId, task_token: 'token-' + task.taskId, file_id: task.fileId, usage_characters: [...text].length, base_resp: OK });
  }

  private query(req: RecordedRequest, res: ServerResponse): void {
    const task = this.tasks.get(Number(req.query.task_id));
    if (!task) return sendJson(res, 200, { base_resp: { status_code: 1013, status_msg: 'task not found' } });
    const status = this.holding ? 'Processing' : this.statuses[Math.min(task.polls, this.statuses.length - 1)]!;
    if (!this.holding) task.polls++;
    sendJson(res, 200, { task_id: task.taskId, status, file_id: task.fileId, base_resp: OK });
  }

  private async retrieve(req: RecordedRequest, res: ServerResponse): Promise<void> {
    const task = [...this.tasks.values()].find((t) => String(t.fileId) === req.query.file_id);
    if (!task) return sendJson(res, 200, { base_resp: { status_code: 1013, status_msg: 'file not found' } });
    const archive = tar([
      { name: `${task.taskId}.mp3`, data: await sampleMp3(ASYNC_SECONDS, 330) },
      { name: `${task.taskId}.title`, data: Buffer.from(JSON.stringify([{ text: 'subtitle', time_begin: 0, time_end: ASYNC_SECONDS * 1000 }])) },
    ]);
    sendBytes(res, archive, 'application/x-tar');
  }
}
