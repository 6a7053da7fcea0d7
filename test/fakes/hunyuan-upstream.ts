/**
 * A fake Tencent Cloud ai3d endpoint: POST / with JSON, the
 * action in X-TC-Action, TC3-HMAC-SHA256 signatures checked against the secret key, replies as
 * `{Response: {…, RequestId}}` and errors as `Response.Error` inside HTTP 200; Pro, Rapid,
 * face-reduction and texture jobs with WAIT/RUN/FAIL/DONE and ResultFile3Ds.
 */
import { createHash, createHmac, randomUUID } from 'node:crypto';
import { ReplyingUpstream, type RecordedRequest, type Reply } from './recording-upstream.ts';
import { sampleGlb, samplePicture } from './upstream-media.ts';

export const HUNYUAN_SECRET_ID = 'AKIDtest1234';
export const HUNYUAN_SECRET_KEY = 'secret-key-for-tests';
export const HUNYUAN_VERSION = '2025-05-13';

export interface HunyuanPlan {
  outcome: 'success' | 'failed' | 'stall';
  runningPolls?: number;
  errorCode?: string;
  errorMessage?: string;
}

interface FakeJob {
  id: string;
  action: string;
  payload: Record<string, unknown>;
  plan: HunyuanPlan;
  polls: number;
}

const SUBMITS: Record<string, string> = {
  SubmitHunyuanTo3DProJob: 'QueryHunyuanTo3DProJob',
  SubmitHunyuanTo3DRapidJob: 'QueryHunyuanTo3DRapidJob',
  SubmitReduceFaceJob: 'DescribeReduceFaceJob',
  SubmitTextureTo3DJob: 'DescribeTextureTo3DJob',
};
const VIEW_TYPES = new Set(['left', 'right', 'back', 'top', 'bottom', 'left_front', 'right_front']);

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();

export class FakeHunyuan extends ReplyingUpstream {
  readonly jobs = new Map<string, FakeJob>();
  plans: HunyuanPlan[] = [{ outcome: 'success', runningPolls: 1 }];
  /** Error codes answered (once each, in order) to the next submits, e.g. RequestLimitExceeded. */
  busy: string[] = [];

  static start(): Promise<FakeHunyuan> {
    return new FakeHunyuan().listen();
  }

  /** Submits received: action and payload. */
  get submits(): { action: string; payload: any }[] { // eslint-disable-line @typescript-eslint/no-explicit-any
    return this.requests.filter((r) => r.path === '/' && String(r.headers['x-tc-action']).startsWith('Submit')).map((r) => ({ action: String(r.headers['x-tc-action']), payload: r.json }));
  }

  finish(id: string): void {
    const job = this.jobs.get(id);
    if (job) job.plan = { outcome: 'success', runningPolls: 0 };
  }

  protected async route(req: RecordedRequest): Promise<Reply | Buffer> {
    if (req.path.startsWith('/cos/')) return req.path.endsWith('.png') ? samplePicture('png') : sampleGlb(['hunyuan']);
    if (req.method !== 'POST' || req.path !== '/') return { status: 404, body: 'not found' };
    const requestId = randomUUID();
    const fail = (code: string, message: string): Reply => ({ status: 200, body: { Response: { Error: { Code: code, Message: message }, RequestId: requestId } } });
    const action = String(req.headers['x-tc-action'] ?? '');
    const signature = this.verify(req, action);
    if (signature) return fail(signature.code, signature.message);
    if (req.headers['x-tc-version'] !== HUNYUAN_VERSION) return fail('InvalidParameterValue', `version ${String(req.headers['x-tc-version'])} is not supported`);
    const payload = (req.json ?? {}) as Record<string, unknown>;
    const reply = (response: Record<string, unknown>): Reply => ({ status: 200, body: { Response: { ...response, RequestId: requestId } } });

    if (SUBMITS[action]) {
      const busy = this.busy.shift();
      if (busy) return fail(busy, 'Your request is too frequent, please try again later.');
      const invalid = this.invalid(action, payload);
      if (invalid) return fail('InvalidParameterValue', invalid);
      const id = `${Date.now()}${Math.floor(Math.random() * 1e6)}`;
      const plan = this.plans.length > 1 ? this.plans.shift()! : this.plans[0]!;
      this.jobs.set(id, { id, action, payload, plan, polls: 0 });
      return reply({ JobId: id });
    }
    const job = this.jobs.get(String(payload.JobId));
    if (!Object.values(SUBMITS).includes(action)) return fail('InvalidAction', `action ${action} not found`);
    if (!job || SUBMITS[job.action] !== action) return fail('ResourceNotFound', 'job not found');
    job.polls++;
    if (job.plan.outcome === 'stall' || job.polls <= (job.plan.runningPolls ?? 0)) return reply({ Status: job.polls === 1 ? 'WAIT' : 'RUN', ResultFile3Ds: [] });
    if (job.plan.outcome === 'failed') return reply({ Status: 'FAIL', ErrorCode: job.plan.errorCode ?? 'FailedOperation', ErrorMessage: job.plan.errorMessage ?? 'generation failed', ResultFile3Ds: [] });
    const cos = `${this.url}/cos/ai3d/${job.id}`;
    return reply({ Status: 'DONE', ErrorCode: '', ErrorMessage: '', ResultFile3Ds: [{ Type: 'GLB', Url: `${cos}/model.glb?sign=abc`, PreviewImageUrl: `${cos}/preview.png?sign=abc` }] });
  }

