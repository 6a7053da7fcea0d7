import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import pino from 'pino';
import { loadCatalog } from '../src/catalog/catalog.ts';
import { hunyuanAdapter } from '../src/providers/hunyuan/adapter.ts';
import { TaskFailedError, TaskRejectedError, type GenerationEngine, type GenerationJob } from '../src/providers/spec.ts';
import { FakeHunyuan, HUNYUAN_SECRET_ID, HUNYUAN_SECRET_KEY } from './fakes/hunyuan-upstream.ts';
import { sampleGlb } from './fakes/upstream-media.ts';
import { runContext } from './support/run-context.ts';
import { startTestServer, tempDataDir, type TestServer } from './support/server.ts';
import { eventually } from './support/wait.ts';

const catalog = loadCatalog({ config: {} });
const IMG = 'https://images.example/';

function engineFor(fake: FakeHunyuan, apiKey = `${HUNYUAN_SECRET_ID}:${HUNYUAN_SECRET_KEY}`): GenerationEngine {
  return hunyuanAdapter({
    provider: 'hunyuan',
    settings: {},
    baseURL: fake.url,
    apiKey,
    client: { provider: 'hunyuan', timeoutMs: 5_000, concurrency: 4, retry: { attempts: 2, baseDelayMs: 5, maxDelayMs: 20 } },
    pollIntervalMs: 5,
    maxWaitMs: 10_000,
    fetch,
    logger: pino({ level: 'silent' }),
  });
}

let seq = 0;
function job(alias: string, endpoint: string, input: Record<string, unknown>, defaultRealModelName?: string): GenerationJob {
  const model = catalog.find(alias);
  assert.ok(model, alias);
  return { taskId: `task-${++seq}`, ownerId: 'u1', endpoint, model: defaultRealModelName ? { ...model, defaultRealModelName } : model, input, attempt: 1 };
}

async function run(engine: GenerationEngine, j: GenerationJob, ctx = runContext()) {
  await engine.check?.(j);
  return engine.run(j, ctx);
}

