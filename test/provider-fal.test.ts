import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import pino from 'pino';
import { loadCatalog } from '../src/catalog/catalog.ts';
import { falAdapter } from '../src/providers/fal/adapter.ts';
import { TaskFailedError, TaskRejectedError, type GenerationEngine, type GenerationJob } from '../src/providers/spec.ts';
import { FAL_KEY, FakeFal } from './fakes/fal-upstream.ts';
import { runContext } from './support/run-context.ts';
import { startTestServer, tempDataDir, type TestServer } from './support/server.ts';
import { eventually } from './support/wait.ts';

const catalog = loadCatalog({ config: {} });
const IMG = 'https://images.example/';

function engineFor(fake: FakeFal): GenerationEngine {
  return falAdapter({
    provider: 'fal',
    settings: {},
    baseURL: fake.url,
    apiKey: FAL_KEY,
    client: { provider: 'fal', timeoutMs: 5_000, concurrency: 4, retry: { attempts: 2, baseDelayMs: 5, maxDelayMs: 20 } },
    pollIntervalMs: 5,
    maxWaitMs: 10_000,
    fetch,
    logger: pino({ level: 'silent' }),
  });
}

let seq = 0;
function job(alias: string, endpoint: string, input: Record<string, unknown>): GenerationJob {
  const model = catalog.find(alias);
  assert.ok(model, alias);
  return { taskId: `task-${++seq}`, ownerId: 'u1', endpoint, model, input, attempt: 1 };
}

async function run(engine: GenerationEngine, j: GenerationJob, ctx = runContext()) {
  await engine.check?.(j);
  return engine.run(j, ctx);
}

describe('fal adapter: queue protocol and results', () => {
  let fake: FakeFal;
  let engine: GenerationEngine;
  before(async () => {
    fake = await FakeFal.start();
    engine = engineFor(fake);
  });
  after(() => fake.close());

  it('H3.1 text: submit to the endpoint id with Key auth, follow the returned URLs, files by role', async () => {
    const ctx = runContext();
    const out = await run(engine, job('fal-tripo-v3.1', 'mesh3d.generate.text', { prompt: 'a tin robot', enable_texture: true, enable_pbr: true, geometry_quality: 'detailed', texture_quality: 'standard' }), ctx);
    const submit = fake.requests[0]!;
    assert.equal(submit.method, 'POST');
    assert.equal(submit.path, '/tripo3d/h3.1/text-to-3d');
    assert.equal(submit.headers.authorization, `Key ${FAL_KEY}`);
    assert.deepEqual(submit.json, { prompt: 'a tin robot', texture: true, pbr: true, texture_quality: 'standard', geometry_quality: 'ultra' });
    const id = [...fake.queue.keys()][0]!;
    const base = `${fake.url}/tripo3d/h3.1/requests/${id}`;
    assert.deepEqual(ctx.remembered, [{ upstream: { provider: 'fal', task_id: id, status_url: `${base}/status`, response_url: base } }]);
    const gets = fake.requests.filter((r) => r.method === 'GET' && !r.path.startsWith('/cdn/')).map((r) => r.path);
    assert.deepEqual(gets, [`/tripo3d/h3.1/requests/${id}/status`, `/tripo3d/h3.1/requests/${id}/status`, `/tripo3d/h3.1/requests/${id}`]);
    assert.deepEqual(out.files.map((f) => [f.role, f.type, f.fileName, f.mimeType]), [
      ['model', '3d', 'model.glb', 'model/gltf-binary'],
      ['base_model', '3d', 'base_model.glb', 'model/gltf-binary'],
      ['pbr_model', '3d', 'pbr_model.glb', 'model/gltf-binary'],
      ['preview', 'image', 'preview.webp', 'image/webp'],
    ]);
    assert.ok(fake.requests.filter((r) => r.path.startsWith('/cdn/')).every((r) => r.headers.authorization === undefined));
  });

  it('P1 image and multiview: public image URLs, four views in order; unset fields stay out', async () => {
    await run(engine, job('fal-tripo-p1', 'mesh3d.generate.image', { file: { url: `${IMG}cat.png` }, enable_texture: false, enable_pbr: false }));
    assert.deepEqual(fake.submits.at(-1), { endpoint: 'tripo3d/p1/image-to-3d', input: { image_url: `${IMG}cat.png`, texture: false, pbr: false } });
    await run(engine, job('fal-tripo-p1', 'mesh3d.generate.multiview', {
      view_images: ['right', 'back', 'front', 'left'].map((v) => ({ view_type: v, file: { url: `${IMG}${v}.png` } })),
    }));
    assert.deepEqual(fake.submits.at(-1), { endpoint: 'tripo3d/p1/multiview-to-3d', input: { image_urls: ['front', 'left', 'back', 'right'].map((v) => `${IMG}${v}.png`) } });
  });

  it('a failed request fails the task with fal\'s error; a refused input with its detail', async () => {
    fake.plans = [{ outcome: 'failed', error: 'The prompt was flagged by the content checker.' }, { outcome: 'success', runningPolls: 1 }];
    await assert.rejects(run(engine, job('fal-tripo-v3.1', 'mesh3d.generate.text', { prompt: 'x' })), (err: unknown) => {
      assert.ok(err instanceof TaskFailedError);
      assert.equal(err.message, 'fal request failed (generation_error)');
      assert.equal(err.originalMessage, 'The prompt was flagged by the content checker.');
      return true;
    });
    // A quality fal has no name for reaches it unchanged and is refused there.
    await assert.rejects(run(engine, job('fal-tripo-v3.1', 'mesh3d.generate.text', { prompt: 'x', geometry_quality: 'extreme' })), (err: unknown) => {
      assert.ok(err instanceof TaskFailedError);
      assert.equal(err.message, 'fal answered HTTP 422');
      assert.equal(err.originalMessage, "body.geometry_quality: value is not a valid enumeration member; permitted: 'standard', 'ultra'");
      return true;
    });
  });

  it('refuses edits and unknown versions before sending', () => {
    assert.throws(() => engine.check!(job('fal-tripo-p1', 'mesh3d.edit.convert', {})), TaskRejectedError);
    const odd = job('fal-tripo-p1', 'mesh3d.generate.text', { prompt: 'x' });
    odd.model = { ...odd.model, defaultRealModelName: 'tripo3d/v9' };
    assert.throws(() => engine.check!(odd), /fal has no model for tripo3d\/v9/);
  });
});

