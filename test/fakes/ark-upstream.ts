import type { ServerResponse } from 'node:http';
import { RecordingUpstream, sendBytes, sendJson, type RecordedRequest } from './recording-upstream.ts';
import { sampleMp4 } from './upstream-media.ts';

/** Size of the fake's videos. */
export const VIDEO_SIZE = { width: 64, height: 36 };
/** Tokens the fake reports per video. */
export const VIDEO_TOKENS = 108_900;

const TASKS_PATH = '/api/v3/contents/generations/tasks';

interface ArkTask {
  id: string;
  body: Record<string, unknown>;
  polls: number;
  createdAt: number;
}

/**
 * Volcengine Ark's content generation tasks as the SDK defines them: POST
 * /api/v3/contents/generations/tasks (Bearer key) answers `{id}`; GET …/tasks/{id} walks the task
 * through `statuses` and, on success, points content.video_url at an MP4 this server serves (with
 * an audio track when generate_audio was asked). Errors use Ark's `{error: {code, message}}`.
 * Records every request.
 */
export class ArkUpstream extends RecordingUpstream {
  statuses = ['queued', 'running', 'succeeded'];
  holding = false;
  failure = { code: 'OutputVideoSensitiveContentDetected', message: 'The request failed because the output video may contain sensitive information. Request id: 021746' };
  /** HTTP statuses answered to the next create calls before one is accepted. */
  createErrors: number[] = [];
  readonly tasks = new Map<string, ArkTask>();

  private constructor(readonly apiKey: string) {
    super();
  }

  static start(apiKey: string): Promise<ArkUpstream> {
    return new ArkUpstream(apiKey).listen();
  }

  /** Task creations received. */
  get creates(): RecordedRequest[] {
    return this.requests.filter((r) => r.method === 'POST' && r.path === TASKS_PATH);
  }

  /** Task queries received. */
  get queries(): RecordedRequest[] {
    return this.requests.filter((r) => r.method === 'GET' && r.path.startsWith(`${TASKS_PATH}/`));
  }

  protected async handle(req: RecordedRequest, res: ServerResponse): Promise<void> {
    if (req.path.startsWith('/tos/')) return this.serveVideo(req, res);
    if (req.headers.authorization !== `Bearer ${this.apiKey}`) {
      return sendJson(res, 401, { error: { code: 'AuthenticationError', message: 'the API key or AK/SK in the request is missing or invalid. Request id: 021747', param: '', type: 'Unauthorized' } });
    }
    if (req.method === 'POST' && req.path === TASKS_PATH) return this.create(req, res);
    const id = req.method === 'GET' && req.path.startsWith(`${TASKS_PATH}/`) ? decodeURIComponent(req.path.slice(TASKS_PATH.length + 1)) : undefined;
    const task = id ? this.tasks.get(id) : undefined;
    if (!task) return sendJson(res, 404, { error: { code: 'ResourceNotFound', message: `the task ${id} does not exist`, param: 'id', type: 'NotFound' } });
    const status = this.holding ? 'queued' : this.statuses[Math.min(task.polls, this.statuses.length - 1)]!;
    if (!this.holding) task.polls++;
    sendJson(res, 200, this.taskObject(task, status));
  }

  private create(req: RecordedRequest, res: ServerResponse): void {
    const status = this.createErrors.shift();
    if (status !== undefined) {
      return sendJson(res, status, { error: { code: status === 429 ? 'RateLimitExceeded.EndpointRPMExceeded' : 'InternalServiceError', message: 'try again later', param: '', type: status === 429 ? 'TooManyRequests' : 'InternalServerError' } });
    }
    const body = req.json as Record<string, unknown> | undefined;
    if (typeof body?.model !== 'string' || !Array.isArray(body.content) || body.content.length === 0) {
      return sendJson(res, 400, { error: { code: 'MissingParameter', message: 'the request is missing model or content', param: 'content', type: 'BadRequest' } });
    }
    const id = `cgt-20250507173314-${(this.tasks.size + 1).toString(36).padStart(5, 'x')}`;
    this.tasks.set(id, { id, body, polls: 0, createdAt: Math.floor(Date.now() / 1000) });
    sendJson(res, 200, { id });
  }

  private taskObject(task: ArkTask, status: string): Record<string, unknown> {
    const b = task.body;
    return {
      id: task.id,
      model: b.model,
      status,
      error: status === 'failed' ? this.failure : null,
      ...(status === 'succeeded' ? {
        content: { video_url: `${this.url}/tos/${task.id}.mp4?X-Tos-Expires=86400&X-Tos-Signature=abc` },
        usage: { completion_tokens: VIDEO_TOKENS, total_tokens: VIDEO_TOKENS },
      } : {}),
      created_at: task.createdAt,
      updated_at: Math.floor(Date.now() / 1000),
      seed: typeof b.seed === 'number' && b.seed >= 0 ? b.seed : 58_913,
      resolution: b.resolution ?? '720p',
      ratio: b.ratio ?? '16:9',
      duration: b.duration ?? 5,
      framespersecond: b.framespersecond ?? 24,
      service_tier: 'default',
      execution_expires_after: 172_800,
    };
  }

  private async serveVideo(req: RecordedRequest, res: ServerResponse): Promise<void> {
    const task = this.tasks.get(req.path.slice('/tos/'.length).replace(/\.mp4$/, ''));
    if (!task || req.query['X-Tos-Signature'] !== 'abc') return sendJson(res, 403, { error: 'AccessDenied' });
    sendBytes(res, await sampleMp4({ ...VIDEO_SIZE, seconds: 1, audio: task.body.generate_audio === true }), 'video/mp4');
  }
}
