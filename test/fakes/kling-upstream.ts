import { createHmac, timingSafeEqual } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { RecordingUpstream, sendBytes, sendJson, type RecordedRequest } from './recording-upstream.ts';
import { sampleMp4 } from './upstream-media.ts';

export const KLING_ACCESS_KEY = 'AkTestAccessKey0001';
export const KLING_SECRET_KEY = 'SkTestSecretKey0001';

/** Size of the fake's videos. */
export const KLING_VIDEO_SIZE = { width: 48, height: 48 };

const FAMILIES = ['text2video', 'image2video', 'omni-video'];

interface KlingTask {
  id: string;
  family: string;
  body: Record<string, unknown>;
  polls: number;
  createdAt: number;
}

/** The claims of a valid token, or the Kling code of what is wrong with it (1001 to 1004). */
export function verifyToken(header: string | undefined, secretKey: string, nowSeconds = Math.floor(Date.now() / 1000)): { claims: Record<string, unknown> } | { code: number; message: string } {
  if (!header) return { code: 1001, message: 'Authorization is empty' };
  const token = /^Bearer (.+)$/.exec(header)?.[1];
  const parts = token?.split('.');
  if (!parts || parts.length !== 3) return { code: 1002, message: 'Authorization is invalid' };
  const [head, body, signature] = parts as [string, string, string];
  const expected = createHmac('sha256', secretKey).update(`${head}.${body}`).digest();
  const given = Buffer.from(signature, 'base64url');
  let claims: Record<string, unknown>;
  try {
    const alg = (JSON.parse(Buffer.from(head, 'base64url').toString('utf8')) as { alg?: unknown }).alg;
    claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Record<string, unknown>;
    if (alg !== 'HS256' || given.length !== expected.length || !timingSafeEqual(given, expected)) return { code: 1002, message: 'Authorization is invalid' };
  } catch {
    return { code: 1002, message: 'Authorization is invalid' };
  }
  if (typeof claims.nbf === 'number' && nowSeconds < claims.nbf) return { code: 1003, message: 'Authorization is not active' };
  if (typeof claims.exp !== 'number' || nowSeconds >= claims.exp) return { code: 1004, message: 'Authorization is expired' };
  return { claims };
}

/**
 * Kling's video API as its documentation describes it: POST /v1/videos/{text2video,
 * image2video, omni-video} with a Bearer HS256 JWT (iss = the access key, signed with the secret
 * key; the 1001 to 1004 codes for a missing, bad, early or expired token) answers the task in
 * the `{code, message, request_id, data}` envelope; GET …/{task_id} walks it through `statuses`
 * and, on `succeed`, points task_result.videos[0].url at an MP4 this server serves (with sound
 * when `sound` is on). Records every request.
 */
export class KlingUpstream extends RecordingUpstream {
  statuses = ['submitted', 'processing', 'succeed'];
  /** Keeps every task `submitted` while true. */
  holding = false;
  failureMessage = 'Failure to pass the risk control system';
  /** HTTP statuses answered (with their Kling codes) to the next create calls before one is accepted. */
  createErrors: number[] = [];
  readonly tasks = new Map<string, KlingTask>();
  /** The iss claim of every token accepted. */
  readonly issuers: string[] = [];

  static start(): Promise<KlingUpstream> {
    return new KlingUpstream().listen();
  }

  /** Task creations received (any family). */
  get creates(): RecordedRequest[] {
    return this.requests.filter((r) => r.method === 'POST' && FAMILIES.some((f) => r.path === `/v1/videos/${f}`));
  }

  /** Task queries received. */
  get queries(): RecordedRequest[] {
    return this.requests.filter((r) => r.method === 'GET' && FAMILIES.some((f) => r.path.startsWith(`/v1/videos/${f}/`)));
  }

  private envelope(code: number, message: string, data?: unknown) {
    return { code, message, request_id: `req-${this.requests.length}`, ...(data !== undefined ? { data } : {}) };
  }

  protected async handle(req: RecordedRequest, res: ServerResponse): Promise<void> {
    if (req.path.startsWith('/cdn/')) return this.serveVideo(req, res);
    const auth = verifyToken(req.headers.authorization, KLING_SECRET_KEY);
    if ('code' in auth) return sendJson(res, 401, this.envelope(auth.code, auth.message));
    if (auth.claims.iss !== KLING_ACCESS_KEY) return sendJson(res, 401, this.envelope(1000, 'Authentication failed'));
    this.issuers.push(auth.claims.iss);
    const [, , , family, id] = req.path.split('/');
    if (!family || !FAMILIES.includes(family)) return sendJson(res, 404, this.envelope(1202, 'invalid method'));
    if (req.method === 'POST' && id === undefined) return this.create(family, req, res);
    const task = id ? this.tasks.get(decodeURIComponent(id)) : undefined;
    if (req.method !== 'GET' || !task || task.family !== family) return sendJson(res, 404, this.envelope(1203, 'task not found'));
    const status = this.holding ? 'submitted' : this.statuses[Math.min(task.polls, this.statuses.length - 1)]!;
    if (!this.holding) task.polls++;
    sendJson(res, 200, this.envelope(0, 'SUCCEED', this.taskObject(task, status)));
  }

  private create(family: string, req: RecordedRequest, res: ServerResponse): void {
    const status = this.createErrors.shift();
    if (status !== undefined) {
      const [code, message] = status === 429 ? [1303, 'parallel task over resource pack limit'] : [5000, 'internal error'];
      return sendJson(res, status, this.envelope(code, message));
    }
    const body = req.json as Record<string, unknown> | undefined;
    const problem = !body ? 'body is not JSON'
      : family === 'image2video' && typeof body.image !== 'string' ? 'image is required'
        : family !== 'image2video' && typeof body.prompt !== 'string' ? 'prompt is required'
          : body.duration !== undefined && typeof body.duration !== 'string' ? 'duration must be a string'
            : body.mode !== undefined && body.mode !== 'std' && body.mode !== 'pro' ? 'mode must be std or pro'
              : undefined;
    if (problem) return sendJson(res, 400, this.envelope(1201, problem));
    const id = `8${String(this.tasks.size + 1).padStart(17, '0')}`;
    const createdAt = Date.now();
    this.tasks.set(id, { id, family, body: body!, polls: 0, createdAt });
    sendJson(res, 200, this.envelope(0, 'SUCCEED', { task_id: id, task_status: 'submitted', task_info: {}, created_at: createdAt, updated_at: createdAt }));
  }

  private taskObject(task: KlingTask, status: string): Record<string, unknown> {
    return {
      task_id: task.id,
      task_status: status,
      task_status_msg: status === 'failed' ? this.failureMessage : '',
      task_info: {},
      created_at: task.createdAt,
      updated_at: Date.now(),
      ...(status === 'succeed' ? {
        final_unit_deduction: task.body.mode === 'pro' ? '3.5' : '1.5',
        task_result: { videos: [{ id: `v-${task.id}`, url: `${this.url}/cdn/${task.id}.mp4`, duration: String(task.body.duration ?? '5') }] },
      } : {}),
    };
  }

  private async serveVideo(req: RecordedRequest, res: ServerResponse): Promise<void> {
    const task = this.tasks.get(req.path.slice('/cdn/'.length).replace(/\.mp4$/, ''));
    if (!task) return sendJson(res, 404, { error: 'NoSuchKey' });
    sendBytes(res, await sampleMp4({ ...KLING_VIDEO_SIZE, seconds: 1, audio: task.body.sound === 'on' }), 'video/mp4');
  }

  /** Lets a held task finish. */
  release(): void {
    this.holding = false;
  }
}
