/**
 * The 3D endpoints against the real server and its local engine: a whole edit chain from a text
 * generation to an FBX file, every step's file opened and checked; histories that are not the
 * caller's, not successful or of the wrong kind; a history that follows its task across a restart.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { NodeIO, type Document } from '@gltf-transform/core';
import { ALL_EXTENSIONS } from '@gltf-transform/extensions';
import { blake3 } from 'hash-wasm';
import { Mesh3dRepo } from '../src/storage/repos/mesh3d-repo.ts';
import { startTestServer, tempDataDir, type TestServer } from './support/server.ts';
import { eventually } from './support/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const SEG = 'tripo-segment-v1.0';
const LOWPOLY = 'tripo-smart-lowpoly-v2.0';
const TEX = 'tripo-texture-v2.5';
const RIG = 'tripo-rig-v2.5';
const io = new NodeIO().registerExtensions(ALL_EXTENSIONS);

/** Triangles of every primitive of every mesh. */
function triangles(doc: Document): number {
  let count = 0;
  for (const mesh of doc.getRoot().listMeshes()) {
    for (const prim of mesh.listPrimitives()) count += (prim.getIndices()?.getCount() ?? prim.getAttribute('POSITION')!.getCount()) / 3;
  }
  return count;
}

/** Names of the nodes that carry a mesh: the model's parts. */
function partNames(doc: Document): string[] {
  return doc.getRoot().listNodes().filter((n) => n.getMesh()).map((n) => n.getName());
}

class Client {
  /** The model file downloaded for each task. */
  readonly models = new Map<string, Buffer>();

  readonly srv: TestServer;
  readonly token: string;

  constructor(srv: TestServer, token: string) {
    this.srv = srv;
    this.token = token;
  }

  async post(path: string, body: Json): Promise<{ status: number; body: Json }> {
    const res = await this.srv.fetch(path, { method: 'POST', token: this.token, json: body });
    return { status: res.status, body: await res.json() };
  }

  /** Submits a call that must be accepted; answers its reply. */
  async submit(path: string, body: Json): Promise<Json> {
    const res = await this.post(path, body);
    assert.equal(res.status, 200, `${path}: ${JSON.stringify(res.body)}`);
    return res.body;
  }

  async record(taskId: string): Promise<Json> {
    return (await this.srv.fetch(`/v1/ai/result/${taskId}`, { token: this.token })).json();
  }

  /** Polls the task until it ends; answers its final record, which must say `status`. */
  async ended(taskId: string, status = 'success', timeoutMs = 60_000): Promise<Json> {
    const record = await eventually(`task ${taskId} to end`, async () => {
      const r = await this.record(taskId);
      return ['success', 'failed', 'rejected', 'cancelled'].includes(r.queue_status.status) ? r : undefined;
    }, timeoutMs);
    assert.equal(record.queue_status.status, status, JSON.stringify(record.queue_status));
    return record;
  }

  /** The result file with this role, downloaded through its output URL (no token needed). */
  async file(record: Json, role = 'model'): Promise<Buffer> {
    const item = record.queue_status.output_content.find((o: Json) => o.role === role);
    assert.ok(item, `no ${role} file in ${JSON.stringify(record.queue_status.output_content)}`);
    const res = await fetch(item.url);
    assert.equal(res.status, 200);
    const data = Buffer.from(await res.arrayBuffer());
    if (role === 'model') this.models.set(record.queue_status.task_id, data);
    return data;
  }

  async glb(record: Json, role = 'model'): Promise<Document> {
    return io.readBinary(new Uint8Array(await this.file(record, role)));
  }
}

