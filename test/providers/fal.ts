import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { falAdapter } from '../../src/providers/fal/adapter.ts';
import { TaskFailedError, TaskRejectedError, type GenerationEngine } from '../../src/providers/spec.ts';
import { FAL_KEY, FakeFal } from '../fakes/fal-upstream.ts';
import {
  adapterEngine, assertNotCancellableWhileHeld, assertResumedAfterRestart, assertWaitLimited, catalogJob as job, providerEnv, runJob as run, useProviderGateway, type HeldTask, type Json,
} from '../support/provider-harness.ts';
import { runContext } from '../support/run-context.ts';

const IMG = 'https://images.example/';

const engineFor = (fake: FakeFal): GenerationEngine => adapterEngine(falAdapter, 'fal', fake.url, FAL_KEY);

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
    // Three views pass the gateway's rules; fal wants four and refuses them, its detail the original message.
    const views = ['front', 'back', 'left'].map((v) => ({ view_type: v, file: { url: `${IMG}${v}.png` } }));
    await assert.rejects(run(engine, job('fal-tripo-p1', 'mesh3d.generate.multiview', { view_images: views })), (err: unknown) => {
      assert.ok(err instanceof TaskFailedError);
      assert.equal(err.message, 'fal answered HTTP 422');
      assert.equal(err.originalMessage, 'body.image_urls: exactly 4 images are required');
      return true;
    });
  });

  it('refuses edits and unknown versions before sending', () => {
    assert.throws(() => engine.check!(job('fal-tripo-p1', 'mesh3d.edit.convert', {})), TaskRejectedError);
    assert.throws(() => engine.check!(job('fal-tripo-p1', 'mesh3d.generate.text', { prompt: 'x' }, 'tripo3d/v9')), /fal has no model for tripo3d\/v9/);
  });
});

// ---- through the gateway over HTTP ----

const KEY_ENV = 'GENGATE_TEST_FAL_KEY';
process.env[KEY_ENV] = FAL_KEY;

const gatewayEnv = (fake: FakeFal, fal: Record<string, unknown> = {}) => providerEnv('fal', fake.url, { api_key_env: KEY_ENV, ...fal });

/** A text generation of `prompt` that fal keeps in its queue until the test finishes it. */
const held = (fake: FakeFal, model: string, prompt: string): HeldTask => ({
  path: '/v1/mesh3d/generate/text',
  body: () => ({ model, prompt }),
  polled: () => [...fake.queue.values()].find((r) => r.input.prompt === prompt && r.polls > 0)?.id,
  finish: (id) => fake.finish(id),
});

describe('fal through the gateway', () => {
  const gateway = useProviderGateway({ startFake: FakeFal.start, env: (fake) => gatewayEnv(fake), userId: 'caster' });

  it('H3.1 image generation: the queue submit, the served model and preview', async () => {
    const { fake, user } = gateway;
    const reply = await user.postOk('/v1/mesh3d/generate/image', { model: 'fal-tripo-v3.1', file: { url: `${IMG}teapot.png` }, texture_quality: 'detailed' });
    const record = await user.settledStatus(reply.task_id);
    assert.equal(record.status, 'success', JSON.stringify(record));
    assert.deepEqual(fake.submits.at(-1), { endpoint: 'tripo3d/h3.1/image-to-3d', input: { image_url: `${IMG}teapot.png`, texture_quality: 'detailed' } });
    assert.deepEqual(record.output_content.map((o: Json) => [o.type, o.role, o.filename]), [['3d', 'model', 'model.glb'], ['3d', 'base_model', 'base_model.glb'], ['image', 'preview', 'preview.webp']]);
    const model = await fetch(record.output_content[0].url);
    assert.equal(model.headers.get('content-type'), 'model/gltf-binary');
    assert.equal(Buffer.from(await model.arrayBuffer()).subarray(0, 4).toString('latin1'), 'glTF');
  });

  it('a failed request ends the task failed with fal\'s error; a 504 on the status URL is retried', async () => {
    const { fake, user } = gateway;
    fake.plans = [{ outcome: 'failed', error: 'Input image could not be processed.' }, { outcome: 'success', runningPolls: 1 }];
    const failed = await user.postOk('/v1/mesh3d/generate/text', { model: 'fal-tripo-p1', prompt: 'a ghost' });
    const record = await user.settledStatus(failed.task_id);
    assert.equal(record.status, 'failed');
    assert.equal(record.message, 'fal request failed (generation_error)');
    assert.equal(record.original_error_message, 'Input image could not be processed.');

    fake.inject('GET', '/tripo3d/p1/requests/', { status: 504, body: { detail: 'Gateway Timeout' } });
    const retried = await user.postOk('/v1/mesh3d/generate/text', { model: 'fal-tripo-p1', prompt: 'a lantern' });
    assert.equal((await user.settledStatus(retried.task_id)).status, 'success');
    const request = [...fake.queue.values()].find((r) => r.input.prompt === 'a lantern')!;
    const statusCalls = fake.requests.filter((r) => r.path === `/tripo3d/p1/requests/${request.id}/status`).length;
    assert.equal(statusCalls, request.polls + 1, 'the status query answered 504 was sent again');
  });

  it('cancel answers 409 task_not_cancellable', async () => {
    const { fake, user } = gateway;
    fake.plans = [{ outcome: 'stall' }, { outcome: 'success', runningPolls: 1 }];
    await assertNotCancellableWhileHeld(user, held(fake, 'fal-tripo-p1', 'slow'));
    assert.ok(!fake.requests.some((r) => r.path.endsWith('/cancel')), 'nothing was cancelled upstream');
  });

  it('max_wait_ms fails a request still queued', async () => {
    const { fake } = gateway;
    fake.plans = [{ outcome: 'stall' }];
    await assertWaitLimited((limit) => gatewayEnv(fake, limit), '/v1/mesh3d/generate/text', { model: 'fal-tripo-p1', prompt: 'forever' });
  });

  it('a restart resumes following the same request: one submit', async () => {
    const { fake } = gateway;
    fake.plans = [{ outcome: 'stall' }];
    await assertResumedAfterRestart({ ...gatewayEnv(fake), TASK_LEASE_MS: '300' }, held(fake, 'fal-tripo-v3.1', 'survive'), () => fake.submits.length);
  });
});
