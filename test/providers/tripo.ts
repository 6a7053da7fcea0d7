import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { NodeIO } from '@gltf-transform/core';
import { tripoAdapter } from '../../src/providers/tripo/adapter.ts';
import { TaskFailedError, TaskRejectedError, type GenerationEngine } from '../../src/providers/spec.ts';
import { FakeTripo, SEGMENT_PARTS, TRIPO_KEY } from '../fakes/tripo-upstream.ts';
import { sampleGlb } from '../fakes/upstream-media.ts';
import {
  adapterEngine, assertNotCancellableWhileHeld, assertResumedAfterRestart, assertWaitLimited, catalogJob as job, providerEnv, runJob as run, useProviderGateway, type HeldTask, type Json,
} from '../support/provider-harness.ts';
import { runContext } from '../support/run-context.ts';

const PNG_URL = 'https://images.example/cat.png';

const engineFor = (fake: FakeTripo): GenerationEngine => adapterEngine(tripoAdapter, 'tripo', fake.baseUrl, TRIPO_KEY);

/** The input of an edit of a history whose task ran on `provider` as upstream task `taskId`. */
function editSource(taskId: string | undefined, provider = 'tripo', model = 'blake3:' + 'a'.repeat(64)) {
  return { history_id: 'hist_1', operation: 'text', model, ...(taskId ? { upstream: { upstream: { provider, task_id: taskId } } } : {}) };
}

