import { createHash, createHmac } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { downloadFile, fetchableUrl, replyJson, servesEndpoints, stringOption, type AdapterFactory } from '../adapter-support.ts';
import { TaskFailedError, TaskRejectedError, type JobOf, type RunContext } from '../spec.ts';
import { backoffMs } from '../../core/backoff.ts';
import { mayRetry } from '../retry-gate.ts';
import { DEFAULT_RETRY, UpstreamClient, UpstreamError } from '../upstream-client.ts';
import { upstreamTaskEngine } from '../upstream-task-engine.ts';
import { HUNYUAN_ENDPOINTS, file3dType, imageRefs, jobKindOf, jobState, refusalOf, resultFile, submitPayload, submittedJobId } from './mapping.ts';

const DEFAULT_BASE_URL = 'https://ai3d.tencentcloudapi.com';
const DEFAULTS = { region: 'ap-guangzhou', version: '2025-05-13', service: 'ai3d' };

/** Error codes Tencent Cloud answers (inside HTTP 200) when it is only busy: sent again after a backoff. */
const TRANSIENT_CODES = /^(RequestLimitExceeded|InternalError|ResourceUnavailable)/;

/** Saved with the task: the job id (the history keeps it) and the action that reads it. */
type HunyuanRef = { provider: string; task_id: string; query_action: string };

const sha256 = (data: string) => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();

export interface Tc3Request {
  secretId: string;
  secretKey: string;
  service: string;
  /** Host (and port) the request goes to, as signed. */
  host: string;
  action: string;
  version: string;
  region: string;
  payload: string;
  /** Unix seconds. */
  timestamp: number;
}

/** Headers of a Tencent Cloud API 3.0 call signed with TC3-HMAC-SHA256 (content-type, host and action signed). */
export function tc3Headers(req: Tc3Request): Record<string, string> {
  const contentType = 'application/json; charset=utf-8';
  const date = new Date(req.timestamp * 1000).toISOString().slice(0, 10);
  const signedHeaders = 'content-type;host;x-tc-action';
  const canonical = ['POST', '/', '', `content-type:${contentType}`, `host:${req.host}`, `x-tc-action:${req.action.toLowerCase()}`, '', signedHeaders, sha256(req.payload)].join('\n');
  const scope = `${date}/${req.service}/tc3_request`;
  const toSign = ['TC3-HMAC-SHA256', String(req.timestamp), scope, sha256(canonical)].join('\n');
  const key = hmac(hmac(hmac(`TC3${req.secretKey}`, date), req.service), 'tc3_request');
  const signature = createHmac('sha256', key).update(toSign).digest('hex');
  return {
    authorization: `TC3-HMAC-SHA256 Credential=${req.secretId}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}`,
    'content-type': contentType,
    'x-tc-action': req.action,
    'x-tc-version': req.version,
    'x-tc-region': req.region,
    'x-tc-timestamp': String(req.timestamp),
  };
}

/**
 * Tencent Hunyuan 3D (family A) on Tencent Cloud API 3.0: submit and query actions signed with
 * TC3-HMAC-SHA256 (the key variable holds `SecretId:SecretKey`; options region, version and
 * service pick the surface, e.g. the international hunyuan service). Pro 3.0/3.1 and Rapid 2.5
 * generation; smart low-poly (face reduction) and texture edits take the source model by URL.
 * External API: not cancellable.
 */
