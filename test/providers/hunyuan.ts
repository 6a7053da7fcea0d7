import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { hunyuanAdapter } from '../../src/providers/hunyuan/adapter.ts';
import { TaskFailedError, TaskRejectedError, type GenerationEngine } from '../../src/providers/spec.ts';
import { FakeHunyuan, HUNYUAN_SECRET_ID, HUNYUAN_SECRET_KEY } from '../fakes/hunyuan-upstream.ts';
import { sampleGlb } from '../fakes/upstream-media.ts';
import {
  adapterEngine, assertNotCancellableWhileHeld, assertResumedAfterRestart, assertWaitLimited, catalogJob as job, providerEnv, runJob as run, useProviderGateway, type HeldTask, type Json,
} from '../support/provider-harness.ts';
import { runContext } from '../support/run-context.ts';

const IMG = 'https://images.example/';

const engineFor = (fake: FakeHunyuan, apiKey = `${HUNYUAN_SECRET_ID}:${HUNYUAN_SECRET_KEY}`): GenerationEngine => adapterEngine(hunyuanAdapter, 'hunyuan', fake.url, apiKey);

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

const KEY_ENV = 'GENGATE_TEST_HUNYUAN_KEY';
process.env[KEY_ENV] = `${HUNYUAN_SECRET_ID}:${HUNYUAN_SECRET_KEY}`;

const gatewayEnv = (fake: FakeHunyuan, hunyuan: Record<string, unknown> = {}) => providerEnv('hunyuan', fake.url, { api_key_env: KEY_ENV, ...hunyuan });

/** A Pro 3.0 text generation of `prompt` that Tencent keeps running until the test finishes it. */
const held = (fake: FakeHunyuan, prompt: string): HeldTask => ({
  path: '/v1/mesh3d/generate/text',
  body: () => ({ model: 'hunyuan3d-pro-3.0', prompt }),
  polled: () => [...fake.jobs.values()].find((j) => j.payload.Prompt === prompt && j.polls > 0)?.id,
  finish: (id) => fake.finish(id),
});

describe('Hunyuan through the gateway', () => {
  const gateway = useProviderGateway({ startFake: FakeHunyuan.start, env: (fake) => gatewayEnv(fake), userId: 'potter' });

  it('Pro 3.1 multiview: signed submit with the views, a successful record with served files', async () => {
    const { fake, user } = gateway;
    const views = ['front', 'left_front', 'back', 'top'].map((v) => ({ view_type: v, file: { url: `${IMG}${v}.png` } }));
    const reply = await user.postOk('/v1/mesh3d/generate/multiview', { model: 'hunyuan3d-pro-3.1', view_images: views, enable_pbr: true, enable_texture: true });
    const record = await user.settledStatus(reply.task_id);
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
    const { fake, user } = gateway;
    fake.plans = [{ outcome: 'failed', errorCode: 'FailedOperation.GenerateFailed', errorMessage: 'Model generation failed, please try another image.' }, { outcome: 'success', runningPolls: 1 }];
    const failed = await user.postOk('/v1/mesh3d/generate/text', { model: 'hunyuan3d-rapid-2.5', prompt: 'a broken vase' });
    const record = await user.settledStatus(failed.task_id);
    assert.equal(record.status, 'failed');
    assert.equal(record.message, 'Hunyuan job failed (FailedOperation.GenerateFailed)');
    assert.equal(record.original_error_message, 'Model generation failed, please try another image.');

    fake.inject('POST', '/', { status: 502, body: 'Bad Gateway' });
    const before = fake.submits.length;
    const retried = await user.postOk('/v1/mesh3d/generate/text', { model: 'hunyuan3d-rapid-2.5', prompt: 'a vase' });
    assert.equal((await user.settledStatus(retried.task_id)).status, 'success');
    assert.equal(fake.submits.length - before, 2, 'the submit answered 502 was sent again');
  });

  it('a submit answered 502 and then busy is sent three times in all (routing.max_attempts), then fails', async () => {
    const { fake, user } = gateway;
    fake.inject('POST', '/', { status: 502, body: 'Bad Gateway' });
    fake.busy = Array(3).fill('RequestLimitExceeded.JobNumExceed');
    const before = fake.submits.length;
    try {
      const submitted = await user.postOk('/v1/mesh3d/generate/text', { model: 'hunyuan3d-rapid-2.5', prompt: 'a busy vase' });
      const record = await user.settledStatus(submitted.task_id);
      assert.equal(record.status, 'failed');
      assert.equal(record.message, 'Hunyuan refused SubmitHunyuanTo3DRapidJob (RequestLimitExceeded.JobNumExceed)');
      assert.equal(fake.submits.length - before, 3);
    } finally {
      fake.busy = [];
    }
  });

  it('cancel answers 409 task_not_cancellable', async () => {
    const { fake, user } = gateway;
    fake.plans = [{ outcome: 'stall' }, { outcome: 'success', runningPolls: 1 }];
    // Tencent reports no progress while a job runs: the task stays `started` until the end.
    await assertNotCancellableWhileHeld(user, held(fake, 'slow'));
  });

  it('max_wait_ms fails a job still running', async () => {
    const { fake } = gateway;
    fake.plans = [{ outcome: 'stall' }];
    await assertWaitLimited((limit) => gatewayEnv(fake, limit), '/v1/mesh3d/generate/text', { model: 'hunyuan3d-pro-3.0', prompt: 'forever' });
  });

  it('a restart resumes querying the same job: one submit', async () => {
    const { fake } = gateway;
    fake.plans = [{ outcome: 'stall' }];
    await assertResumedAfterRestart({ ...gatewayEnv(fake), TASK_LEASE_MS: '300' }, held(fake, 'survive'), () => fake.submits.length);
  });
});