describe('Tripo adapter: requests and results', () => {
  let fake: FakeTripo;
  let engine: GenerationEngine;
  before(async () => {
    fake = await FakeTripo.start();
    engine = engineFor(fake);
  });
  after(() => fake.close());

  it('text to model (H3.1): every field under Tripo\'s name, the version string, files by role', async () => {
    const ctx = runContext();
    const out = await run(engine, job('tripo-v3.1', 'mesh3d.generate.text', {
      prompt: 'a brass owl', negative_prompt: 'blurry', image_seed: 9, seed: 7, texture_seed: 8, face_limit: 20000,
      enable_texture: true, enable_pbr: true, geometry_quality: 'detailed', texture_quality: 'detailed', topology: 'quad', auto_size: true, export_uv: true,
    }), ctx);
    const submit = fake.requests.find((r) => r.method === 'POST' && r.path === '/v2/openapi/task')!;
    assert.equal(submit.headers.authorization, `Bearer ${TRIPO_KEY}`);
    assert.match(String(submit.headers['content-type']), /^application\/json/);
    assert.deepEqual(submit.json, {
      type: 'text_to_model', model_version: 'v3.1-20260211', prompt: 'a brass owl', negative_prompt: 'blurry', image_seed: 9, model_seed: 7, texture_seed: 8,
      face_limit: 20000, texture: true, pbr: true, texture_quality: 'detailed', geometry_quality: 'detailed', quad: true, auto_size: true, export_uv: true,
    });
    const taskId = (ctx.remembered[0] as Json).upstream.task_id;
    assert.deepEqual(ctx.remembered, [{ upstream: { provider: 'tripo', task_id: taskId } }]);
    assert.ok(fake.requests.some((r) => r.method === 'GET' && r.path === `/v2/openapi/task/${taskId}`));
    assert.deepEqual(out.files.map((f) => [f.role, f.type, f.fileName, f.mimeType]), [
      ['model', '3d', 'model.glb', 'model/gltf-binary'],
      ['base_model', '3d', 'base_model.glb', 'model/gltf-binary'],
      ['pbr_model', '3d', 'pbr_model.glb', 'model/gltf-binary'],
      ['preview', 'image', 'preview.webp', 'image/webp'],
    ]);
    const doc = await new NodeIO().readBinary(new Uint8Array(out.files[0]!.data));
    assert.equal(doc.getRoot().listMeshes().length, 1);
    // Result downloads carry no API key.
    assert.ok(fake.requests.filter((r) => r.path.startsWith('/files/')).every((r) => r.headers.authorization === undefined));
    assert.ok(ctx.progressSeen.length > 0);
  });

  it('P1: the validated defaults go as texture/pbr, a triangle topology and unset fields stay out', async () => {
    await run(engine, job('tripo-p1', 'mesh3d.generate.text', { prompt: 'a chair', topology: 'triangle', enable_texture: true, enable_pbr: false, face_limit: 500 }));
    assert.deepEqual(fake.submits.at(-1), { type: 'text_to_model', model_version: 'P1-20260311', prompt: 'a chair', face_limit: 500, texture: true, pbr: false });
  });

  it('image to model: a URL goes as it is with its type; an asset hash is published first', async () => {
    await run(engine, job('tripo-v2.5-image', 'mesh3d.generate.image', { file: { url: 'https://images.example/cat.jpeg', mimetype: 'image/jpeg' }, enable_texture: true, enable_pbr: false, texture_alignment: 'geometry', orientation: 'align_image', enable_image_autofix: true }));
    assert.deepEqual(fake.submits.at(-1), {
      type: 'image_to_model', model_version: 'v2.5-20250123', file: { type: 'jpg', url: 'https://images.example/cat.jpeg' },
      texture: true, pbr: false, enable_image_autofix: true, texture_alignment: 'geometry', orientation: 'align_image',
    });
    const hash = 'blake3:' + 'b'.repeat(64);
    const ctx = runContext({ inputs: { [hash]: { data: Buffer.from('png'), mimeType: 'image/png', fileName: 'dog.png' } } });
    await run(engine, job('tripo-v3.0', 'mesh3d.generate.image', { file: { url: hash } }), ctx);
    assert.deepEqual(fake.submits.at(-1)!.file, { type: 'png', url: 'http://127.0.0.1/files/published/dog.png' });
  });

  it('multiview: views fill the four slots front, left, back, right with {} for a missing one', async () => {
    await run(engine, job('tripo-v3.0', 'mesh3d.generate.multiview', {
      view_images: [{ view_type: 'front', file: { url: PNG_URL } }, { view_type: 'back', file: { url: 'https://images.example/back.webp' } }, { view_type: 'left', file: { url: 'https://images.example/l.png' } }],
      enable_texture: false, enable_pbr: false,
    }));
    assert.deepEqual(fake.submits.at(-1), {
      type: 'multiview_to_model', model_version: 'v3.0-20250812',
      files: [{ type: 'png', url: PNG_URL }, { type: 'png', url: 'https://images.example/l.png' }, { type: 'webp', url: 'https://images.example/back.webp' }, {}],
      texture: false, pbr: false,
    });
  });

  it('an upstream failure fails the task with Tripo\'s message as the original error', async () => {
    fake.plans = [{ outcome: 'failed', errorCode: 2008, errorMsg: 'Task is rejected because the input violates our content policy.' }, { outcome: 'success', runningPolls: 1 }];
    await assert.rejects(run(engine, job('tripo-v3.1', 'mesh3d.generate.text', { prompt: 'bad' })), (err: unknown) => {
      assert.ok(err instanceof TaskFailedError);
      assert.equal(err.message, 'Tripo task failed (error 2008)');
      assert.equal(err.originalMessage, 'Task is rejected because the input violates our content policy.');
      return true;
    });
  });

  it('a refused submit fails with Tripo\'s message and suggestion', async () => {
    await assert.rejects(run(engine, job('tripo-v3.1', 'mesh3d.generate.text', { prompt: 'x' }, 'v9.9')), (err: unknown) => {
      assert.ok(err instanceof TaskFailedError);
      assert.equal(err.message, 'tripo answered HTTP 400');
      assert.equal(err.originalMessage, 'The version value is invalid (check the request)');
      return true;
    });
  });
});