// ---- through the gateway over HTTP ----

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const KEY_ENV = 'GENGATE_TEST_FAL_KEY';
const TERMINAL = ['success', 'failed', 'rejected', 'cancelled'];

function gatewayEnv(fake: FakeFal, fal: Record<string, unknown> = {}): Record<string, string> {
  return { GENGATE_CONFIG: JSON.stringify({ providers: { fal: { base_url: fake.url, api_key_env: KEY_ENV, poll_interval_ms: 20, retry: { attempts: 2, base_delay_ms: 10, max_delay_ms: 50 }, ...fal } } }) };
}

async function post(srv: TestServer, token: string, path: string, body: unknown): Promise<Json> {
  const res = await srv.fetch(path, { method: 'POST', token, json: body });
  const json = await res.json();
  assert.equal(res.status, 200, JSON.stringify(json));
  return json;
}

async function settled(srv: TestServer, token: string, taskId: string): Promise<Json> {
  return eventually(`task ${taskId} ended`, async () => {
    const record = (await (await srv.fetch(`/v1/ai/result/${taskId}`, { token })).json()) as Json;
    return TERMINAL.includes(record.queue_status?.status) ? record.queue_status : undefined;
  }, 20_000);
}

describe('fal through the gateway', () => {
  let fake: FakeFal;
  let srv: TestServer;
  let token: string;
  before(async () => {
    process.env[KEY_ENV] = FAL_KEY;
    fake = await FakeFal.start();
    srv = await startTestServer(gatewayEnv(fake));
    token = await srv.tokenFor('caster');
  });
  after(async () => {
    await srv?.close();
    await fake?.close();
  });

  it('H3.1 image generation: the queue submit, the served model and preview', async () => {
    const reply = await post(srv, token, '/v1/mesh3d/generate/image', { model: 'fal-tripo-v3.1', file: { url: `${IMG}teapot.png` }, texture_quality: 'detailed' });
    const record = await settled(srv, token, reply.task_id);
    assert.equal(record.status, 'success', JSON.stringify(record));
    assert.deepEqual(fake.submits.at(-1), { endpoint: 'tripo3d/h3.1/image-to-3d', input: { image_url: `${IMG}teapot.png`, texture_quality: 'detailed' } });
    assert.deepEqual(record.output_content.map((o: Json) => [o.type, o.role, o.filename]), [['3d', 'model', 'model.glb'], ['3d', 'base_model', 'base_model.glb'], ['image', 'preview', 'preview.webp']]);
    const model = await fetch(record.output_content[0].url);
    assert.equal(model.headers.get('content-type'), 'model/gltf-binary');
    assert.equal(Buffer.from(await model.arrayBuffer()).subarray(0, 4).toString('latin1'), 'glTF');
  });

  it('a failed request ends the task failed with fal\'s error; a 504 on the status URL is retried', async () => {
    fake.plans = [{ outcome: 'failed', error: 'Input image could not be processed.' }, { outcome: 'success', runningPolls: 1 }];
    const failed = await post(srv, token, '/v1/mesh3d/generate/text', { model: 'fal-tripo-p1', prompt: 'a ghost' });
    const record = await settled(srv, token, failed.task_id);
    assert.equal(record.status, 'failed');
    assert.equal(record.message, 'fal request failed (generation_error)');
    assert.equal(record.original_error_message, 'Input image could not be processed.');

    fake.inject('GET', '/tripo3d/p1/requests/', { status: 504, body: { detail: 'Gateway Timeout' } });
    const retried = await post(srv, token, '/v1/mesh3d/generate/text', { model: 'fal-tripo-p1', prompt: 'a lantern' });
    assert.equal((await settled(srv, token, retried.task_id)).status, 'success');
    const request = [...fake.queue.values()].find((r) => r.input.prompt === 'a lantern')!;
    const statusCalls = fake.requests.filter((r) => r.path === `/tripo3d/p1/requests/${request.id}/status`).length;
    assert.equal(statusCalls, request.polls + 1, 'the status query answered 504 was sent again');
  });

  it('cancel answers 409 task_not_cancellable', async () => {
    fake.plans = [{ outcome: 'stall' }, { outcome: 'success', runningPolls: 1 }];
    const reply = await post(srv, token, '/v1/mesh3d/generate/text', { model: 'fal-tripo-p1', prompt: 'slow' });
    const queued = await eventually('the request polled', () => [...fake.queue.values()].find((r) => r.input.prompt === 'slow' && r.polls > 0));
    const res = await srv.fetch(`/v1/ai/cancel/${reply.task_id}`, { token });
    assert.equal(res.status, 409);
    assert.equal(((await res.json()) as Json).error.code, 'task_not_cancellable');
    assert.ok(!fake.requests.some((r) => r.path.endsWith('/cancel')), 'nothing was cancelled upstream');
    fake.finish(queued.id);
    assert.equal((await settled(srv, token, reply.task_id)).status, 'success');
  });
});