describe('3D edit chain on the local engine', () => {
  let srv: TestServer;
  let me: Client;
  const history: Record<string, string> = {};

  before(async () => {
    srv = await startTestServer();
    me = new Client(srv, await srv.tokenFor('sculptor'));
  });
  after(async () => {
    await srv?.close();
  });

  it('a segmentation names its parts in queue_status.data.part_names; a completion of exactly those succeeds', async () => {
    const gen = await me.submit('/v1/mesh3d/generate/text', { model: 'tripo-v3.1', prompt: 'a teapot with a long spout' });
    await me.ended(gen.task_id);
    const seg = await me.submit('/v1/mesh3d/edit/segmentation', { history_id: gen.mesh3d_history_id, model: SEG });
    const segmented = await me.ended(seg.task_id);
    const names = segmented.queue_status.data.part_names;
    assert.ok(Array.isArray(names) && names.length >= 2, JSON.stringify(segmented.queue_status.data));
    assert.deepEqual(names, partNames(await me.glb(segmented)), 'the parts of the result file');

    const completion = await me.submit('/v1/mesh3d/edit/completion', { history_id: seg.history_id, model: SEG, part_names: names });
    const completed = await me.ended(completion.task_id);
    assert.deepEqual(partNames(await me.glb(completed)).sort(), [...names].sort());
    // The history keeps them: the completion's source carries the same parts.
    assert.deepEqual(completed.generate_info.input.source.parts, names);
    assert.equal(completed.queue_status.data.part_names, undefined, 'only a segmentation names parts');
  });

  it('text → segmentation → completion → smart-lowpoly → texture → rig → retarget → convert to FBX', async () => {
    const gen = await me.submit('/v1/mesh3d/generate/text', { model: 'tripo-v3.1', prompt: 'a small robot with long arms', face_limit: 8000 });
    assert.match(gen.mesh3d_history_id, /^hist_/);
    assert.match(gen.material_id, /^mat_/);
    const genRecord = await me.ended(gen.task_id);
    assert.equal(genRecord.queue_status.data.type, '3d');
    const generated = await me.glb(genRecord);
    assert.ok(triangles(generated) > 0 && triangles(generated) <= 8000, `${triangles(generated)} triangles`);
    history.text = gen.mesh3d_history_id;

    const seg = await me.submit('/v1/mesh3d/edit/segmentation', { history_id: gen.mesh3d_history_id, model: SEG });
    const segmented = await me.glb(await me.ended(seg.task_id));
    const parts = partNames(segmented);
    assert.ok(parts.length >= 2, `parts: ${parts.join(', ')}`);
    assert.equal(new Set(parts).size, parts.length, 'part names are unique');

    const completion = await me.submit('/v1/mesh3d/edit/completion', { history_id: seg.history_id, model: SEG, part_names: parts });
    const completionRecord = await me.ended(completion.task_id);
    assert.deepEqual(completionRecord.generate_info.input.source.parts, parts, 'the task knows the segmentation parts');
    assert.deepEqual(partNames(await me.glb(completionRecord)).sort(), [...parts].sort());

    const lowpoly = await me.submit('/v1/mesh3d/edit/smart-lowpoly', { history_id: completion.history_id, model: LOWPOLY, face_limit: 2000 });
    const reduced = await me.glb(await me.ended(lowpoly.task_id));
    assert.ok(triangles(reduced) > 0 && triangles(reduced) <= 2000, `${triangles(reduced)} triangles after smart low-poly`);

    const texture = await me.submit('/v1/mesh3d/edit/texture', { history_id: lowpoly.history_id, model: TEX, texture_prompt: { text: 'brushed copper' } });
    const textured = await me.glb(await me.ended(texture.task_id));
    assert.ok(textured.getRoot().listMaterials().some((m) => m.getBaseColorTexture()), 'a base colour texture');
    assert.ok(textured.getRoot().listTextures().length > 0);
    history.texture = texture.history_id;

    const rig = await me.submit('/v1/mesh3d/edit/rig', { history_id: texture.history_id, model: RIG, rig_type: 'biped' });
    const rigged = await me.glb(await me.ended(rig.task_id));
    const skins = rigged.getRoot().listSkins();
    assert.equal(skins.length, 1);
    assert.ok(skins[0]!.listJoints().length >= 2, 'a skeleton');
    assert.ok(skins[0]!.getInverseBindMatrices(), 'inverse bind matrices');
    const skinned = rigged.getRoot().listMeshes().flatMap((m) => m.listPrimitives());
    assert.ok(skinned.every((p) => p.getAttribute('JOINTS_0') && p.getAttribute('WEIGHTS_0')), 'every primitive is weighted');
    history.rig = rig.history_id;

    const retarget = await me.submit('/v1/mesh3d/edit/retarget-animation', { history_id: rig.history_id, animations: ['preset:walk', 'preset:idle'] });
    const retargetRecord = await me.ended(retarget.task_id);
    assert.equal(retargetRecord.generate_info.workflow._id, RIG, 'the model comes from the rig history');
    const animated = await me.glb(retargetRecord);
    const clips = animated.getRoot().listAnimations();
    assert.equal(clips.length, 2);
    assert.ok(clips.some((a) => a.getName().includes('walk')) && clips.some((a) => a.getName().includes('idle')), clips.map((a) => a.getName()).join(', '));
    assert.ok(clips.every((a) => a.listChannels().length > 0));

    const convert = await me.submit('/v1/mesh3d/edit/convert', { history_id: retarget.history_id, model: 'tripo-v3.1', format: 'FBX' });
    const fbx = await me.file(await me.ended(convert.task_id));
    const binary = fbx.subarray(0, 20).toString('latin1') === 'Kaydara FBX Binary  ';
    const ascii = /^; FBX 7\.\d/.test(fbx.subarray(0, 16).toString('latin1'));
    assert.ok(binary || ascii, `an FBX file, starting ${JSON.stringify(fbx.subarray(0, 24).toString('latin1'))}`);
    assert.ok(fbx.length > 1000);

    // Each step recorded a history on the one before, with what its task ended with.
    const repo = new Mesh3dRepo(srv.server.services.db);
    const steps = [gen.mesh3d_history_id, seg, completion, lowpoly, texture, rig, retarget, convert].map((s) => (typeof s === 'string' ? s : s.history_id));
    const rows = await Promise.all(steps.map(async (id) => (await repo.findHistory(id))!));
    assert.deepEqual(rows.map((r) => r.operation), ['text', 'segmentation', 'completion', 'smart_lowpoly', 'texture', 'rig', 'retarget_animation', 'convert']);
    assert.deepEqual(rows.map((r) => r.source_history_id), [null, ...steps.slice(0, -1)]);
    for (const row of rows) {
      assert.equal(row.status, 'success');
      assert.equal(row.owner_id, 'sculptor');
      assert.deepEqual([row.base_provider, row.base_model_version], ['tripo', 'v3.1-20260211'], 'the chain keeps its generation\'s family');
      assert.equal(row.model_ref, `blake3:${await blake3(me.models.get(row.task_id)!)}`, `${row.operation} keeps its task's model file`);
    }
    assert.deepEqual(rows.map((r) => r.model), ['tripo-v3.1', SEG, SEG, LOWPOLY, TEX, RIG, RIG, 'tripo-v3.1']);
    assert.deepEqual(JSON.parse(rows[1]!.parts!), parts);
    const rigSpec = JSON.parse(rows[5]!.rig!);
    assert.deepEqual([rigSpec.rig_type, rigSpec.spec], ['biped', 'spec_a']);
    assert.deepEqual(rigSpec.bones, skins[0]!.listJoints().map((j) => j.getName()));
    assert.deepEqual(JSON.parse(rows[6]!.rig!), rigSpec, 'the animated model keeps its rig');
  });

  it('refuses another user\'s history, an unsuccessful one and one of the wrong kind', async () => {
    const stranger = new Client(srv, await srv.tokenFor('stranger'));
    const foreign = await stranger.post('/v1/mesh3d/edit/segmentation', { history_id: history.text, model: SEG });
    assert.equal(foreign.status, 404);
    assert.deepEqual([foreign.body.error.code, foreign.body.error.param, foreign.body.error.type], ['history_not_found', 'history_id', 'not_found_error']);

    // An image that is not one: the generation fails, and its history cannot be edited.
    const upload = new FormData();
    upload.append('file', new Blob([Buffer.from('this is not a picture')], { type: 'image/png' }), 'broken.png');
    const uploaded = (await (await srv.fetch('/v1/files/upload', { method: 'POST', token: me.token, body: upload })).json()) as Json;
    const broken = await me.submit('/v1/mesh3d/generate/image', { model: 'tripo-v3.1', file: { url: uploaded.data.url } });
    await me.ended(broken.task_id, 'failed');
    const unsuccessful = await me.post('/v1/mesh3d/edit/segmentation', { history_id: broken.mesh3d_history_id, model: SEG });
    assert.equal(unsuccessful.status, 404);
    assert.equal(unsuccessful.body.error.code, 'history_not_found');

    const notRigged = await me.post('/v1/mesh3d/edit/retarget-animation', { history_id: history.texture, model: RIG, animation: 'preset:walk' });
    assert.equal(notRigged.status, 400);
    assert.deepEqual([notRigged.body.error.code, notRigged.body.error.param], ['history_source_unsupported', 'history_id']);
    const notSegmented = await me.post('/v1/mesh3d/edit/completion', { history_id: history.text, model: SEG, part_names: ['upper'] });
    assert.deepEqual([notSegmented.status, notSegmented.body.error.code], [400, 'history_source_unsupported']);
    const rigAsSegmentationSource = await me.post('/v1/mesh3d/edit/segmentation', { history_id: history.rig, model: SEG });
    assert.deepEqual([rigAsSegmentationSource.status, rigAsSegmentationSource.body.error.code], [400, 'history_source_unsupported']);
  });
});