describe('Tripo adapter: edits', () => {
  let fake: FakeTripo;
  let engine: GenerationEngine;
  let generated: string;
  before(async () => {
    fake = await FakeTripo.start();
    engine = engineFor(fake);
    const ctx = runContext();
    await run(engine, job('tripo-v3.1', 'mesh3d.generate.text', { prompt: 'a robot' }), ctx);
    generated = (ctx.remembered[0] as Json).upstream.task_id;
  });
  after(() => fake.close());

  it('segmentation takes the source\'s Tripo task id and reports the parts of the result', async () => {
    const out = await run(engine, job('tripo-segment-v1.0', 'mesh3d.edit.segmentation', { history_id: 'hist_1', source: editSource(generated) }));
    assert.deepEqual(fake.submits.at(-1), { type: 'mesh_segmentation', model_version: 'v1.0-20250506', original_model_task_id: generated });
    assert.deepEqual(out.extra, { parts: SEGMENT_PARTS });
    assert.deepEqual(out.files.map((f) => f.role), ['model', 'preview']);
  });

  it('smart low-poly goes as highpoly_to_lowpoly with the re-topology version and quad', async () => {
    await run(engine, job('tripo-smart-lowpoly-v2.0', 'mesh3d.edit.smart_lowpoly', { history_id: 'h', topology: 'quad', quad: true, face_limit: 4000, part_names: ['head'], bake: true, source: editSource(generated) }));
    assert.deepEqual(fake.submits.at(-1), { type: 'highpoly_to_lowpoly', model_version: 'P-v2.0-20251225', original_model_task_id: generated, quad: true, part_names: ['head'], face_limit: 4000, bake: true });
    await run(engine, job('tripo-smart-lowpoly-v2.0', 'mesh3d.edit.smart_lowpoly', { history_id: 'h', topology: 'triangle', quad: false, bake: true, source: editSource(generated) }));
    assert.deepEqual(fake.submits.at(-1), { type: 'highpoly_to_lowpoly', model_version: 'P-v2.0-20251225', original_model_task_id: generated, bake: true });
  });

  it('texture: the prompt\'s views in four slots, the style image, the texture model version', async () => {
    await run(engine, job('tripo-texture-v2.5', 'mesh3d.edit.texture', {
      history_id: 'h', texture: true, pbr: false, texture_quality: 'standard', bake: true, texture_seed: 3, compress: 'geometry',
      texture_prompt: { view_images: [{ view_type: 'front', file: { url: PNG_URL } }, { view_type: 'right', file: { url: 'https://images.example/r.jpg' } }], style_image: { url: 'https://images.example/style.png', mimetype: 'image/png' } },
      source: editSource(generated),
    }));
    assert.deepEqual(fake.submits.at(-1), {
      type: 'texture_model', model_version: 'v2.5-20250123', original_model_task_id: generated,
      texture_prompt: { images: [{ type: 'png', url: PNG_URL }, {}, {}, { type: 'jpg', url: 'https://images.example/r.jpg' }], style_image: { type: 'png', url: 'https://images.example/style.png' } },
      texture: true, pbr: false, texture_seed: 3, texture_quality: 'standard', compress: 'geometry', bake: true,
    });
  });

  it('convert: options as sent, the FBX preset by tool name, the result named by its format', async () => {
    const out = await run(engine, job('tripo-v3.0', 'mesh3d.edit.convert', {
      history_id: 'h', format: 'FBX', topology: 'triangle', quad: false, face_limit: 10000, texture_size: 4096, texture_format: 'PNG', pivot_to_center_bottom: false,
      scale_factor: 1, with_animation: true, pack_uv: false, bake: true, animate_in_place: false, export_orientation: '+x', fbx_preset: 'preset_b', source: editSource(generated),
    }));
    assert.deepEqual(fake.submits.at(-1), {
      type: 'convert_model', original_model_task_id: generated, format: 'FBX', face_limit: 10000, texture_size: 4096, texture_format: 'PNG', pivot_to_center_bottom: false,
      scale_factor: 1, with_animation: true, pack_uv: false, bake: true, animate_in_place: false, export_orientation: '+x', fbx_preset: '3dsmax',
    });
    assert.deepEqual(out.files.map((f) => [f.role, f.fileName, f.mimeType]), [['model', 'model.fbx', 'application/vnd.autodesk.fbx']]);
  });

  it('check riggable, rig and retarget: Tripo\'s names for specs, the answer and the rig in extra', async () => {
    const check = await run(engine, job('tripo-rig-v2.5', 'mesh3d.edit.check_riggable', { history_id: 'h', source: editSource(generated) }));
    assert.deepEqual(fake.submits.at(-1), { type: 'animate_prerigcheck', original_model_task_id: generated });
    assert.deepEqual(check, { files: [], extra: { riggable: true, rig_type: 'biped' } });

    const ctx = runContext();
    const rig = await run(engine, job('tripo-rig-v2.5', 'mesh3d.edit.rig', { history_id: 'h', out_format: 'fbx', rig_type: 'quadruped', spec: 'spec_b', rigging_model_version: 'v2.5-20260210', source: editSource(generated) }), ctx);
    assert.deepEqual(fake.submits.at(-1), { type: 'animate_rig', model_version: 'v2.5-20260210', original_model_task_id: generated, out_format: 'fbx', rig_type: 'quadruped', spec: 'mixamo' });
    assert.deepEqual(rig.extra, { rig: { rig_type: 'quadruped', spec: 'spec_b' } });
    const rigTask = (ctx.remembered[0] as Json).upstream.task_id;

    await run(engine, job('tripo-rig-v2.5', 'mesh3d.edit.retarget_animation', { history_id: 'h', animations: ['preset:walk'], out_format: 'glb', bake_animation: true, export_with_geometry: true, animate_in_place: false, source: editSource(rigTask) }));
    assert.deepEqual(fake.submits.at(-1), { type: 'animate_retarget', original_model_task_id: rigTask, animation: 'preset:walk', out_format: 'glb', bake_animation: true, export_with_geometry: true, animate_in_place: false });
    await run(engine, job('tripo-rig-v2.5', 'mesh3d.edit.retarget_animation', { history_id: 'h', animations: ['preset:walk', 'preset:run'], out_format: 'fbx', export_with_geometry: false, animate_in_place: true, source: editSource(rigTask) }));
    assert.deepEqual(fake.submits.at(-1), { type: 'animate_retarget', original_model_task_id: rigTask, animations: ['preset:walk', 'preset:run'], out_format: 'fbx', export_with_geometry: false, animate_in_place: true });
  });

  it('stylize and refine: Tripo\'s style names; refine takes the draft task', async () => {
    const out = await run(engine, job('tripo-v3.1', 'mesh3d.edit.stylize', { history_id: 'h', style: 'blockgame', block_size: 64, source: editSource(generated) }));
    assert.deepEqual(fake.submits.at(-1), { type: 'stylize_model', original_model_task_id: generated, style: 'minecraft', block_size: 64 });
    assert.equal(out.files[0]!.fileName, 'model.schem');
    await run(engine, job('tripo-turbo-v1.0-text', 'mesh3d.edit.refine', { history_id: 'h', source: editSource(generated) }));
    assert.deepEqual(fake.submits.at(-1), { type: 'refine_model', draft_model_task_id: generated });
  });

  it('a source made elsewhere is uploaded through STS (signed) and imported, then edited', async () => {
    const ref = 'blake3:' + 'c'.repeat(64);
    const glb = await sampleGlb(['a']);
    const ctx = runContext({ inputs: { [ref]: { data: glb, mimeType: 'model/gltf-binary', fileName: 'rodin-model.glb' } } });
    await run(engine, job('tripo-rig-v2.5', 'mesh3d.edit.check_riggable', { history_id: 'h', source: editSource('rodin-uuid', 'rodin', ref) }), ctx);
    const token = fake.requests.find((r) => r.path === '/v2/openapi/upload/sts/token')!;
    assert.deepEqual(token.json, { format: 'glb' });
    const put = fake.requests.find((r) => r.method === 'PUT')!;
    assert.ok(put.body.equals(glb), 'the model bytes were uploaded');
    const [importSubmit, edit] = fake.submits.slice(-2);
    const key = [...fake.objects.keys()].at(-1);
    assert.deepEqual(importSubmit, { type: 'import_model', file: { type: 'glb', object: { bucket: 'tripo-data', key } } });
    const importId = (ctx.remembered[0] as Json).tripo_import.task_id;
    assert.deepEqual(edit, { type: 'animate_prerigcheck', original_model_task_id: importId });
    assert.deepEqual((ctx.remembered[1] as Json).upstream.source_task_id, importId);
  });

  it('edits that need Tripo\'s own segmentation, rig or draft are refused for a foreign source', async () => {
    for (const [endpoint, alias] of [['mesh3d.edit.completion', 'tripo-segment-v1.0'], ['mesh3d.edit.retarget_animation', 'tripo-rig-v2.5'], ['mesh3d.edit.refine', 'tripo-turbo-v1.0-text']]) {
      assert.throws(() => engine.check!(job(alias!, endpoint!, { history_id: 'h', part_names: ['x'], animations: ['preset:walk'], source: editSource('x', 'rodin') })), TaskRejectedError);
    }
    assert.throws(() => engine.check!(job('tripo-v3.1', 'video.generations', {})), /does not run video.generations/);
  });
});

