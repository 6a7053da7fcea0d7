import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { loadCatalog } from '../src/catalog/catalog.ts';
import { rodinAdapter } from '../src/providers/rodin/adapter.ts';
import { TaskFailedError, TaskRejectedError, type GenerationEngine, type GenerationJob } from '../src/providers/spec.ts';
import { FakeRodin, RODIN_KEY } from './fakes/rodin-upstream.ts';
import { runContext } from './support/run-context.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const catalog = loadCatalog({ config: {} });

function engineFor(fake: FakeRodin): GenerationEngine {
  return rodinAdapter({
    provider: 'rodin',
    settings: {},
    baseURL: fake.baseUrl,
    apiKey: RODIN_KEY,
    client: { provider: 'rodin', timeoutMs: 5_000, concurrency: 4, retry: { attempts: 2, baseDelayMs: 5, maxDelayMs: 20 } },
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

const image = (name: string) => ({ data: Buffer.from(`bytes of ${name}`), mimeType: 'image/png', fileName: `${name}.png` });

describe('Rodin adapter: requests and results', () => {
  let fake: FakeRodin;
  let engine: GenerationEngine;
  before(async () => {
    fake = await FakeRodin.start();
    engine = engineFor(fake);
  });
  after(() => fake.close());

  it('text (Gen-2.5 High): multipart fields with Rodin\'s tier, Raw triangles, quality override, strings for booleans', async () => {
    const ctx = runContext();
    const out = await run(engine, job('rodin-gen2.5-high', 'mesh3d.generate.text', {
      prompt: 'a stone lantern', geometry_file_format: 'glb', enable_texture: true, enable_pbr: false, texture_quality: 'detailed', face_limit: 50000, seed: 42,
      t_pose: false, geometry_instruct_mode: 'creative',
    }), ctx);
    const submit = fake.requests.find((r) => r.path === '/api/v2/rodin')!;
    assert.equal(submit.headers.authorization, `Bearer ${RODIN_KEY}`);
    assert.match(String(submit.headers['content-type']), /^multipart\/form-data; boundary=/);
    assert.deepEqual(fake.submits.at(-1), {
      fields: [['prompt', 'a stone lantern'], ['tier', 'Gen-2.5-High'], ['geometry_file_format', 'glb'], ['mesh_mode', 'Raw'], ['quality_override', '50000'], ['seed', '42'], ['TAPose', 'false'],
        ['material', 'Shaded'], ['hd_texture', 'true'], ['geometry_instruct_mode', 'creative']],
      images: [],
    });
    const saved = (ctx.remembered[0] as Json).upstream;
    assert.equal(saved.provider, 'rodin');
    assert.equal(saved.task_id, [...fake.tasks.keys()].at(-1));
    const status = fake.requests.find((r) => r.path === '/api/v2/status')!;
    assert.deepEqual(status.json, { subscription_key: fake.tasks.get(saved.task_id)!.subscriptionKey });
    assert.deepEqual(fake.requests.find((r) => r.path === '/api/v2/download')!.json, { task_uuid: saved.task_id });
    assert.deepEqual(out.files.map((f) => [f.role, f.type, f.fileName, f.mimeType]), [['preview', 'image', 'preview.webp', 'image/webp'], ['model', '3d', 'model.glb', 'model/gltf-binary']]);
    assert.equal(out.files[1]!.data.subarray(0, 4).toString('latin1'), 'glTF');
  });

  it('Gen-2 quads: the tier\'s quality and HighPack; no texture on Gen-2.5 is material None', async () => {
    await run(engine, job('rodin-gen2-low', 'mesh3d.generate.text', { prompt: 'a cup', topology: 'quad', texture_quality: 'detailed', enable_pbr: true, geometry_file_format: 'fbx' }));
    assert.deepEqual(fake.submits.at(-1)!.fields, [['prompt', 'a cup'], ['tier', 'Gen-2'], ['geometry_file_format', 'fbx'], ['quality', 'low'], ['mesh_mode', 'Quad'], ['material', 'PBR'], ['addons', 'HighPack']]);
    await run(engine, job('rodin-gen2.5-extra-low', 'mesh3d.generate.text', { prompt: 'a cup', enable_texture: false, enable_pbr: false, geometry_file_format: 'glb' }));
    assert.deepEqual(fake.submits.at(-1)!.fields, [['prompt', 'a cup'], ['tier', 'Gen-2.5-Extreme-Low'], ['geometry_file_format', 'glb'], ['mesh_mode', 'Raw'], ['material', 'None']]);
  });

  it('image and multiview: images uploaded as files, front first; Gen-2.5 delighting', async () => {
    const refs = { 'blake3:front': image('front'), 'blake3:left': image('left'), 'blake3:back': image('back') };
    await run(engine, job('rodin-gen2.5-medium', 'mesh3d.generate.multiview', {
      view_images: [{ view_type: 'back', file: { url: 'blake3:back' } }, { view_type: 'front', file: { url: 'blake3:front' } }, { view_type: 'left', file: { url: 'blake3:left' } }],
      texture_delight: true, geometry_file_format: 'glb',
    }), runContext({ inputs: refs }));
    const sent = fake.submits.at(-1)!;
    assert.deepEqual(sent.images.map((i) => [i.name, i.type, i.size]), [['image-0.png', 'image/png', 14], ['image-1.png', 'image/png', 13], ['image-2.png', 'image/png', 13]]);
    const form = fake.requests.filter((r) => r.path === '/api/v2/rodin').at(-1)!.raw.toString('latin1');
    assert.ok(form.indexOf('bytes of front') < form.indexOf('bytes of left') && form.indexOf('bytes of left') < form.indexOf('bytes of back'));
    assert.deepEqual(sent.fields, [['tier', 'Gen-2.5-Medium'], ['geometry_file_format', 'glb'], ['mesh_mode', 'Raw'], ['texture_delight', 'true']]);
  });

  it('a failed job fails the task; a refusal inside a 201 fails it with Rodin\'s message', async () => {
    fake.plans = [{ outcome: 'failed' }, { outcome: 'no_credits' }, { outcome: 'success', runningPolls: 1 }];
    await assert.rejects(run(engine, job('rodin-gen2-medium', 'mesh3d.generate.text', { prompt: 'x' })), (err: unknown) => {
      assert.ok(err instanceof TaskFailedError);
      assert.equal(err.message, 'Rodin generation failed');
      assert.equal(err.originalMessage, 'job statuses: Done, Failed');
      return true;
    });
    await assert.rejects(run(engine, job('rodin-gen2-medium', 'mesh3d.generate.text', { prompt: 'x' })), (err: unknown) => {
      assert.ok(err instanceof TaskFailedError);
      assert.equal(err.message, 'Rodin refused the generation: NO_ENOUGH_CREDITS');
      assert.equal(err.originalMessage, 'Insufficient credits to submit the job.');
      return true;
    });
  });

  it('refuses what Rodin cannot take before sending anything', () => {
    assert.throws(() => engine.check!(job('rodin-gen2-medium', 'mesh3d.edit.convert', {})), TaskRejectedError);
    assert.throws(() => engine.check!(job('rodin-gen2-medium', 'mesh3d.generate.text', { prompt: 'x', seed: 70000 })), /seed from 0 to 65535/);
    const odd = job('rodin-gen2-medium', 'mesh3d.generate.text', { prompt: 'x' });
    odd.model = { ...odd.model, defaultRealModelName: 'Gen-2/extra-high' };
    assert.throws(() => engine.check!(odd), /Rodin has no model for Gen-2\/extra-high/);
  });
});