describe('3D history across a restart', () => {
  const dataDir = tempDataDir();
  let srv: TestServer | undefined;
  after(async () => {
    await srv?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('a history whose task ends after a restart becomes usable', async () => {
    // A slow engine keeps the task running while the server stops.
    srv = await startTestServer({ DATA_DIR: dataDir, LOCAL_ENGINE_MIN_DURATION_MS: '60000', TASK_LEASE_MS: '1000' });
    const token = await srv.tokenFor('patient');
    let me = new Client(srv, token);
    const gen = await me.submit('/v1/mesh3d/generate/text', { model: 'tripo-v3.1', prompt: 'a lighthouse', face_limit: 3000 });
    await eventually('the task under way', async () => (await me.record(gen.task_id)).queue_status.status === 'process');
    const early = await me.post('/v1/mesh3d/edit/segmentation', { history_id: gen.mesh3d_history_id, model: SEG });
    assert.deepEqual([early.status, early.body.error.code], [404, 'history_not_found'], 'a running source is not usable yet');
    await srv.close();
    srv = undefined;

    srv = await startTestServer({ DATA_DIR: dataDir, TASK_LEASE_MS: '1000' });
    me = new Client(srv, token);
    await me.ended(gen.task_id);
    const seg = await me.submit('/v1/mesh3d/edit/segmentation', { history_id: gen.mesh3d_history_id, model: SEG });
    await me.ended(seg.task_id);
  });
});