// ---- through the gateway over HTTP ----

const KEY_ENV = 'GENGATE_TEST_TRIPO_KEY';
process.env[KEY_ENV] = TRIPO_KEY;

const gatewayEnv = (fake: FakeTripo, tripo: Record<string, unknown> = {}, others: Record<string, unknown> = {}) => providerEnv('tripo', fake.baseUrl, { api_key_env: KEY_ENV, ...tripo }, others);

/** A text generation of `prompt` that Tripo keeps running until the test finishes it. */
const held = (fake: FakeTripo, prompt: string): HeldTask => ({
  path: '/v1/mesh3d/generate/text',
  body: () => ({ model: 'tripo-v3.1', prompt }),
  polled: () => [...fake.tasks.values()].find((t) => t.body.prompt === prompt && t.polls > 0)?.id,
  finish: (id) => fake.finish(id),
});

describe('Tripo through the gateway', () => {
  const gateway = useProviderGateway({ startFake: FakeTripo.start, env: (fake) => ({ ...gatewayEnv(fake, {}, { rodin: { adapter: 'local' } }), TASK_LEASE_MS: '500' }), userId: 'maker' });

  it('text generation: the exact task sent, a successful record with its files served by role', async () => {
    const { fake, user } = gateway;
    const reply = await user.postOk('/v1/mesh3d/generate/text', { model: 'tripo-v3.1', prompt: 'a copper kettle', geometry_quality: 'detailed', face_limit: 1500000 });
    assert.ok(reply.mesh3d_history_id && reply.material_id);
    const record = await user.settledStatus(reply.task_id);
    assert.equal(record.status, 'success', JSON.stringify(record));
    assert.deepEqual(fake.submits.at(-1), { type: 'text_to_model', model_version: 'v3.1-20260211', prompt: 'a copper kettle', face_limit: 1500000, texture: true, pbr: false, geometry_quality: 'detailed' });
    assert.deepEqual(record.output_content.map((o: Json) => [o.type, o.role, o.filename]), [['3d', 'model', 'model.glb'], ['3d', 'base_model', 'base_model.glb'], ['image', 'preview', 'preview.webp']]);
    const model = await fetch(record.output_content[0].url);
    assert.equal(model.headers.get('content-type'), 'model/gltf-binary');
    const doc = await new NodeIO().readBinary(new Uint8Array(await model.arrayBuffer()));
    assert.equal(doc.getRoot().listNodes().length, 1);
    assert.equal(record.data.billings.length, 1);
  });

  it('edits of that history take its Tripo task id: segmentation, then completion of a part it named', async () => {
    const { fake, user } = gateway;
    const generated = await user.postOk('/v1/mesh3d/generate/text', { model: 'tripo-v3.0', prompt: 'a knight' });
    assert.equal((await user.settledStatus(generated.task_id)).status, 'success');
    const generationTask = [...fake.tasks.values()].at(-1)!.id;
    const seg = await user.postOk('/v1/mesh3d/edit/segmentation', { history_id: generated.mesh3d_history_id, model: 'tripo-segment-v1.0' });
    const segmented = await user.settledStatus(seg.task_id);
    assert.equal(segmented.status, 'success');
    assert.deepEqual(segmented.data.part_names, SEGMENT_PARTS, 'the parts of the result GLB');
    assert.deepEqual(fake.submits.at(-1), { type: 'mesh_segmentation', model_version: 'v1.0-20250506', original_model_task_id: generationTask });
    const segmentationTask = [...fake.tasks.values()].at(-1)!.id;
    const done = await user.postOk('/v1/mesh3d/edit/completion', { history_id: seg.history_id, model: 'tripo-segment-v1.0', part_names: [segmented.data.part_names[1]] });
    assert.equal((await user.settledStatus(done.task_id)).status, 'success');
    assert.deepEqual(fake.submits.at(-1), { type: 'mesh_completion', model_version: 'v1.0-20250506', original_model_task_id: segmentationTask, part_names: ['torso'] });
  });

  it('a model made by another engine is uploaded and imported before its rig check', async () => {
    const { fake, user } = gateway;
    const local = await user.postOk('/v1/mesh3d/generate/text', { model: 'rodin-gen2.5-medium', prompt: 'a small dog' });
    assert.equal((await user.settledStatus(local.task_id)).status, 'success');
    const check = await user.postOk('/v1/mesh3d/edit/check-riggable', { history_id: local.mesh3d_history_id, model: 'tripo-rig-v2.5' });
    const record = await user.settledStatus(check.task_id);
    assert.equal(record.status, 'success', JSON.stringify(record));
    const [imported, edit] = fake.submits.slice(-2);
    assert.equal(imported!.type, 'import_model');
    const uploaded = fake.objects.get((imported!.file as Json).object.key)!;
    assert.equal(uploaded.subarray(0, 4).toString('latin1'), 'glTF', 'the local model file was uploaded');
    const importTask = [...fake.tasks.values()].find((t) => t.body.type === 'import_model')!.id;
    assert.deepEqual(edit, { type: 'animate_prerigcheck', original_model_task_id: importTask });
  });

  it('an upstream failure ends the task failed with Tripo\'s message as original_error_message', async () => {
    const { fake, user } = gateway;
    fake.plans = [{ outcome: 'banned', errorCode: 2008, errorMsg: 'Task is rejected because the input violates our content policy.' }, { outcome: 'success', runningPolls: 1 }];
    const reply = await user.postOk('/v1/mesh3d/generate/text', { model: 'tripo-v3.1', prompt: 'something banned' });
    const record = await user.settledStatus(reply.task_id);
    assert.equal(record.status, 'failed');
    assert.equal(record.message, 'Tripo task banned (error 2008)');
    assert.equal(record.original_error_message, 'Task is rejected because the input violates our content policy.');
  });

  it('a 429 from Tripo is retried after its Retry-After and the task succeeds', async () => {
    const { fake, user } = gateway;
    fake.inject('POST', '/v2/openapi/task', { status: 429, body: { code: 2000, message: 'You have exceeded the limit of generation.' }, headers: { 'retry-after': '0' } });
    const before = fake.requests.length;
    const reply = await user.postOk('/v1/mesh3d/generate/text', { model: 'tripo-v3.1', prompt: 'retry me' });
    assert.equal((await user.settledStatus(reply.task_id)).status, 'success');
    const posts = fake.requests.slice(before).filter((r) => r.method === 'POST' && r.path === '/v2/openapi/task');
    assert.equal(posts.length, 2, 'the refused submit was sent again');
    assert.deepEqual(posts[0]!.json, posts[1]!.json);
  });

  it('cancel answers 409 task_not_cancellable and the task carries on to success', async () => {
    const { fake, user } = gateway;
    fake.plans = [{ outcome: 'stall' }, { outcome: 'success', runningPolls: 1 }];
    await assertNotCancellableWhileHeld(user, held(fake, 'slow'));
  });

  it('a task still running upstream after max_wait_ms fails with a clear message', async () => {
    const { fake } = gateway;
    fake.plans = [{ outcome: 'stall' }];
    await assertWaitLimited((limit) => gatewayEnv(fake, limit), '/v1/mesh3d/generate/text', { model: 'tripo-p1', prompt: 'forever' });
  });

  it('a run resumed after a restart polls the same Tripo task: one submit', async () => {
    const { fake } = gateway;
    fake.plans = [{ outcome: 'stall' }];
    const status = await assertResumedAfterRestart({ ...gatewayEnv(fake), TASK_LEASE_MS: '300' }, held(fake, 'survive a restart'), () => fake.submits.length);
    assert.equal(status.output_content.find((o: Json) => o.role === 'model').filename, 'model.glb');
  });
});
