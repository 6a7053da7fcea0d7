import { createHash, createHmac } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { checkApiKey, downloadFile, fetchableUrl, replyJson, servesEndpoints, type AdapterFactory } from '../adapter-support.ts';
import { TaskFailedError, TaskRejectedError, type Endpoint, type GenerationJob, type JobOf, type RunContext } from '../spec.ts';
import { UpstreamClient, type UpstreamRequest } from '../upstream-client.ts';
import { upstreamTaskEngine } from '../upstream-task-engine.ts';
import {
  NEEDS_OWN_SOURCE,
  TASK_TYPES,
  checkEnvelope,
  errorText,
  importFormatOf,
  imageRefs,
  parseTask,
  pollState,
  resultFile,
  resultLinks,
  sourceTaskOf,
  stsToken,
  submittedTaskId,
  taskBody,
  taskOutput,
  type TripoTask,
} from './mapping.ts';
import type { StsToken } from './reply-schemas.ts';

const DEFAULT_BASE_URL = 'https://api.tripo3d.ai/v2/openapi';

/**
 * The upstream reference saved with the task (and kept by the 3D history, which hands it to
 * later edits): Tripo's task id, and the imported copy of a foreign source model when there was one.
 */
type TripoRef = { provider: string; task_id: string; source_task_id?: string };

type EditEndpoint = Extract<Endpoint, `mesh3d.edit.${string}`>;
const isEdit = (job: GenerationJob): job is JobOf<EditEndpoint> => job.endpoint.startsWith('mesh3d.edit.');

/** Saved while a foreign source model is being imported, so a resumed run does not import it twice. */
const IMPORT_KEY = 'tripo_import';

const hex = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();

/**
 * Where an STS upload goes: virtual-hosted on AWS (path-style is closed to newer buckets), or
 * path-style under an s3_host given as a full URL (S3-compatible stores).
 */
function s3ObjectUrl(sts: StsToken): URL {
  const key = sts.resource_uri.split('/').map(encodeURIComponent).join('/');
  if (/^https?:\/\//i.test(sts.s3_host)) return new URL(`${sts.s3_host.replace(/\/+$/, '')}/${sts.resource_bucket}/${key}`);
  return new URL(`https://${sts.resource_bucket}.${sts.s3_host}/${key}`);
}

/** AWS Signature Version 4 headers of an S3 PUT with the session credentials Tripo hands out. */
export function s3PutHeaders(url: URL, body: Buffer, sts: StsToken, now = new Date()): Record<string, string> {
  const region = /s3[.-]([a-z0-9-]+)\.amazonaws\.com/i.exec(url.host)?.[1] ?? 'us-west-2';
  const amzDate = now.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
  const date = amzDate.slice(0, 8);
  const payloadHash = hex(body);
  const headers: Record<string, string> = { host: url.host, 'x-amz-content-sha256': payloadHash, 'x-amz-date': amzDate, 'x-amz-security-token': sts.session_token };
  const signed = Object.keys(headers).sort();
  const canonical = ['PUT', url.pathname, '', ...signed.map((h) => `${h}:${headers[h]}`), '', signed.join(';'), payloadHash].join('\n');
  const scope = `${date}/${region}/s3/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, hex(canonical)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${sts.sts_sk}`, date), region), 's3'), 'aws4_request');
  const signature = createHmac('sha256', key).update(toSign).digest('hex');
  const { host: _host, ...sent } = headers;
  return { ...sent, authorization: `AWS4-HMAC-SHA256 Credential=${sts.sts_ak}/${scope}, SignedHeaders=${signed.join(';')}, Signature=${signature}` };
}

/**
 * Tripo V2 OpenAPI (family C generation and the Tripo edit models): POST /task, polled at
 * GET /task/{id}; result files are downloaded. Edits take the source's Tripo task id; a source
 * made elsewhere is uploaded (STS) and imported first. External API: not cancellable.
 */
