import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { loadCatalog } from '../src/catalog/catalog.ts';
import { falAdapter } from '../src/providers/fal/adapter.ts';
import { TaskFailedError, TaskRejectedError, type GenerationEngine, type GenerationJob } from '../src/providers/spec.ts';
import { FAL_KEY, FakeFal } from './fakes/fal-upstream.ts';
import { runContext } from './support/run-context.ts';

const catalog = loadCatalog({ config: {} });
const IMG = 'https://images.example/';

function engineFor(fake: FakeFal): GenerationEngine {
  return falAdapter({
    provider: 'fal',
    settings: {},
    baseURL: fake.server.url,
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
    const base = `${fake.server.url}/tripo3d/h3.1/requests/${id}`;
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
