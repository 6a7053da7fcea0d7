import { createHash, createHmac, randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { RecordingUpstream, sendBytes, sendJson, type RecordedRequest } from './recording-upstream.ts';
import { sampleMp4 } from './upstream-media.ts';

export const REGION = 'cn-north-1';
export const SERVICE = 'cv';
export const VERSION = '2022-08-31';
/** Size of the fake's result videos. */
export const RESULT_SIZE = { width: 96, height: 160 };

/** Fields each req_key requires, as the notes list them. */
const REQUIRED: Record<string, string[]> = {
  realman_avatar_training_task: ['video_url'],
  realman_avatar_creation_task: ['resource_id', 'audio_url'],
  realman_change_lips: ['url', 'pure_audio_url'],
  realman_change_lips_basic_chimera: ['url', 'pure_audio_url'],
};

interface VisualTask {
  taskId: string;
  reqKey: string;
  body: Record<string, unknown>;
  polls: number;
}

const hex = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();
const rfc3986 = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/**
 * Checks a request's signature the way Volcengine's gateway does: the canonical request is rebuilt
 * from what arrived (method, path, query re-encoded and sorted, the signed headers' received
 * values, the body's hash), signed with the key derived from the account's secret, and compared.
 * Answers the error code, or undefined when the signature holds.
 */
function signatureError(req: RecordedRequest, keys: Map<string, string>, now: number): { code: string; message: string } | undefined {
  const auth = /^HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$/.exec(String(req.headers.authorization ?? ''));
  if (!auth) return { code: 'MissingAuthenticationToken', message: 'the Authorization header is missing or malformed' };
  const [, accessKeyId, day, region, service, signedHeaders, signature] = auth as unknown as string[];
  const secret = keys.get(accessKeyId!);
  if (!secret) return { code: 'InvalidAccessKey', message: `the access key ${accessKeyId} does not exist` };
  if (region !== REGION || service !== SERVICE) return { code: 'InvalidCredential', message: `the credential scope ${region}/${service} is not ${REGION}/${SERVICE}` };
  const xDate = String(req.headers['x-date'] ?? '');
  const parsed = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(xDate);
  if (!parsed || xDate.slice(0, 8) !== day) return { code: 'InvalidTimestamp', message: 'X-Date is missing or does not match the credential date' };
  const at = Date.UTC(+parsed[1]!, +parsed[2]! - 1, +parsed[3]!, +parsed[4]!, +parsed[5]!, +parsed[6]!);
  if (Math.abs(now - at) > 15 * 60_000) return { code: 'RequestExpired', message: 'the request is signed more than 15 minutes away from now' };
  const names = signedHeaders!.split(';');
  for (const required of ['host', 'x-date', 'x-content-sha256']) if (!names.includes(required)) return { code: 'InvalidSignedHeaders', message: `${required} must be signed` };
  if (req.headers['x-content-sha256'] !== hex(req.body)) return { code: 'ContentSHA256Mismatch', message: 'X-Content-Sha256 is not the hash of the body' };
  const rawQuery = req.target.includes('?') ? req.target.slice(req.target.indexOf('?') + 1) : '';
  const query = rawQuery.split('&').filter(Boolean)
    .map((pair) => pair.split('=').map((part) => rfc3986(decodeURIComponent(part.replace(/\+/g, ' ')))).join('='))
    .sort()
    .join('&');
  const canonical = [
    req.method,
    req.path,
    query,
    names.map((name) => `${name}:${String(req.headers[name] ?? '').trim()}\n`).join(''),
    signedHeaders,
    hex(req.body),
  ].join('\n');
  const toSign = ['HMAC-SHA256', xDate, `${day}/${region}/${service}/request`, hex(canonical)].join('\n');
  const key = hmac(hmac(hmac(hmac(secret, day!), region!), service!), 'request');
  if (hmac(key, toSign).toString('hex') !== signature) return { code: 'SignatureDoesNotMatch', message: 'The request signature we calculated does not match the signature you provided.' };
  return undefined;
}

/**
 * Volcengine's visual API as the digital-human products use it: POST /?Action=CVSubmitTask and
 * /?Action=CVGetResult (Version 2022-08-31), every request signed (signature V4; a bad one gets the
 * gateway's 401 with ResponseMetadata.Error), answers in the `{code: 10000, data, …}` envelope,
 * tasks walking through `statuses`, resp_data as a JSON string, the result video URL in data.url,
 * data.video_url and resp_data.vid.url. Records every request.
 */
export class VolcHumanUpstream extends RecordingUpstream {
  statuses = ['in_queue', 'generating', 'done'];
  holding = false;
  /** When set, finished tasks report this failure in resp_data. */
  failure: { code: number; msg: string } | undefined;
  /** HTTP statuses answered to the next submits before one is taken (429 carries code 50429). */
  submitErrors: number[] = [];
  readonly tasks = new Map<string, VisualTask>();
  /** Requests refused for their signature. */
  readonly refused: { code: string; message: string }[] = [];
  private readonly keys = new Map<string, string>();

  private constructor(accessKeyId: string, secretAccessKey: string) {
    super();
    this.keys.set(accessKeyId, secretAccessKey);
  }

  static start(accessKeyId: string, secretAccessKey: string): Promise<VolcHumanUpstream> {
    return new VolcHumanUpstream(accessKeyId, secretAccessKey).listen();
  }

  /** API calls of one action, in order. */
  calls(action: string): RecordedRequest[] {
    return this.requests.filter((r) => r.query.Action === action);
  }

  private reply(res: ServerResponse, code: number, message: string, data: unknown, status = 200): void {
    sendJson(res, status, { code, message, data, request_id: randomBytes(8).toString('hex'), status: code, time_elapsed: '12.3ms' });
  }

  protected async handle(req: RecordedRequest, res: ServerResponse): Promise<void> {
    if (req.path.startsWith('/tos/')) return this.serveVideo(req, res);
    const meta = { RequestId: randomBytes(8).toString('hex'), Action: req.query.Action, Version: req.query.Version, Service: SERVICE, Region: REGION };
    const error = signatureError(req, this.keys, Date.now());
    if (error) {
      this.refused.push(error);
      return sendJson(res, 401, { ResponseMetadata: { ...meta, Error: { CodeN: 100010, Code: error.code, Message: error.message } } });
    }
    if (req.method !== 'POST' || req.path !== '/' || req.query.Version !== VERSION || !['CVSubmitTask', 'CVGetResult'].includes(req.query.Action ?? '')) {
      return sendJson(res, 404, { ResponseMetadata: { ...meta, Error: { CodeN: 100002, Code: 'InvalidActionOrVersion', Message: `Could not find operation ${req.query.Action} for version ${req.query.Version}` } } });
    }
    const body = (req.json ?? {}) as Record<string, unknown>;
    if (req.query.Action === 'CVSubmitTask') return this.submit(body, res);
    this.query(body, res);
  }

  private submit(body: Record<string, unknown>, res: ServerResponse): void {
    const status = this.submitErrors.shift();
    if (status !== undefined) return this.reply(res, status === 429 ? 50429 : 50500, status === 429 ? 'Request Has Reached API Limit' : 'Internal Error', null, status);
    const reqKey = String(body.req_key ?? '');
    const required = REQUIRED[reqKey];
    if (!required) return this.reply(res, 50200, `invalid req_key: ${reqKey}`, null);
    const missing = required.filter((field) => typeof body[field] !== 'string' || body[field] === '');
    if (missing.length > 0) return this.reply(res, 50201, `missing required params: ${missing.join(', ')}`, null);
    const taskId = randomBytes(10).toString('hex');
    this.tasks.set(taskId, { taskId, reqKey, body, polls: 0 });
    this.reply(res, 10000, 'Success', { task_id: taskId });
  }

  private query(body: Record<string, unknown>, res: ServerResponse): void {
    const task = this.tasks.get(String(body.task_id ?? ''));
    if (!task || task.reqKey !== body.req_key) return this.reply(res, 10000, 'Success', { status: 'not_found', resp_data: '' });
    const status = this.holding ? 'in_queue' : this.statuses[Math.min(task.polls, this.statuses.length - 1)]!;
    if (!this.holding) task.polls++;
    if (status !== 'done') return this.reply(res, 10000, 'Success', { status, resp_data: JSON.stringify({ progress: status === 'generating' ? 40 : 0 }) });
    if (this.failure) return this.reply(res, 10000, 'Success', { status, resp_data: JSON.stringify({ code: this.failure.code, msg: this.failure.msg }) });
    if (task.reqKey === 'realman_avatar_training_task') {
      return this.reply(res, 10000, 'Success', { status, resp_data: JSON.stringify({ code: 10000, msg: 'Success', resource_id: `avatar-${task.taskId.slice(0, 8)}` }) });
    }
    const url = `${this.url}/tos/${task.taskId}.mp4?X-Expires=3600`;
    this.reply(res, 10000, 'Success', {
      status,
      resp_data: JSON.stringify({ code: 10000, msg: 'Success', progress: 100, received_at: 1_746_000_000, finished_at: 1_746_000_042, vid: { VideoMeta: { Duration: 2, Width: RESULT_SIZE.width, Height: RESULT_SIZE.height }, url } }),
      url,
      video_url: url,
      binary_data_base64: [],
      image_urls: null,
    });
  }

  private async serveVideo(req: RecordedRequest, res: ServerResponse): Promise<void> {
    if (!this.tasks.has(req.path.slice('/tos/'.length).replace(/\.mp4$/, ''))) return sendJson(res, 404, { error: 'NoSuchKey' });
    sendBytes(res, await sampleMp4({ ...RESULT_SIZE, seconds: 2, audio: true }), 'video/mp4');
  }
}