export const tripoAdapter: AdapterFactory = (ctx) => {
  const baseURL = ctx.baseURL ?? DEFAULT_BASE_URL;
  const api = new UpstreamClient({ ...ctx.client, baseURL, fetch: ctx.fetch, headers: { authorization: `Bearer ${ctx.apiKey ?? ''}` }, errorMessage: errorText });
  // Result files and the S3 upload live on other hosts: no API key goes there.
  const storage = new UpstreamClient({ ...ctx.client, baseURL, fetch: ctx.fetch });

  /** One call of the OpenAPI: its reply, Tripo's own message as original_error_message on failure. */
  async function call(req: UpstreamRequest, what: string): Promise<unknown> {
    const reply = replyJson(await api.request(req), ctx.provider, what);
    checkEnvelope(reply, what);
    return reply;
  }

  const createTask = async (body: Record<string, unknown>, run: RunContext) =>
    submittedTaskId(await call({ path: '/task', json: body, signal: run.signal }, `the ${String(body.type)} task`));

  const readTask = async (taskId: string, run: RunContext): Promise<TripoTask> =>
    parseTask(await call({ path: `/task/${encodeURIComponent(taskId)}`, signal: run.signal }, 'the task query'));

  /** Uploads a model file made elsewhere and imports it as a Tripo task, whose id edits can take. */
  async function importSource(job: JobOf<EditEndpoint>, run: RunContext): Promise<string> {
    let importId = (job.saved?.[IMPORT_KEY] as { task_id?: string } | undefined)?.task_id;
    if (!importId) {
      const file = await run.readInput(job.input.source.model);
      const format = importFormatOf(file);
      if (!format) throw new TaskFailedError(`Tripo imports GLB, OBJ, FBX or STL models; the source model is ${file.mimeType || file.fileName}`);
      const sts = stsToken(await call({ path: '/upload/sts/token', json: { format }, signal: run.signal }, 'the upload token request'));
      const url = s3ObjectUrl(sts);
      await storage.request({ method: 'PUT', path: url.href, body: new Uint8Array(file.data), headers: s3PutHeaders(url, file.data, sts), signal: run.signal, idempotent: true });
      importId = await createTask({ type: 'import_model', file: { type: format, object: { bucket: sts.resource_bucket, key: sts.resource_uri } } }, run);
      await run.remember({ [IMPORT_KEY]: { task_id: importId } });
    }
    const deadline = Date.now() + ctx.maxWaitMs;
    for (;;) {
      const state = pollState(await readTask(importId, run));
      if (!state) return importId;
      if (state.state === 'failed') throw new TaskFailedError(`importing the source model into Tripo failed: ${state.message}`, state.original);
      if (Date.now() > deadline) throw new TaskFailedError(`importing the source model into Tripo did not finish within ${Math.round(ctx.maxWaitMs / 1000)} s`);
      await delay(ctx.pollIntervalMs, undefined, { signal: run.signal });
    }
  }

  return upstreamTaskEngine<TripoRef>({
    check(job) {
      if (!TASK_TYPES[job.endpoint]) throw new TaskRejectedError(`provider ${ctx.provider} (Tripo) does not run ${job.endpoint} tasks`);
      checkApiKey(ctx);
      const needs = NEEDS_OWN_SOURCE[job.endpoint];
      if (!needs || !isEdit(job)) return;
      const source = sourceTaskOf(job.input.source);
      const ownDraft = job.endpoint === 'mesh3d.edit.refine' && job.input.draft_model_task_id !== undefined;
      if (!ownDraft && source?.provider !== ctx.provider) throw new TaskRejectedError(`this edit works on ${needs} (${ctx.provider}); the source history was made by ${source?.provider ?? 'another engine'}`);
    },
    async submit(job, run) {
      let original: string | undefined;
      let imported: string | undefined;
      if (isEdit(job)) {
        const source = sourceTaskOf(job.input.source);
        if (source?.provider === ctx.provider) original = source.task_id;
        else if (job.endpoint !== 'mesh3d.edit.refine') original = imported = await importSource(job, run);
      }
      const urls = new Map<string, string>();
      for (const ref of imageRefs(job)) if (!urls.has(ref)) urls.set(ref, await fetchableUrl(ref, run, 'image.png'));
      const { body, dropped } = taskBody(job, urls, original);
      for (const field of dropped) run.warn(`${field} was not sent: Tripo does not take it`);
      const taskId = await createTask(body, run);
      return { provider: ctx.provider, task_id: taskId, ...(imported ? { source_task_id: imported } : {}) };
    },
    async poll(ref, job, run) {
      const task = await readTask(ref.task_id, run);
      const state = pollState(task);
      if (state) return state;
      const links = resultLinks(task);
      const files = await Promise.all(links.map(async (link) => resultFile(link, (await downloadFile(storage, link.url, run.signal)).data)));
      return { state: 'succeeded', output: await taskOutput(job, task, files) };
    },
  }, { cancellable: false, pollIntervalMs: ctx.pollIntervalMs, maxWaitMs: ctx.maxWaitMs, serves: servesEndpoints(Object.keys(TASK_TYPES)) });
};