describe('fal through the gateway: waiting limits and restarts', () => {
  let fake: FakeFal;
  before(async () => {
    process.env[KEY_ENV] = FAL_KEY;
    fake = await FakeFal.start();
  });
  after(() => fake.close());

  it('max_wait_ms fails a request still queued', async () => {
    fake.plans = [{ outcome: 'stall' }];
    const srv = await startTestServer(gatewayEnv(fake, { max_wait_ms: 1000 }));
    try {
      const token = await srv.tokenFor('waiter');
      const reply = await post(srv, token, '/v1/mesh3d/generate/text', { model: 'fal-tripo-p1', prompt: 'forever' });
      const record = await settled(srv, token, reply.task_id);
      assert.equal(record.status, 'failed');
      assert.equal(record.message, 'the upstream task did not finish within 1 s');
    } finally {
      await srv.close();
    }
  });

  it('a restart resumes following the same request: one submit', async () => {
    fake.plans = [{ outcome: 'stall' }];
    const env = { ...gatewayEnv(fake), DATA_DIR: tempDataDir(), TASK_LEASE_MS: '300' };
    let srv = await startTestServer(env);
    try {
      const token = await srv.tokenFor('restarter');
      const before = fake.submits.length;
      const reply = await post(srv, token, '/v1/mesh3d/generate/text', { model: 'fal-tripo-v3.1', prompt: 'survive' });
      const queued = await eventually('the request polled', () => [...fake.queue.values()].find((r) => r.input.prompt === 'survive' && r.polls > 0));
      await srv.close();
      fake.finish(queued.id);
      srv = await startTestServer(env);
      assert.equal((await settled(srv, token, reply.task_id)).status, 'success');
      assert.equal(fake.submits.length - before, 1, 'submitted once');
    } finally {
      await srv.close();
      fs.rmSync(env.DATA_DIR, { recursive: true, force: true });
    }
  });
});
