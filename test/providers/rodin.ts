import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import sharp from 'sharp';
import { rodinAdapter } from '../../src/providers/rodin/adapter.ts';
import { TaskFailedError, TaskRejectedError, type GenerationEngine } from '../../src/providers/spec.ts';
import { FakeRodin, RODIN_KEY } from '../fakes/rodin-upstream.ts';
import {
  adapterEngine, assertNotCancellableWhileHeld, assertResumedAfterRestart, assertWaitLimited, catalogJob as job, providerEnv, runJob as run, useProviderGateway, type HeldTask, type Json,
} from '../support/provider-harness.ts';
import { runContext } from '../support/run-context.ts';

const engineFor = (fake: FakeRodin): GenerationEngine => adapterEngine(rodinAdapter, 'rodin', fake.baseUrl, RODIN_KEY);

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
    const form = fake.requests.filter((r) => r.path === '/api/v2/rodin').at(-1)!.body.toString('latin1');
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
    assert.throws(() => engine.check!(job('rodin-gen2-medium', 'mesh3d.generate.text', { prompt: 'x' }, 'Gen-2/extra-high')), /Rodin has no model for Gen-2\/extra-high/);
  });
});

// ---- through the gateway over HTTP ----

const KEY_ENV = 'GENGATE_TEST_RODIN_KEY';
process.env[KEY_ENV] = RODIN_KEY;

const gatewayEnv = (fake: FakeRodin, rodin: Record<string, unknown> = {}) => providerEnv('rodin', fake.baseUrl, { api_key_env: KEY_ENV, ...rodin });

/** A text generation Rodin keeps generating until the test finishes it: the first task made from now on. */
function held(fake: FakeRodin, model: string, prompt: string): HeldTask {
  const known = fake.tasks.size;
  return {
    path: '/v1/mesh3d/generate/text',
    body: () => ({ model, prompt }),
    polled: () => {
      const task = [...fake.tasks.values()][known];
      return task && task.polls > 0 && task.uuid;
    },
    finish: (uuid) => fake.finish(uuid),
  };
}

describe('Rodin through the gateway', () => {
  const gateway = useProviderGateway({ startFake: FakeRodin.start, env: (fake) => gatewayEnv(fake), userId: 'sculptor' });

  it('image generation: the uploaded picture and fields sent, a successful record with model and preview', async () => {
    const { fake, user } = gateway;
    const url = await user.upload(await sharp({ create: { width: 300, height: 300, channels: 3, background: '#468' } }).png().toBuffer(), 'vase.png', 'image/png');
    const reply = await user.postOk('/v1/mesh3d/generate/image', { model: 'rodin-gen2-medium', file: { url }, topology: 'quad', face_limit: 8000, t_pose: true });
    const record = await user.settledStatus(reply.task_id);
    assert.equal(record.status, 'success', JSON.stringify(record));
    const sent = fake.submits.at(-1)!;
    assert.deepEqual(sent.fields, [['tier', 'Gen-2'], ['geometry_file_format', 'glb'], ['quality', 'medium'], ['mesh_mode', 'Quad'], ['quality_override', '8000'], ['TAPose', 'true']]);
    assert.equal(sent.images.length, 1);
    assert.equal(sent.images[0]!.type, 'image/png');
    assert.deepEqual(record.output_content.map((o: Json) => [o.type, o.role, o.filename]), [['image', 'preview', 'preview.webp'], ['3d', 'model', 'model.glb']]);
    const model = await fetch(record.output_content[1].url);
    assert.equal(model.headers.get('content-type'), 'model/gltf-binary');
    assert.equal(Buffer.from(await model.arrayBuffer()).subarray(0, 4).toString('latin1'), 'glTF');
  });

  it('a failed job ends the task failed; a 503 on the status query is retried', async () => {
    const { fake, user } = gateway;
    fake.plans = [{ outcome: 'failed' }, { outcome: 'success', runningPolls: 1 }];
    const failed = await user.postOk('/v1/mesh3d/generate/text', { model: 'rodin-gen2.5-low', prompt: 'a cracked bell' });
    const record = await user.settledStatus(failed.task_id);
    assert.equal(record.status, 'failed');
    assert.equal(record.message, 'Rodin generation failed');
    assert.equal(record.original_error_message, 'job statuses: Done, Failed');

    fake.inject('POST', '/api/v2/status', { status: 503, body: { error: 'SERVICE_UNAVAILABLE' } });
    const retried = await user.postOk('/v1/mesh3d/generate/text', { model: 'rodin-gen2.5-low', prompt: 'a bell' });
    assert.equal((await user.settledStatus(retried.task_id)).status, 'success');
    const task = [...fake.tasks.values()].at(-1)!;
    const statusCalls = fake.requests.filter((r) => r.path === '/api/v2/status' && (r.json as Json)?.subscription_key === task.subscriptionKey).length;
    assert.equal(statusCalls, task.polls + 1, 'the status query answered 503 was sent again');
  });

  it('cancel answers 409 task_not_cancellable', async () => {
    const { fake, user } = gateway;
    fake.plans = [{ outcome: 'stall' }, { outcome: 'success', runningPolls: 1 }];
    await assertNotCancellableWhileHeld(user, held(fake, 'rodin-gen2.5-low', 'slow bell'));
  });

  it('max_wait_ms fails a task still generating', async () => {
    const { fake } = gateway;
    fake.plans = [{ outcome: 'stall' }];
    await assertWaitLimited((limit) => gatewayEnv(fake, limit), '/v1/mesh3d/generate/text', { model: 'rodin-gen2-low', prompt: 'forever' });
  });

  it('a restart resumes polling the same Rodin task: one submit', async () => {
    const { fake } = gateway;
    fake.plans = [{ outcome: 'stall' }];
    await assertResumedAfterRestart({ ...gatewayEnv(fake), TASK_LEASE_MS: '300' }, held(fake, 'rodin-gen2-low', 'survive'), () => fake.submits.length);
  });
});