describe('Hunyuan adapter: signed actions and results', () => {
  let fake: FakeHunyuan;
  let engine: GenerationEngine;
  before(async () => {
    fake = await FakeHunyuan.start();
    engine = engineFor(fake);
  });
  after(() => fake.close());

  it('Pro 3.1 text: a TC3-signed SubmitHunyuanTo3DProJob with the version, then the query and files by role', async () => {
    const ctx = runContext();
    const out = await run(engine, job('hunyuan3d-pro-3.1', 'mesh3d.generate.text', { prompt: 'a jade dragon', enable_texture: true, enable_pbr: true, face_limit: 300000 }), ctx);
    const submit = fake.requests[0]!;
    assert.equal(submit.method, 'POST');
    assert.equal(submit.path, '/');
    assert.equal(submit.headers['x-tc-action'], 'SubmitHunyuanTo3DProJob');
    assert.equal(submit.headers['x-tc-version'], '2025-05-13');
    assert.equal(submit.headers['x-tc-region'], 'ap-guangzhou');
    assert.match(String(submit.headers.authorization), new RegExp(`^TC3-HMAC-SHA256 Credential=${HUNYUAN_SECRET_ID}/\\d{4}-\\d{2}-\\d{2}/ai3d/tc3_request, SignedHeaders=content-type;host;x-tc-action, Signature=[0-9a-f]{64}$`));
    assert.deepEqual(submit.json, { Model: '3.1', Prompt: 'a jade dragon', FaceCount: 300000, EnablePBR: true });
    const jobId = [...fake.jobs.keys()][0]!;
    assert.deepEqual(ctx.remembered, [{ upstream: { provider: 'hunyuan', task_id: jobId, query_action: 'QueryHunyuanTo3DProJob' } }]);
    const query = fake.requests.find((r) => r.headers['x-tc-action'] === 'QueryHunyuanTo3DProJob')!;
    assert.deepEqual(query.json, { JobId: jobId });
    assert.deepEqual(out.files.map((f) => [f.role, f.type, f.fileName, f.mimeType]), [['model', '3d', 'model.glb', 'model/gltf-binary'], ['preview', 'image', 'preview.png', 'image/png']]);
    assert.equal(out.files[0]!.data.subarray(0, 4).toString('latin1'), 'glTF');
    // The fake checks every signature: a wrong secret is refused with Tencent's own words.
    await assert.rejects(run(engineFor(fake, `${HUNYUAN_SECRET_ID}:wrong`), job('hunyuan3d-pro-3.1', 'mesh3d.generate.text', { prompt: 'x' })), (err: unknown) => {
      assert.ok(err instanceof TaskFailedError);
      assert.equal(err.message, 'Hunyuan refused SubmitHunyuanTo3DProJob (AuthFailure.SignatureFailure)');
      assert.equal(err.originalMessage, 'The provided credentials could not be validated.');
      return true;
    });
  });

  it('Pro 3.0: image and other views, low-poly with its polygon type, geometry only', async () => {
    await run(engine, job('hunyuan3d-pro-3.0', 'mesh3d.generate.multiview', {
      view_images: [{ view_type: 'front', file: { url: `${IMG}f.png` } }, { view_type: 'left', file: { url: `${IMG}l.png` } }, { view_type: 'back', file: { url: `${IMG}b.png` } }],
      smart_low_poly: true, topology: 'quad', enable_texture: true,
    }));
    assert.deepEqual(fake.submits.at(-1), {
      action: 'SubmitHunyuanTo3DProJob',
      payload: { Model: '3.0', ImageUrl: `${IMG}f.png`, MultiViewImages: [{ ViewType: 'left', ViewImageUrl: `${IMG}l.png` }, { ViewType: 'back', ViewImageUrl: `${IMG}b.png` }], GenerateType: 'LowPoly', PolygonType: 'quadrilateral' },
    });
    await run(engine, job('hunyuan3d-pro-3.0', 'mesh3d.generate.image', { file: { url: `${IMG}cat.png` }, enable_texture: false, enable_pbr: false, face_limit: 50000 }));
    assert.deepEqual(fake.submits.at(-1)!.payload, { Model: '3.0', ImageUrl: `${IMG}cat.png`, FaceCount: 50000, GenerateType: 'Geometry' });
  });

  it('Rapid 2.5: its own action, white model as EnableGeometry, prompt limit refused before sending', async () => {
    await run(engine, job('hunyuan3d-rapid-2.5', 'mesh3d.generate.text', { prompt: 'a lamp', enable_texture: false, enable_pbr: false }));
    assert.deepEqual(fake.submits.at(-1), { action: 'SubmitHunyuanTo3DRapidJob', payload: { Prompt: 'a lamp', EnableGeometry: true } });
    const hash = 'blake3:' + 'd'.repeat(64);
    await run(engine, job('hunyuan3d-rapid-2.5', 'mesh3d.generate.image', { file: { url: hash }, enable_pbr: true }), runContext({ inputs: { [hash]: { data: Buffer.from('x'), mimeType: 'image/png', fileName: 'lamp.png' } } }));
    assert.deepEqual(fake.submits.at(-1)!.payload, { ImageUrl: 'http://127.0.0.1/files/published/lamp.png', EnablePBR: true });
    assert.throws(() => engine.check!(job('hunyuan3d-rapid-2.5', 'mesh3d.generate.text', { prompt: 'x'.repeat(201) })), /at most 200 characters/);
  });

  it('a busy answer is sent again after a backoff; a failed job fails the task with Tencent\'s message', async () => {
    fake.busy = ['RequestLimitExceeded.JobNumExceed'];
    const before = fake.submits.length;
    await run(engine, job('hunyuan3d-pro-3.0', 'mesh3d.generate.text', { prompt: 'again' }));
    assert.equal(fake.submits.length - before, 2, 'the refused submit was sent again');
    fake.plans = [{ outcome: 'failed', errorCode: 'FailedOperation.ContentAudit', errorMessage: 'The input did not pass the content review.' }, { outcome: 'success', runningPolls: 1 }];
    await assert.rejects(run(engine, job('hunyuan3d-pro-3.0', 'mesh3d.generate.text', { prompt: 'no' })), (err: unknown) => {
      assert.ok(err instanceof TaskFailedError);
      assert.equal(err.message, 'Hunyuan job failed (FailedOperation.ContentAudit)');
      assert.equal(err.originalMessage, 'The input did not pass the content review.');
      return true;
    });
  });

  it('smart low-poly and texture edits hand over the source model by URL', async () => {
    const ref = 'blake3:' + 'e'.repeat(64);
    const inputs = { [ref]: { data: await sampleGlb(), mimeType: 'model/gltf-binary', fileName: 'source.glb' } };
    const source = { history_id: 'hist_1', operation: 'text', model: ref, upstream: { upstream: { provider: 'hunyuan', task_id: '123' } } };
    await run(engine, job('hunyuan3d-pro-3.0', 'mesh3d.edit.smart_lowpoly', { history_id: 'h', topology: 'triangle', quad: false, face_limit: 'medium', bake: true, source }), runContext({ inputs }));
    assert.deepEqual(fake.submits.at(-1), { action: 'SubmitReduceFaceJob', payload: { File3D: { Type: 'GLB', Url: 'http://127.0.0.1/files/published/source.glb' }, PolygonType: 'triangle', FaceLevel: 'medium' } });
    await run(engine, job('hunyuan3d-pro-3.0', 'mesh3d.edit.texture', { history_id: 'h', texture: true, pbr: true, texture_quality: 'standard', bake: true, texture_prompt: { text: 'rusty metal' }, source }), runContext({ inputs }));
    assert.deepEqual(fake.submits.at(-1), { action: 'SubmitTextureTo3DJob', payload: { File3D: { Type: 'GLB', Url: 'http://127.0.0.1/files/published/source.glb' }, Prompt: 'rusty metal', EnablePBR: true } });
    assert.ok(fake.requests.some((r) => r.headers['x-tc-action'] === 'DescribeTextureTo3DJob'));
  });

  it('refuses what it cannot run, and a key without SecretId:SecretKey', () => {
    assert.throws(() => engine.check!(job('hunyuan3d-pro-3.0', 'mesh3d.edit.rig', {})), TaskRejectedError);
    assert.throws(() => engine.check!(job('hunyuan3d-pro-3.0', 'mesh3d.generate.text', { prompt: 'x' }, 'hunyuan3d-max-9')), /no model hunyuan3d-max-9/);
    assert.throws(() => engineFor(fake, 'only-one-part').check!(job('hunyuan3d-pro-3.0', 'mesh3d.generate.text', { prompt: 'x' })), /SecretId:SecretKey/);
  });
});

