import type { ServerResponse } from 'node:http';
import { RecordingUpstream, sendBytes, sendJson, type RecordedRequest } from './recording-upstream.ts';
import { sampleMp3, samplePicture } from './upstream-media.ts';

/** Seconds of each fake track. */
export const TRACK_SECONDS = [2, 3];

interface FakeTask {
  taskId: string;
  param: Record<string, unknown>;
  polls: number;
}

/**
 * A Suno-style music API shaped like sunoapi.org: POST /api/v1/generate (Bearer key) answers
 * `{code: 200, msg, data: {taskId}}`; GET /api/v1/generate/record-info walks each task through
 * `statuses` (one step per poll, the last one repeats) and lists two tracks whose audioUrl and
 * imageUrl this server serves. Records every request.
 */
export class SunoUpstream extends RecordingUpstream {
  /** Statuses a task reports on successive polls. */
  statuses = ['PENDING', 'TEXT_SUCCESS', 'FIRST_SUCCESS', 'SUCCESS'];
  /** Failure details reported with a failure status. */
  failure = { errorCode: 413, errorMessage: 'Song description contains artist name: Taylor Swift' };
  /** HTTP statuses answered to the next generate calls before one is accepted (e.g. 429, 503). */
  generateErrors: number[] = [];
  /** While set, tasks stay PENDING (the upstream is still working). */
  holding = false;
  readonly tasks = new Map<string, FakeTask>();

  readonly apiKey: string;

  private constructor(apiKey: string) {
    super();
    this.apiKey = apiKey;
  }

  static start(apiKey: string): Promise<SunoUpstream> {
    return new SunoUpstream(apiKey).listen();
  }

  protected async handle(req: RecordedRequest, res: ServerResponse): Promise<void> {
    if (req.path.startsWith('/files/')) return this.serveFile(req, res);
    if (req.headers.authorization !== `Bearer ${this.apiKey}`) return sendJson(res, 401, { code: 401, msg: 'You do not have access permissions', data: null });
    if (req.method === 'POST' && req.path === '/api/v1/generate') {
      const status = this.generateErrors.shift();
      if (status !== undefined) return sendJson(res, status, { code: status, msg: status === 429 ? 'Your call frequency is too high. Please try again later.' : 'Server busy' }, status === 429 ? { 'retry-after': '0' } : {});
      const body = req.json as Record<string, unknown>;
      if (typeof body?.callBackUrl !== 'string' || body.callBackUrl === '') return sendJson(res, 200, { code: 400, msg: 'callBackUrl cannot be empty', data: null });
      const taskId = `5c79${(this.tasks.size + 1).toString(16).padStart(28, '0')}`;
      this.tasks.set(taskId, { taskId, param: body, polls: 0 });
      return sendJson(res, 200, { code: 200, msg: 'success', data: { taskId } });
    }
    if (req.method === 'GET' && req.path === '/api/v1/generate/record-info') {
      const task = this.tasks.get(req.query.taskId ?? '');
      if (!task) return sendJson(res, 200, { code: 400, msg: 'taskId does not exist', data: null });
      const status = this.holding ? 'PENDING' : this.statuses[Math.min(task.polls, this.statuses.length - 1)]!;
      if (!this.holding) task.polls++;
      return sendJson(res, 200, { code: 200, msg: 'success', data: this.record(task, status) });
    }
    sendJson(res, 404, { code: 404, msg: 'not found' });
  }

  private record(task: FakeTask, status: string): Record<string, unknown> {
    const failed = !['PENDING', 'TEXT_SUCCESS', 'FIRST_SUCCESS', 'SUCCESS'].includes(status);
    const ready = status === 'SUCCESS' ? 2 : status === 'FIRST_SUCCESS' ? 1 : 0;
    const instrumental = task.param.instrumental === true;
    const sunoData = status === 'PENDING' || failed ? null : TRACK_SECONDS.map((seconds, i) => ({
      id: `${task.taskId}-${i}`,
      audioUrl: i < ready ? `${this.url}/files/${task.taskId}/${i}.mp3` : '',
      streamAudioUrl: `${this.url}/stream/${task.taskId}/${i}`,
      imageUrl: `${this.url}/files/${task.taskId}/${i}.png`,
      prompt: instrumental ? '' : `[Verse]\n${String(task.param.prompt ?? '')}`,
      modelName: 'chirp-v4-5',
      title: String(task.param.title ?? 'Untitled'),
      tags: String(task.param.style ?? 'pop'),
      createTime: '2025-01-01 00:00:00',
      duration: i < ready ? seconds : null,
    }));
    return {
      taskId: task.taskId,
      parentMusicId: '',
      param: JSON.stringify(task.param),
      response: { taskId: task.taskId, sunoData },
      status,
      type: 'GENERATE',
      errorCode: failed ? this.failure.errorCode : null,
      errorMessage: failed ? this.failure.errorMessage : null,
    };
  }

  private async serveFile(req: RecordedRequest, res: ServerResponse): Promise<void> {
    const match = /^\/files\/[^/]+\/(\d)\.(mp3|png)$/.exec(req.path);
    if (!match) return sendJson(res, 404, { code: 404, msg: 'no such file' });
    const index = Number(match[1]);
    if (match[2] === 'mp3') return sendBytes(res, await sampleMp3(TRACK_SECONDS[index]!, 440 + 110 * index), 'audio/mpeg');
    sendBytes(res, await samplePicture('png', { size: 16, colour: index === 0 ? '#ff0000' : '#0000ff' }), 'image/png');
  }
}