export const hunyuanAdapter: AdapterFactory = (ctx) => {
  const baseURL = ctx.baseURL ?? DEFAULT_BASE_URL;
  const region = stringOption(ctx, 'region') ?? DEFAULTS.region;
  const version = stringOption(ctx, 'version') ?? DEFAULTS.version;
  const service = stringOption(ctx, 'service') ?? DEFAULTS.service;
  const separator = ctx.apiKey?.indexOf(':') ?? -1;
  const credentials = separator > 0 ? { secretId: ctx.apiKey!.slice(0, separator), secretKey: ctx.apiKey!.slice(separator + 1) } : undefined;
  const api = new UpstreamClient({ ...ctx.client, baseURL, fetch: ctx.fetch });
  // Result files live on COS hosts: nothing signed goes there.
  const storage = new UpstreamClient({ ...ctx.client, baseURL, fetch: ctx.fetch });
  const host = api.urlOf('/').host;
  const retry = ctx.client.retry ?? DEFAULT_RETRY;

  /**
   * One signed action, answering its reply; a busy answer is sent again (re-signed), a submit only
   * while its routed call has a try left for this channel (retry-gate.ts), else it fails as an
   * upstream failure another channel may take; a refusal fails the task with Tencent's message.
   */
  async function call(action: string, payload: Record<string, unknown>, run: RunContext): Promise<unknown> {
    const body = JSON.stringify(payload);
    const idempotent = action.startsWith('Query') || action.startsWith('Describe');
    for (let attempt = 0; ; attempt++) {
      const headers = tc3Headers({ ...credentials!, service, host, action, version, region, payload: body, timestamp: Math.floor(Date.now() / 1000) });
      const res = await api.request({ path: '/', body, headers, signal: run.signal, idempotent });
      const reply = replyJson(res, ctx.provider, action);
      const refusal = refusalOf(reply);
      if (!refusal) return reply;
      const message = `Hunyuan refused ${action} (${refusal.code})`;
      if (!TRANSIENT_CODES.test(refusal.code)) throw new TaskFailedError(message, refusal.message);
      const busy = new UpstreamError(message, refusal.message, undefined);
      if (attempt < retry.attempts && (idempotent || mayRetry(run.signal, busy))) {
        await delay(backoffMs(retry, attempt), undefined, { signal: run.signal });
        continue;
      }
      throw busy;
    }
  }

  /** The edited model as Tencent Cloud's File3D: its URL (gateway files are public) and type. */
  async function sourceModel(job: JobOf<'mesh3d.edit.smart_lowpoly' | 'mesh3d.edit.texture'>, run: RunContext): Promise<{ Type: string; Url: string }> {
    const ref = job.input.source.model;
    const file = await run.readInput(ref);
    const type = file3dType(file);
    return { Type: type, Url: /^https?:\/\//i.test(ref) ? ref : await run.publish(file.data, `source.${type.toLowerCase()}`, file.mimeType) };
  }

  return upstreamTaskEngine<HunyuanRef>({
    check(job) {
      jobKindOf(job);
      if (!credentials) throw new TaskRejectedError(`provider ${ctx.provider} needs its key variable (api_key_env) set to SecretId:SecretKey`);
    },
    async submit(job, run) {
      const kind = jobKindOf(job);
      const urls = new Map<string, string>();
      for (const ref of imageRefs(job)) if (!urls.has(ref)) urls.set(ref, await fetchableUrl(ref, run, 'image.png'));
      const model = job.endpoint === 'mesh3d.edit.smart_lowpoly' || job.endpoint === 'mesh3d.edit.texture' ? await sourceModel(job, run) : undefined;
      const { payload, dropped } = submitPayload(job, urls, model);
      for (const field of dropped) run.warn(`${field} was not sent: Hunyuan does not take it`);
      const jobId = submittedJobId(await call(kind.submit, payload, run));
      return { provider: ctx.provider, task_id: jobId, query_action: kind.query };
    },
    async poll(ref, _job, run) {
      const state = jobState(await call(ref.query_action, { JobId: ref.task_id }, run));
      if (state.state !== 'done') return state;
      const files = await Promise.all(state.links.map(async (link, i) => resultFile(link, (await downloadFile(storage, link.url, run.signal)).data, i)));
      return { state: 'succeeded', output: { files } };
    },
  }, { cancellable: false, pollIntervalMs: ctx.pollIntervalMs, maxWaitMs: ctx.maxWaitMs, serves: servesEndpoints(HUNYUAN_ENDPOINTS) });
};