// ---- through the gateway over HTTP ----

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const KEY_ENV = 'GENGATE_TEST_HUNYUAN_KEY';
const TERMINAL = ['success', 'failed', 'rejected', 'cancelled'];

function gatewayEnv(fake: FakeHunyuan, hunyuan: Record<string, unknown> = {}): Record<string, string> {
  return { GENGATE_CONFIG: JSON.stringify({ providers: { hunyuan: { base_url: fake.url, api_key_env: KEY_ENV, poll_interval_ms: 20, retry: { attempts: 2, base_delay_ms: 10, max_delay_ms: 50 }, ...hunyuan } } }) };
}

async function post(srv: TestServer, token: string, path: string, body: unknown): Promise<Json> {
  const res = await srv.fetch(path, { method: 'POST', token, json: body });
  const json = await res.json();
  assert.equal(res.status, 200, JSON.stringify(json));
  return json;
}

async function settled(srv: TestServer, token: string, taskId: string, statuses = TERMINAL): Promise<Json> {
  return eventually(`task ${taskId} in ${statuses.join('/')}`, async () => {
    const record = (await (await srv.fetch(`/v1/ai/result/${taskId}`, { token })).json()) as Json;
    return statuses.includes(record.queue_status?.status) ? record.queue_status : undefined;
  }, 20_000);
}