  /** The TC3-HMAC-SHA256 check Tencent Cloud makes; undefined when the signature holds. */
  private verify(req: RecordedRequest, action: string): { code: string; message: string } | undefined {
    const auth = /^TC3-HMAC-SHA256 Credential=([^/]+)\/(\d{4}-\d{2}-\d{2})\/([^/]+)\/tc3_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/.exec(String(req.headers.authorization ?? ''));
    if (!auth) return { code: 'AuthFailure.InvalidAuthorization', message: 'Authorization header is malformed' };
    const [, secretId, date, service, signedHeaders, signature] = auth;
    if (secretId !== HUNYUAN_SECRET_ID) return { code: 'AuthFailure.SecretIdNotFound', message: 'The SecretId is not found' };
    const timestamp = Number(req.headers['x-tc-timestamp']);
    if (!Number.isFinite(timestamp) || Math.abs(Date.now() / 1000 - timestamp) > 300) return { code: 'AuthFailure.SignatureExpire', message: 'Signature expired' };
    if (new Date(timestamp * 1000).toISOString().slice(0, 10) !== date) return { code: 'AuthFailure.SignatureFailure', message: 'credential date does not match the timestamp' };
    const names = signedHeaders!.split(';');
    const value = (name: string) => (name === 'x-tc-action' ? action.toLowerCase() : String(req.headers[name]));
    const canonical = ['POST', '/', '', ...names.map((n) => `${n}:${value(n)}`), '', signedHeaders, sha256(req.body)].join('\n');
    const toSign = ['TC3-HMAC-SHA256', String(timestamp), `${date}/${service}/tc3_request`, sha256(canonical)].join('\n');
    const key = hmac(hmac(hmac(`TC3${HUNYUAN_SECRET_KEY}`, date!), service!), 'tc3_request');
    if (createHmac('sha256', key).update(toSign).digest('hex') !== signature) return { code: 'AuthFailure.SignatureFailure', message: 'The provided credentials could not be validated.' };
    if (service !== 'ai3d' || !names.includes('host') || !names.includes('content-type')) return { code: 'AuthFailure.SignatureFailure', message: 'service or signed headers not accepted' };
    return undefined;
  }

  private invalid(action: string, p: Record<string, unknown>): string | undefined {
    if (action === 'SubmitHunyuanTo3DProJob' || action === 'SubmitHunyuanTo3DRapidJob') {
      if ((p.Prompt === undefined) === (p.ImageUrl === undefined && p.ImageBase64 === undefined)) return 'exactly one of Prompt or an image is required';
      if (action === 'SubmitHunyuanTo3DRapidJob' && typeof p.Prompt === 'string' && p.Prompt.length > 200) return 'Prompt is limited to 200 characters';
      if (p.Model !== undefined && !['3.0', '3.1'].includes(String(p.Model))) return `Model ${String(p.Model)} is not supported`;
      if (p.GenerateType !== undefined && !['Normal', 'LowPoly', 'Geometry', 'Sketch'].includes(String(p.GenerateType))) return 'GenerateType is invalid';
      if (p.PolygonType !== undefined && p.GenerateType !== 'LowPoly') return 'PolygonType only applies to LowPoly';
      const views = (p.MultiViewImages ?? []) as { ViewType?: string }[];
      if (views.some((v) => !VIEW_TYPES.has(String(v.ViewType)))) return 'MultiViewImages.ViewType is invalid';
    }
    if ((action === 'SubmitReduceFaceJob' || action === 'SubmitTextureTo3DJob') && !(p.File3D as { Url?: string } | undefined)?.Url) return 'File3D is required';
    return undefined;
  }
}
