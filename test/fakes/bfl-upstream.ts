import type { ServerResponse } from 'node:http';
import sharp from 'sharp';
import { RecordingUpstream, sendBytes, sendJson, type RecordedRequest } from './recording-upstream.ts';

export const BFL_KEY = 'bfl-test-key-0001';

/** Where the fake's polling URLs point: a cluster path, so a client that rebuilds the URL on the base misses it. */
const CLUSTER = '/eu1';

const MODELS = ['flux-kontext-pro', 'flux-kontext-max'];
const FORMATS = ['jpeg', 'png', 'webp'];

interface BflRequest {
  id: string;
  model: string;
  body: Record<string, unknown>;
  polls: number;
}

/** The pixel size the fake draws for an aspect ratio (small: tests only read it back). */
export function drawnSize(ratio: string | undefined): { width: number; height: number } {
  const [w, h] = (ratio ?? '1:1').split(':').map(Number) as [number, number];
  return w >= h ? { width: 64, height: Math.round((64 * h) / w) } : { width: Math.round((64 * w) / h), height: 64 };
}

/**
 * Black Forest Labs' API as its OpenAPI document describes it: POST /v1/flux-kontext-{pro,max}
 * with `x-key` (403 "Not authenticated" otherwise; 422 FastAPI `detail` for a bad body) answers
 * `{id, polling_url, cost, input_mp, output_mp}`; the polling URL (on a cluster path of its
 * own) walks the request through `statuses` — Pending, Ready, Request Moderated, Content
 * Moderated, Error — and Ready's result.sample is a signed delivery URL serving the image in
 * the requested output_format (png by default). Records every request.
 */
export class BflUpstream extends RecordingUpstream {
  statuses = ['Pending', 'Pending', 'Ready'];
  holding = false;
  /** HTTP statuses answered to the next submits before one is accepted. */
  createErrors: number[] = [];
  readonly submitted = new Map<string, BflRequest>();

  static start(): Promise<BflUpstream> {
    return new BflUpstream().listen();
  }

  get submits(): RecordedRequest[] {
    return this.requests.filter((r) => r.method === 'POST' && r.path.startsWith('/v1/'));
  }

  get polls(): RecordedRequest[] {
    return this.requests.filter((r) => r.method === 'GET' && r.path === `${CLUSTER}/v1/get_result`);
  }

  protected async handle(req: RecordedRequest, res: ServerResponse): Promise<void> {
    if (req.path.startsWith('/delivery/')) return this.deliver(req, res);
    if (req.headers['x-key'] !== BFL_KEY) return sendJson(res, 403, { detail: 'Not authenticated' });
    if (req.method === 'POST' && req.path.startsWith('/v1/')) return this.submit(req, res);
    if (req.method === 'GET' && req.path === `${CLUSTER}/v1/get_result`) return this.result(req, res);
    sendJson(res, 404, { detail: 'Not Found' });
  }

  private submit(req: RecordedRequest, res: ServerResponse): void {
    const model = req.path.slice('/v1/'.length);
    if (!MODELS.includes(model)) return sendJson(res, 404, { detail: 'Not Found' });
    const status = this.createErrors.shift();
    if (status !== undefined) return sendJson(res, status, { detail: status === 429 ? 'You have exceeded the number of active tasks' : 'Internal Server Error' });
    const body = req.json as Record<string, unknown> | undefined;
    const problems: { loc: string[]; msg: string; type: string }[] = [];
    if (typeof body?.prompt !== 'string') problems.push({ loc: ['body', 'prompt'], msg: 'Field required', type: 'missing' });
    for (const field of ['input_image', 'input_image_2', 'input_image_3', 'input_image_4']) {
      if (body?.[field] !== undefined && typeof body[field] !== 'string') problems.push({ loc: ['body', field], msg: 'Input should be a valid string', type: 'string_type' });
    }
    if (body?.output_format !== undefined && !FORMATS.includes(String(body.output_format))) problems.push({ loc: ['body', 'output_format'], msg: "Input should be 'jpeg', 'png' or 'webp'", type: 'enum' });
    if (body?.aspect_ratio !== undefined && !/^\d+:\d+$/.test(String(body.aspect_ratio))) problems.push({ loc: ['body', 'aspect_ratio'], msg: 'Invalid aspect ratio', type: 'value_error' });
    if (problems.length > 0) return sendJson(res, 422, { detail: problems });
    const id = `b6f3c1a0-0000-4000-8000-${String(this.submitted.size + 1).padStart(12, '0')}`;
    this.submitted.set(id, { id, model, body: body!, polls: 0 });
    sendJson(res, 200, { id, polling_url: `${this.url}${CLUSTER}/v1/get_result?id=${id}`, cost: model === 'flux-kontext-max' ? 8 : 4, input_mp: body!.input_image ? 1.05 : 0, output_mp: 1.05 });
  }

  private result(req: RecordedRequest, res: ServerResponse): void {
    const request = this.submitted.get(req.query.id ?? '');
    if (!request) return sendJson(res, 200, { id: req.query.id, status: 'Task not found', result: null, progress: null, details: null, preview: null });
    const status = this.holding ? 'Pending' : this.statuses[Math.min(request.polls, this.statuses.length - 1)]!;
    if (!this.holding) request.polls++;
    const seed = typeof request.body.seed === 'number' ? request.body.seed : 1_234_567;
    const format = String(request.body.output_format ?? 'png');
    sendJson(res, 200, {
      id: request.id,
      status,
      result: status === 'Ready' ? { sample: `${this.url}/delivery/${request.id}.${format}?se=2026-01-01T00%3A10%3A00Z&sig=abc`, prompt: request.body.prompt, seed, start_time: 1, end_time: 2, duration: 1 } : null,
      progress: status === 'Pending' ? 0.4 : null,
      details: status.endsWith('Moderated') ? { 'Moderation Reasons': ['Derivative Works Filter'] } : null,
      preview: null,
    });
  }

  private async deliver(req: RecordedRequest, res: ServerResponse): Promise<void> {
    const [id, format] = req.path.slice('/delivery/'.length).split('.') as [string, string];
    const request = this.submitted.get(id);
    if (!request || req.query.sig !== 'abc') return sendJson(res, 403, { error: 'AuthenticationFailed' });
    const { width, height } = drawnSize(request.body.aspect_ratio as string | undefined);
    const image = await sharp({ create: { width, height, channels: 3, background: '#3080c0' } }).toFormat(format as 'png').toBuffer();
    sendBytes(res, image, `image/${format}`);
  }
}