describe('Hunyuan through the gateway', () => {
  let fake: FakeHunyuan;
  let srv: TestServer;
  let token: string;
  before(async () => {
    process.env[KEY_ENV] = `${HUNYUAN_SECRET_ID}:${HUNYUAN_SECRET_KEY}`;
    fake = await FakeHunyuan.start();
    srv = await startTestServer(gatewayEnv(fake));
    token = await srv.tokenFor('potter');
  });
  after(async () => {
    await srv?.close();
    await fake?.close();
  });

  it('Pro 3.1 multiview: signed submit with the views, a successful record with served files', async () => {
    const views = ['front', 'left_front', 'back', 'top'].map((v) => ({ view_type: v, file: { url: `${IMG}${v}.png` } }));
    const reply = await post(srv, token, '/v1/mesh3d/generate/multiview', { model: 'hunyuan3d-pro-3.1', view_images: views, enable_pbr: true, enable_texture: true });
    const record = await settled(srv, token, reply.task_id);
    assert.equal(record.status, 'success', JSON.stringify(record));
    assert.deepEqual(fake.submits.at(-1), {
      action: 'SubmitHunyuanTo3DProJob',
      payload: { Model: '3.1', ImageUrl: `${IMG}front.png`, MultiViewImages: ['left_front', 'back', 'top'].map((v) => ({ ViewType: v, ViewImageUrl: `${IMG}${v}.png` })), EnablePBR: true },
    });
    assert.deepEqual(record.output_content.map((o: Json) => [o.type, o.role, o.filename]), [['3d', 'model', 'model.glb'], ['image', 'preview', 'preview.png']]);
    const model = await fetch(record.output_content[0].url);
    assert.equal(model.headers.get('content-type'), 'model/gltf-binary');
    assert.equal(Buffer.from(await model.arrayBuffer()).subarray(0, 4).toString('latin1'), 'glTF');
  });

  it('a failed job ends the task failed with Tencent\'s message; a 502 from the API gateway is retried', async () => {
    fake.plans = [{ outcome: 'failed', errorCode: 'FailedOperation.GenerateFailed', errorMessage: 'Model generation failed, please try another image.' }, { outcome: 'success', runningPolls: 1 }];
    const failed = await post(srv, token, '/v1/mesh3d/generate/text', { model: 'hunyuan3d-rapid-2.5', prompt: 'a broken vase' });
    const record = await settled(srv, token, failed.task_id);
    assert.equal(record.status, 'failed');
    assert.equal(record.message, 'Hunyuan job failed (FailedOperation.GenerateFailed)');
    assert.equal(record.original_error_message, 'Model generation failed, please try another image.');

    fake.inject('POST', '/', { status: 502, body: 'Bad Gateway' });
    const before = fake.submits.length;
    const retried = await post(srv, token, '/v1/mesh3d/generate/text', { model: 'hunyuan3d-rapid-2.5', prompt: 'a vase' });
    assert.equal((await settled(srv, token, retried.task_id)).status, 'success');
    assert.equal(fake.submits.length - before, 2, 'the submit answered 502 was sent again');
  });

  it('cancel answers 409 task_not_cancellable', async () => {
    fake.plans = [{ outcome: 'stall' }, { outcome: 'success', runningPolls: 1 }];
    const reply = await post(srv, token, '/v1/mesh3d/generate/text', { model: 'hunyuan3d-pro-3.0', prompt: 'slow' });
    // Tencent reports no progress while a job runs: the task stays `started` until the end.
    const job = await eventually('the job queried', () => [...fake.jobs.values()].find((j) => j.payload.Prompt === 'slow' && j.polls > 0));
    const res = await srv.fetch(`/v1/ai/cancel/${reply.task_id}`, { token });
    assert.equal(res.status, 409);
    assert.equal(((await res.json()) as Json).error.code, 'task_not_cancellable');
    fake.finish(job.id);
    assert.equal((await settled(srv, token, reply.task_id)).status, 'success');
  });
});

describe('Hunyuan through the gateway: waiting limits and restarts', () => {
  let fake: FakeHunyuan;
  before(async () => {
    process.env[KEY_ENV] = `${HUNYUAN_SECRET_ID}:${HUNYUAN_SECRET_KEY}`;
    fake = await FakeHunyuan.start();
  });
  after(() => fake.close());

  it('max_wait_ms fails a job still running', async () => {
    fake.plans = [{ outcome: 'stall' }];
    const srv = await startTestServer(gatewayEnv(fake, { max_wait_ms: 1000 }));
    try {
      const token = await srv.tokenFor('waiter');
      const reply = await post(srv, token, '/v1/mesh3d/generate/text', { model: 'hunyuan3d-pro-3.0', prompt: 'forever' });
      const record = await settled(srv, token, reply.task_id);
      assert.equal(record.status, 'failed');
      assert.equal(record.message, 'the upstream task did not finish within 1 s');
    } finally {
      await srv.close();
    }
  });

  it('a restart resumes querying the same job: one submit', async () => {
    fake.plans = [{ outcome: 'stall' }];
    const env = { ...gatewayEnv(fake), DATA_DIR: tempDataDir(), TASK_LEASE_MS: '300' };
    let srv = await startTestServer(env);
    try {
      const token = await srv.tokenFor('restarter');
      const before = fake.submits.length;
      const reply = await post(srv, token, '/v1/mesh3d/generate/text', { model: 'hunyuan3d-pro-3.0', prompt: 'survive' });
      const job = await eventually('the job queried', () => [...fake.jobs.values()].find((j) => j.payload.Prompt === 'survive' && j.polls > 0));
      await srv.close();
      fake.finish(job.id);
      srv = await startTestServer(env);
      assert.equal((await settled(srv, token, reply.task_id)).status, 'success');
      assert.equal(fake.submits.length - before, 1, 'submitted once');
    } finally {
      await srv.close();
      fs.rmSync(env.DATA_DIR, { recursive: true, force: true });
    }
  });
});
