import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Document, NodeIO, type Node } from '@gltf-transform/core';
import { ALL_EXTENSIONS } from '@gltf-transform/extensions';
import sharp from 'sharp';
import { gunzipSync } from 'node:zlib';
import { Box3, type Object3D, type SkinnedMesh } from 'three';
import { unzipSync } from 'three/examples/jsm/libs/fflate.module.js';
import { FBXLoader } from 'three/examples/jsm/loaders/FBXLoader.js';
import { OBJLoader } from 'three/examples/jsm/loaders/OBJLoader.js';
import { STLLoader } from 'three/examples/jsm/loaders/STLLoader.js';
import { USDLoader } from 'three/examples/jsm/loaders/USDLoader.js';
import { LocalEngine, MESH_ENDPOINTS } from '../src/providers/local/local-engine.ts';
import { MESH_HANDLERS } from '../src/providers/local/mesh/mesh-handlers.ts';
import { TaskFailedError, TaskRejectedError, type GeneratedFile, type GenerationJob, type GenerationOutput } from '../src/providers/spec.ts';
import { runContext } from './support/run-context.ts';

const engine = new LocalEngine({ minDurationMs: 0 });
const io = new NodeIO().registerExtensions(ALL_EXTENSIONS);

/** A job of a mesh3d endpoint whose input is given as that endpoint's service builds it. */
function job(endpoint: string, input: Record<string, unknown>): GenerationJob {
  return { taskId: 'task-1', ownerId: 'owner-1', endpoint: `mesh3d.${endpoint}`, model: { alias: 'local-3d' } as GenerationJob['model'], input, attempt: 1 } as GenerationJob;
}

function run(endpoint: string, input: Record<string, unknown>, ctx = runContext()): Promise<GenerationOutput> {
  return engine.run(job(endpoint, input), ctx);
}

function fileOf(out: GenerationOutput, role: string): GeneratedFile {
  const file = out.files.find((f) => f.role === role);
  assert.ok(file, `no ${role} file among ${out.files.map((f) => f.role).join(', ')}`);
  return file;
}

async function glbOf(out: GenerationOutput, role = 'model'): Promise<Document> {
  const file = fileOf(out, role);
  assert.equal(file.mimeType, 'model/gltf-binary');
  return io.readBinary(new Uint8Array(file.data));
}

/** Triangles of every primitive in the document. */
function triangles(doc: Document): number {
  return doc.getRoot().listMeshes().reduce((sum, mesh) => sum + mesh.listPrimitives().reduce((s, p) => s + p.getIndices()!.getCount() / 3, 0), 0);
}

function meshNodeNames(doc: Document): string[] {
  return doc.getRoot().listNodes().filter((n) => n.getMesh()).map((n) => n.getName());
}

/** A data URI of a PNG: a light disc on a dark square, tinted. */
async function pictureURI(tint: { r: number; g: number; b: number }, side = 96): Promise<string> {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${side}" height="${side}"><rect width="100%" height="100%" fill="rgb(${tint.r},${tint.g},${tint.b})"/><circle cx="${side / 2}" cy="${side / 2}" r="${side / 3}" fill="white"/></svg>`;
  return `data:image/png;base64,${(await sharp(Buffer.from(svg)).png().toBuffer()).toString('base64')}`;
}

describe('local mesh generation', () => {
  it('the engine routes exactly the endpoints the mesh handlers serve', () => {
    assert.deepEqual([...MESH_ENDPOINTS].sort(), Object.keys(MESH_HANDLERS).sort());
  });


  it('builds a textured text-to-model mesh within face_limit, with base model and preview', async () => {
    const out = await run('generate.text', { prompt: 'a red knight', face_limit: 5000, enable_texture: true, enable_pbr: false });
    const doc = await glbOf(out);
    const faces = triangles(doc);
    assert.ok(faces <= 5000 && faces >= 4500, `faces ${faces}`);
    assert.equal(out.extra?.face_count, faces);
    assert.equal(out.extra?.format, 'glb');
    const material = doc.getRoot().listMaterials()[0]!;
    assert.ok(material.getBaseColorTexture()?.getImage(), 'base colour texture');
    assert.equal(material.getMetallicRoughnessTexture(), null);
    assert.equal((await glbOf(out, 'base_model')).getRoot().listTextures().length, 0);
    const preview = fileOf(out, 'preview');
    assert.equal(preview.type, 'image');
    assert.equal((await sharp(preview.data).metadata()).format, 'png');
    assert.ok(!out.files.some((f) => f.role === 'pbr_model'));
  });

  it('keeps small and large limits: never above, close below', async () => {
    for (const limit of [48, 1000, 33333]) {
      const out = await run('generate.text', { prompt: 'a stone tower', face_limit: limit, enable_texture: false });
      const faces = triangles(await glbOf(out));
      assert.ok(faces <= limit && faces >= limit * 0.85, `limit ${limit}: faces ${faces}`);
    }
  });

  it('makes quads when asked: face_limit counts quads, stored as consecutive triangle pairs', async () => {
    const out = await run('generate.text', { prompt: 'a brown dog', face_limit: 2000, topology: 'quad', enable_texture: false });
    const doc = await glbOf(out);
    const faces = triangles(doc);
    assert.equal(out.extra?.topology, 'quad');
    assert.equal(out.extra?.quad_count, faces / 2);
    assert.ok((out.extra?.polygon_count as number) <= 2000 && (out.extra?.polygon_count as number) >= 1800);
    const prim = doc.getRoot().listMeshes()[0]!.listPrimitives()[0]!;
    assert.equal((prim.getExtras() as { quad_count: number }).quad_count, faces / 2);
    const indices = prim.getIndices()!.getArray()!;
    const position = prim.getAttribute('POSITION')!;
    const key = (i: number) => position.getElement(i, []).join(',');
    for (let q = 0; q < faces / 2; q++) {
      const first = new Set([0, 1, 2].map((k) => key(indices[q * 6 + k]!)));
      const shared = [3, 4, 5].filter((k) => first.has(key(indices[q * 6 + k]!)));
      assert.equal(shared.length, 2, `pair ${q} shares an edge`);
    }
  });

  it('simplifies a finer surface with smart_low_poly, as triangles or quads', async () => {
    const tri = await run('generate.text', { prompt: 'a stone tower', face_limit: 1000, smart_low_poly: true, enable_texture: false });
    const faces = triangles(await glbOf(tri));
    assert.ok(faces <= 1000 && faces >= 900, `faces ${faces}`);
    assert.equal(tri.extra?.smart_low_poly, true);
    assert.notDeepEqual(fileOf(tri, 'model').data, fileOf(await run('generate.text', { prompt: 'a stone tower', face_limit: 1000, enable_texture: false }), 'model').data);
    const quad = await run('generate.text', { prompt: 'a stone tower', face_limit: 500, topology: 'quad', smart_low_poly: true, enable_texture: false });
    assert.ok((quad.extra?.polygon_count as number) <= 500 && (quad.extra?.quad_count as number) > 0);
  });

  it('adds a metallic-roughness material and a pbr_model file when PBR is on', async () => {
    const out = await run('generate.text', { prompt: 'a steel robot', face_limit: 3000, enable_texture: true, enable_pbr: true });
    const pbr = await glbOf(out, 'pbr_model');
    const material = pbr.getRoot().listMaterials()[0]!;
    assert.ok(material.getMetallicRoughnessTexture()?.getImage());
    assert.ok(material.getBaseColorTexture());
    assert.equal((await glbOf(out)).getRoot().listMaterials()[0]!.getMetallicRoughnessTexture(), null);
    assert.equal(out.extra?.pbr, true);
  });

  it('generates separate named parts without textures', async () => {
    const out = await run('generate.text', { prompt: 'a wizard character', face_limit: 6000, generate_parts: true });
    const doc = await glbOf(out);
    assert.deepEqual(meshNodeNames(doc), ['head', 'torso', 'left_arm', 'right_arm', 'left_leg', 'right_leg']);
    assert.deepEqual(out.extra?.parts, meshNodeNames(doc));
    assert.equal(doc.getRoot().listTextures().length, 0);
    assert.ok(triangles(doc) <= 6000);
  });

  it('shapes and colours an image-to-model mesh from the picture', async () => {
    const red = await pictureURI({ r: 200, g: 20, b: 20 });
    const out = await run('generate.image', { file: { url: red }, face_limit: 4000, enable_texture: true });
    const doc = await glbOf(out);
    const image = doc.getRoot().listTextures()[0]!.getImage()!;
    const { channels } = await sharp(Buffer.from(image)).stats();
    assert.ok(channels[0]!.mean > channels[1]!.mean + 40, 'the texture carries the picture');
    const blue = await run('generate.image', { file: { url: await pictureURI({ r: 20, g: 20, b: 200 }) }, face_limit: 4000, enable_texture: true });
    assert.notDeepEqual(fileOf(blue, 'base_model').data, fileOf(out, 'base_model').data);
  });

  it('reads multiview views, and refuses a view it cannot place', async () => {
    const front = await pictureURI({ r: 30, g: 160, b: 40 });
    const back = await pictureURI({ r: 30, g: 40, b: 160 });
    const views = await run('generate.multiview', { view_images: [{ view_type: 'front', file: { url: front } }, { view_type: 'back', file: { url: back } }], face_limit: 3000 });
    await assert.rejects(engine.check(job('generate.multiview', { view_images: [{ view_type: 'front', file: { url: front } }, { view_type: 'upside', file: { url: back } }] })), TaskRejectedError);
    const texture = (await glbOf(views)).getRoot().listTextures()[0]!;
    assert.equal((await sharp(Buffer.from(texture.getImage()!)).metadata()).width, 1024);
  });

  it('fails on an unreadable image and stops when cancelled', async () => {
    await assert.rejects(run('generate.image', { file: { url: `data:image/png;base64,${Buffer.from('not a picture').toString('base64')}` } }), TaskFailedError);
    const controller = new AbortController();
    controller.abort();
    await assert.rejects(run('generate.text', { prompt: 'a cat' }, runContext({ signal: controller.signal })), { name: 'AbortError' });
  });

  it('is deterministic: the same request gives the same bytes', async () => {
    const input = { prompt: 'a green vase', face_limit: 2000, enable_pbr: true, texture_quality: 'standard' };
    const [a, b] = [await run('generate.text', input), await run('generate.text', input)];
    assert.deepEqual(a.files.map((f) => f.data), b.files.map((f) => f.data));
    const other = await run('generate.text', { ...input, prompt: 'a green box' });
    assert.notDeepEqual(fileOf(other, 'base_model').data, fileOf(a, 'base_model').data);
  });
});


/** Runs an edit on `model` (GLB bytes), handed to the engine as the source history's model file. */
function edit(operation: string, model: Buffer, input: Record<string, unknown> = {}, source: Record<string, unknown> = {}): Promise<GenerationOutput> {
  const ref = 'blake3:source-model';
  const ctx = runContext({ inputs: { [ref]: { data: model, mimeType: 'model/gltf-binary', fileName: 'source.glb' } } });
  return run(`edit.${operation}`, { ...input, source: { history_id: 'history-1', operation: 'generate', model: ref, ...source } }, ctx);
}

/** Edges used by one triangle only, over all primitives of a node, counted on welded positions. */
function openEdges(node: Node): number {
  const counts = new Map<string, number>();
  for (const prim of node.getMesh()!.listPrimitives()) {
    const position = prim.getAttribute('POSITION')!;
    const indices = prim.getIndices()!.getArray()!;
    const key = (i: number) => position.getElement(i, [] as number[]).map((x) => x.toFixed(6)).join(',');
    for (let t = 0; t < indices.length; t += 3) {
      for (let k = 0; k < 3; k++) {
        const [a, b] = [key(indices[t + k]!), key(indices[t + ((k + 1) % 3)]!)].sort();
        if (a === b) continue;
        counts.set(`${a}|${b}`, (counts.get(`${a}|${b}`) ?? 0) + 1);
      }
    }
  }
  return [...counts.values()].filter((n) => n === 1).length;
}

/** A closed latitude-longitude sphere as GLB: one piece, shared vertices, no texture. */
async function sphereModel(rings = 24, segments = 32): Promise<Buffer> {
  const positions: number[] = [0, 1, 0];
  for (let r = 1; r < rings; r++) {
    const phi = (Math.PI * r) / rings;
    for (let s = 0; s < segments; s++) {
      const theta = (2 * Math.PI * s) / segments;
      positions.push(Math.sin(phi) * Math.cos(theta), Math.cos(phi), Math.sin(phi) * Math.sin(theta));
    }
  }
  positions.push(0, -1, 0);
  const last = positions.length / 3 - 1;
  const ring = (r: number, s: number) => 1 + (r - 1) * segments + (s % segments);
  const indices: number[] = [];
  for (let s = 0; s < segments; s++) {
    indices.push(0, ring(1, s + 1), ring(1, s));
    indices.push(last, ring(rings - 1, s), ring(rings - 1, s + 1));
    for (let r = 1; r < rings - 1; r++) indices.push(ring(r, s), ring(r, s + 1), ring(r + 1, s + 1), ring(r, s), ring(r + 1, s + 1), ring(r + 1, s));
  }
  const doc = new Document();
  const buffer = doc.createBuffer();
  const prim = doc
    .createPrimitive()
    .setAttribute('POSITION', doc.createAccessor().setType('VEC3').setArray(new Float32Array(positions)).setBuffer(buffer))
    .setIndices(doc.createAccessor().setType('SCALAR').setArray(new Uint32Array(indices)).setBuffer(buffer))
    .setMaterial(doc.createMaterial('clay').setBaseColorFactor([0.6, 0.5, 0.4, 1]));
  doc.createScene().addChild(doc.createNode('sphere').setMesh(doc.createMesh('sphere').addPrimitive(prim)));
  return Buffer.from(await io.writeBinary(doc));
}

describe('local mesh edits', () => {
  let figure: Buffer;
  let blob: Buffer;
  const figureModel = async () => (figure ??= fileOf(await run('generate.text', { prompt: 'a knight character', face_limit: 6000 }), 'model').data);
  const blobModel = async () => (blob ??= await sphereModel());

  it('segments a figure into its pieces and a one-piece model into clusters, with named part nodes', async () => {
    const pieces = await edit('segmentation', await figureModel());
    const names = meshNodeNames(await glbOf(pieces));
    assert.deepEqual(names, pieces.extra?.parts);
    assert.deepEqual([...names].sort(), ['lower_left', 'lower_right', 'middle', 'middle_left', 'middle_right', 'upper']);
    const clusters = await edit('segmentation', await blobModel());
    const doc = await glbOf(clusters);
    assert.equal(meshNodeNames(doc).length, 4);
    assert.equal(triangles(doc), triangles(await io.readBinary(new Uint8Array(await blobModel()))));
    assert.ok(doc.getRoot().listMaterials().length >= 1 && doc.getRoot().listMeshes().every((m) => m.listPrimitives()[0]!.getMaterial()), 'parts keep the material');
  });

  it('completes the named parts: their holes are capped and nothing else changes', async () => {
    const segmented = fileOf(await edit('segmentation', await blobModel()), 'model').data;
    const before = await io.readBinary(new Uint8Array(segmented));
    const [first, second] = before.getRoot().listNodes().filter((n) => n.getMesh());
    assert.ok(openEdges(first!) > 0 && openEdges(second!) > 0, 'cut parts are open');
    const out = await edit('completion', segmented, { part_names: [first!.getName()] });
    const after = await glbOf(out);
    const node = (name: string) => after.getRoot().listNodes().find((n) => n.getName() === name)!;
    assert.equal(openEdges(node(first!.getName())), 0);
    assert.equal(openEdges(node(second!.getName())), openEdges(second!));
    assert.ok((out.extra?.completed as Record<string, number>)[first!.getName()]! >= 1);
    await assert.rejects(edit('completion', segmented, { part_names: ['tail'] }), TaskRejectedError);
  });

  it('simplifies to the face limit with meshoptimizer, as triangles or quads', async () => {
    const source = await figureModel();
    const tri = await edit('smart_lowpoly', source, { face_limit: 1000 });
    const faces = triangles(await glbOf(tri));
    assert.ok(faces <= 1000 && faces >= 800, `faces ${faces}`);
    const quad = await edit('smart_lowpoly', source, { face_limit: 600, topology: 'quad' });
    const polygons = quad.extra?.polygon_count as number;
    assert.ok(polygons <= 600, `polygons ${polygons}`);
    assert.ok((quad.extra?.quad_count as number) > polygons / 2, 'quad dominant');
    const auto = await edit('smart_lowpoly', source, { face_limit: 'auto' });
    assert.ok(triangles(await glbOf(auto)) < triangles(await io.readBinary(new Uint8Array(source))));
  });

  it('textures a model by prompt and quality, with PBR maps when asked', async () => {
    const source = fileOf(await run('generate.text', { prompt: 'a box', face_limit: 1500, enable_texture: false }), 'model').data;
    const out = await edit('texture', source, { texture: true, pbr: true, texture_quality: 'detailed', texture_prompt: { text: 'a red crate' } });
    const material = (await glbOf(out)).getRoot().listMaterials()[0]!;
    const base = Buffer.from(material.getBaseColorTexture()!.getImage()!);
    const meta = await sharp(base).stats();
    assert.equal((await sharp(base).metadata()).width, 2048);
    assert.ok(meta.channels[0]!.mean > meta.channels[2]!.mean + 50, 'red from the prompt');
    assert.ok(material.getMetallicRoughnessTexture());
    const standard = await edit('texture', source, { texture: true, pbr: false, texture_quality: 'standard', texture_prompt: { image: { url: await pictureURI({ r: 10, g: 200, b: 10 }) } } });
    const green = (await glbOf(standard)).getRoot().listMaterials()[0]!;
    assert.equal((await sharp(Buffer.from(green.getBaseColorTexture()!.getImage()!)).metadata()).width, 1024);
    assert.equal(green.getMetallicRoughnessTexture(), null);
    const compressed = fileOf(await edit('texture', source, { texture: true, pbr: false, compress: 'geometry' }), 'model').data;
    const json = JSON.parse(compressed.toString('utf8', 20, 20 + compressed.readUInt32LE(12)));
    assert.ok(json.extensionsUsed.includes('EXT_meshopt_compression'), 'geometry compressed with meshoptimizer');
    const faces = (await edit('smart_lowpoly', compressed, { face_limit: 500 })).extra?.face_count as number;
    assert.ok(faces <= 500 && faces > 400, 'and still a source for later edits');
  });

  it('checks riggability from the body: a figure is a biped, an animal a quadruped, a ball is not riggable', async () => {
    const figure = await edit('check_riggable', await figureModel());
    assert.equal(figure.extra?.riggable, true);
    assert.equal(figure.extra?.rig_type, 'biped');
    assert.match(String(figure.extra?.reason), /two legs/);
    const dog = await edit('check_riggable', fileOf(await run('generate.text', { prompt: 'a wolf', face_limit: 4000 }), 'model').data);
    assert.equal(dog.extra?.rig_type, 'quadruped');
    const ball = await edit('check_riggable', await blobModel());
    assert.equal(ball.extra?.riggable, false);
    assert.match(String(ball.extra?.reason), /no separate limbs/);
    assert.ok(await glbOf(ball), 'the model passes through');
  });

  it('rigs a model with a skin: joints, inverse bind matrices, JOINTS_0 and WEIGHTS_0', async () => {
    const out = await edit('rig', await figureModel(), { rig_type: 'biped', spec: 'spec_a' });
    const doc = await glbOf(out);
    const skin = doc.getRoot().listSkins()[0]!;
    const joints = skin.listJoints().map((j) => j.getName());
    const rig = out.extra?.rig as { rig_type: string; spec: string; bones: string[] };
    assert.deepEqual(rig.bones, joints);
    assert.equal(rig.rig_type, 'biped');
    assert.ok(joints.includes('Hips') && joints.includes('LeftForeArm') && joints.includes('RightUpLeg'));
    assert.equal(skin.getInverseBindMatrices()!.getCount(), joints.length);
    for (const node of doc.getRoot().listNodes().filter((n) => n.getMesh())) {
      assert.equal(node.getSkin(), skin);
      const prim = node.getMesh()!.listPrimitives()[0]!;
      const weights = prim.getAttribute('WEIGHTS_0')!;
      assert.ok(prim.getAttribute('JOINTS_0'));
      for (let v = 0; v < weights.getCount(); v += 97) {
        const sum = weights.getElement(v, [] as number[]).reduce((a, b) => a + b, 0);
        assert.ok(Math.abs(sum - 1) < 1e-3);
      }
    }
    const snake = await edit('rig', await figureModel(), { rig_type: 'quadruped', spec: 'spec_b' });
    assert.ok((snake.extra?.rig as { bones: string[] }).bones.includes('front_up_leg_l'));
  });

  it('retargets preset animations onto the rig as named glTF animations', async () => {
    const rigged = await edit('rig', await figureModel(), { rig_type: 'biped', spec: 'spec_a' });
    const rig = rigged.extra?.rig;
    const out = await edit('retarget_animation', fileOf(rigged, 'model').data, { animations: ['preset:walk', 'preset:idle'] }, { operation: 'rig', rig });
    const doc = await glbOf(out);
    assert.deepEqual(out.extra?.animations, ['preset:walk', 'preset:idle']);
    const animations = doc.getRoot().listAnimations();
    assert.deepEqual(animations.map((a) => a.getName()), ['preset:walk', 'preset:idle']);
    const joints = new Set(doc.getRoot().listSkins()[0]!.listJoints());
    const walk = animations[0]!;
    assert.ok(walk.listChannels().length > 10);
    assert.ok(walk.listChannels().every((c) => joints.has(c.getTargetNode()!)));
    const hips = walk.listChannels().find((c) => c.getTargetNode()!.getName() === 'Hips' && c.getTargetPath() === 'translation')!;
    const travel = hips.getSampler()!.getOutput()!;
    assert.ok(travel.getElement(travel.getCount() - 1, [] as number[])[2]! > travel.getElement(0, [] as number[])[2]!, 'walks forward');
    await assert.rejects(edit('retarget_animation', fileOf(rigged, 'model').data, { animations: ['preset:quadruped:walk'] }, { rig }), TaskRejectedError);
    await assert.rejects(edit('retarget_animation', fileOf(rigged, 'model').data, { animations: ['preset:moonwalk'] }, { rig }), TaskRejectedError);
    await assert.rejects(edit('retarget_animation', await figureModel(), { animations: ['preset:walk'] }), TaskRejectedError);
  });
});

const arrayBuffer = (b: Buffer) => b.buffer.slice(b.byteOffset, b.byteOffset + b.length) as ArrayBuffer;

/** Triangles of the meshes three loaded. */
function loadedTriangles(root: Object3D): number {
  let count = 0;
  root.traverse((o) => {
    const geometry = (o as { geometry?: { index: { count: number } | null; attributes: { position: { count: number } } } }).geometry;
    if (geometry) count += (geometry.index?.count ?? geometry.attributes.position.count) / 3;
  });
  return count;
}

/** Names and data offsets of a zip's entries, read from the local headers in file order. */
function zipLayout(zip: Buffer): { name: string; dataOffset: number; method: number }[] {
  const entries = [];
  for (let offset = 0; zip.readUInt32LE(offset) === 0x04034b50; ) {
    const size = zip.readUInt32LE(offset + 18), nameLength = zip.readUInt16LE(offset + 26), extraLength = zip.readUInt16LE(offset + 28);
    const dataOffset = offset + 30 + nameLength + extraLength;
    entries.push({ name: zip.toString('utf8', offset + 30, offset + 30 + nameLength), dataOffset, method: zip.readUInt16LE(offset + 8) });
    offset = dataOffset + size;
  }
  return entries;
}

function unzip(data: Buffer): Record<string, Buffer> {
  return Object.fromEntries(Object.entries(unzipSync(new Uint8Array(data))).map(([name, bytes]) => [name, Buffer.from(bytes)]));
}

describe('local mesh conversion', () => {
  let textured: Buffer;
  let rigged: GenerationOutput;
  const texturedModel = async () => (textured ??= fileOf(await run('generate.text', { prompt: 'a brown dog', face_limit: 4000, enable_pbr: true }), 'model').data);
  const riggedModel = async () => {
    if (rigged) return rigged;
    const plain = fileOf(await run('generate.text', { prompt: 'a robot character', face_limit: 3000, enable_texture: false }), 'model').data;
    const rig = await edit('rig', plain, { rig_type: 'biped' });
    rigged = await edit('retarget_animation', fileOf(rig, 'model').data, { animations: ['preset:run'] }, { rig: rig.extra?.rig });
    return rigged;
  };
  const convert = async (source: Buffer, input: Record<string, unknown>) => {
    const out = await edit('convert', source, input);
    assert.equal(out.files.length, 1);
    return { out, file: fileOf(out, 'model') };
  };

  it('writes a self-contained GLTF within the face limit, textures shrunk and re-encoded', async () => {
    const { out, file } = await convert(await texturedModel(), { format: 'GLTF', face_limit: 1500, texture_size: 256 });
    assert.equal(file.mimeType, 'model/gltf+json');
    assert.match(file.fileName, /\.gltf$/);
    const json = JSON.parse(file.data.toString('utf8'));
    assert.ok(json.buffers.every((b: { uri: string }) => b.uri.startsWith('data:')));
    const doc = await io.readJSON({ json, resources: {} });
    assert.ok(triangles(doc) <= 1500 && triangles(doc) >= 1200);
    assert.equal(out.extra?.format, 'gltf');
    const texture = doc.getRoot().listTextures()[0]!;
    assert.equal(texture.getMimeType(), 'image/jpeg');
    assert.ok((await sharp(Buffer.from(texture.getImage()!)).metadata()).width! <= 256);
    assert.equal(out.extra?.unapplied_options, undefined);
    const packed = await convert(await texturedModel(), { format: 'GLTF', pack_uv: true, bake: true });
    assert.deepEqual(packed.out.extra?.unapplied_options, ['pack_uv'], 'options taken without effect are reported');
    const webp = await convert(await texturedModel(), { format: 'GLTF', texture_format: 'WEBP' });
    assert.ok(JSON.parse(webp.file.data.toString()).extensionsRequired.includes('EXT_texture_webp'));
  });

  it('writes OBJ as a zip of the .obj, its .mtl and textures, keeping quads and vertex colours', async () => {
    const { file } = await convert(await texturedModel(), { format: 'OBJ', quad: true, face_limit: 1200, texture_format: 'PNG', export_vertex_colors: true });
    assert.equal(file.mimeType, 'application/zip');
    const files = unzip(file.data);
    assert.deepEqual(Object.keys(files).sort(), ['base_color.png', 'model.mtl', 'model.obj']);
    const obj = files['model.obj']!.toString();
    const faces = obj.split('\n').filter((l) => l.startsWith('f '));
    const quads = faces.filter((l) => l.split(' ').length === 5).length;
    assert.ok(faces.length <= 1200 && quads > faces.length / 2, `${quads} quads of ${faces.length} faces`);
    assert.equal(obj.split('\n').find((l) => l.startsWith('v '))!.split(' ').length, 7, 'v x y z r g b');
    assert.match(files['model.mtl']!.toString(), /map_Kd base_color\.png/);
    assert.equal(loadedTriangles(new OBJLoader().parse(obj)), faces.length + quads);
    assert.equal((await sharp(files['base_color.png']!).metadata()).format, 'png');
  });

  it('writes binary STL triangles only', async () => {
    const { file } = await convert(await texturedModel(), { format: 'STL', face_limit: 900 });
    const count = file.data.readUInt32LE(80);
    assert.equal(file.data.length, 84 + count * 50);
    assert.ok(count <= 900 && count > 700);
    assert.equal(new STLLoader().parse(arrayBuffer(file.data)).attributes.position!.count / 3, count);
  });

  it('writes 3MF: a zip with 3D/3dmodel.model holding the triangles, Z up, and its texture', async () => {
    const { file } = await convert(await texturedModel(), { format: '3MF', face_limit: 1000 });
    const files = unzip(file.data);
    assert.ok(files['[Content_Types].xml'] && files['_rels/.rels']);
    const model = files['3D/3dmodel.model']!.toString();
    const triangleCount = (model.match(/<triangle /g) ?? []).length;
    assert.ok(triangleCount <= 1000 && triangleCount > 800);
    assert.match(model, /<m:texture2d id="\d+" path="\/3D\/Textures\/base_color\.jpg"/);
    assert.ok(files['3D/Textures/base_color.jpg']);
    // 3MF is Z up; the dog, longest front to back, faces +X by default: length on X, height on Z, width on Y.
    const extent = (axis: string) => {
      const values = [...model.matchAll(new RegExp(` ${axis}="(-?[\\d.e-]+)"`, 'g'))].map((m) => Number(m[1]));
      return Math.max(...values) - Math.min(...values);
    };
    assert.ok(extent('x') > extent('z') && extent('z') > extent('y'), `x ${extent('x')} y ${extent('y')} z ${extent('z')}`);
  });

  it('writes USDZ: model.usda first, files stored and 64-byte aligned, readable by three', async () => {
    const plain = fileOf(await run('generate.text', { prompt: 'a vase', face_limit: 800, enable_texture: false }), 'model').data;
    const { file } = await convert(plain, { format: 'USDZ', quad: true, face_limit: 400 });
    const layout = zipLayout(file.data);
    assert.equal(layout[0]!.name, 'model.usda');
    assert.ok(layout.every((e) => e.method === 0 && e.dataOffset % 64 === 0));
    const usda = unzip(file.data)['model.usda']!.toString();
    assert.match(usda, /^#usda 1\.0/);
    assert.match(usda, /faceVertexCounts = \[4, 4/);
    assert.ok(loadedTriangles(new USDLoader().parse(arrayBuffer(file.data))) > 0);
    const withTexture = await convert(await texturedModel(), { format: 'USDZ' });
    assert.ok(zipLayout(withTexture.file.data).some((e) => e.name === 'textures/base_color.jpg' && e.dataOffset % 64 === 0));
  });

  it('writes ASCII FBX that three reads back with its skin and animation, and embeds textures', async () => {
    const { file, out } = await convert(fileOf(await riggedModel(), 'model').data, { format: 'FBX' });
    assert.match(file.data.toString('utf8', 0, 40), /^; FBX 7\.4\.0 project file/);
    assert.equal(out.extra?.format, 'fbx');
    const group = new FBXLoader().parse(arrayBuffer(file.data), '');
    let skinned: SkinnedMesh | undefined;
    group.traverse((o) => void ((o as SkinnedMesh).isSkinnedMesh && (skinned = o as SkinnedMesh)));
    assert.ok(skinned, 'a skinned mesh');
    assert.ok(skinned.skeleton.bones.some((b) => b.name === 'LeftUpLeg'));
    assert.deepEqual(group.animations.map((a) => a.name), ['preset:run']);
    assert.ok(loadedTriangles(group) > 0);
    const textured = (await convert(await texturedModel(), { format: 'FBX', texture_size: 128 })).file.data.toString();
    const content = /Content: ,\n\t+"([A-Za-z0-9+/=]+)"/.exec(textured);
    assert.ok(content, 'embedded texture');
    assert.equal((await sharp(Buffer.from(content[1]!, 'base64')).metadata()).format, 'png');
  });

  it('applies scale, pivot, flat bottom and orientation', async () => {
    const source = await texturedModel();
    const boundsOf = async (input: Record<string, unknown>) => {
      const json = JSON.parse((await convert(source, { format: 'GLTF', ...input })).file.data.toString());
      const doc = await io.readJSON({ json, resources: {} });
      const positions = doc.getRoot().listMeshes()[0]!.listPrimitives()[0]!.getAttribute('POSITION')!;
      const node = doc.getRoot().listNodes().find((n) => n.getMesh())!;
      const box = new Box3();
      const matrix = node.getWorldMatrix();
      const ys: number[] = [];
      for (let i = 0; i < positions.getCount(); i++) {
        const [x, y, z] = positions.getElement(i, [] as number[]);
        const p = { x: matrix[0] * x! + matrix[4] * y! + matrix[8] * z! + matrix[12], y: matrix[1] * x! + matrix[5] * y! + matrix[9] * z! + matrix[13], z: matrix[2] * x! + matrix[6] * y! + matrix[10] * z! + matrix[14] };
        box.expandByPoint(p as never);
        ys.push(p.y);
      }
      return { box, ys };
    };
    const front = (await boundsOf({ export_orientation: '+y', face_limit: 100000 })).box;
    const side = (await boundsOf({ face_limit: 100000 })).box;
    // The dog is longest front to back: facing +x (the default) puts that length on X.
    assert.ok(side.max.x - side.min.x > side.max.z - side.min.z);
    assert.ok(front.max.y - front.min.y > front.max.x - front.min.x);
    const scaled = (await boundsOf({ scale_factor: 2, face_limit: 100000 })).box;
    assert.ok(Math.abs(scaled.max.y - scaled.min.y - 2 * (side.max.y - side.min.y)) < 1e-4);
    const pivoted = (await boundsOf({ pivot_to_center_bottom: true, face_limit: 100000 })).box;
    assert.ok(Math.abs(pivoted.min.y) < 1e-5 && Math.abs(pivoted.min.x + pivoted.max.x) < 1e-5 && Math.abs(pivoted.min.z + pivoted.max.z) < 1e-5);
    const flat = await boundsOf({ flatten_bottom: true, flatten_bottom_threshold: 0.05, face_limit: 100000 });
    const plain = await boundsOf({ face_limit: 100000 });
    const onFloor = (ys: number[], min: number) => ys.filter((y) => y < min + 1e-6).length;
    assert.ok(onFloor(flat.ys, flat.box.min.y) > onFloor(plain.ys, plain.box.min.y) + 10);
  });

  it('refuses what it cannot write, and converts deterministically', async () => {
    // Fields the engine cannot honour are refused before the task starts.
    await assert.rejects(engine.check(job('edit.convert', { format: 'PLY' })), TaskRejectedError);
    await assert.rejects(engine.check(job('edit.convert', { format: 'FBX', texture_format: 'HDR' })), TaskRejectedError);
    await assert.rejects(engine.check(job('edit.retarget_animation', { animations: ['preset:moonwalk'] })), TaskRejectedError);
    await engine.check(job('edit.convert', { format: 'FBX', texture_format: 'TARGA' }));
    await assert.rejects(convert(await texturedModel(), { format: 'GLTF', texture_format: 'OPEN_EXR' }), TaskRejectedError);
    await assert.rejects(convert(await texturedModel(), { format: 'USDZ', texture_format: 'WEBP' }), TaskRejectedError);
    await assert.rejects(convert(await texturedModel(), { format: 'PLY' }), TaskRejectedError);
    await assert.rejects(convert(fileOf(await riggedModel(), 'model').data, { format: 'OBJ' }), TaskRejectedError);
    for (const format of ['GLTF', 'USDZ', 'FBX', 'OBJ', 'STL', '3MF']) {
      const [a, b] = [await convert(await texturedModel(), { format }), await convert(await texturedModel(), { format })];
      assert.deepEqual(a.file.data, b.file.data, format);
    }
  });
});

describe('local mesh refine and stylize', () => {
  let source: Buffer;
  const model = async () => (source ??= fileOf(await run('generate.text', { prompt: 'a red and blue dog', face_limit: 3000 }), 'model').data);

  it('refines a draft: finer and smoother, without shrinking', async () => {
    const before = await io.readBinary(new Uint8Array(await model()));
    const out = await edit('refine', await model());
    const after = await glbOf(out);
    assert.equal(triangles(after), triangles(before) * 4);
    assert.equal(out.extra?.refined_from_faces, triangles(before));
    const sizeOf = (doc: Document) => {
      const box = new Box3();
      for (const mesh of doc.getRoot().listMeshes()) {
        const position = mesh.listPrimitives()[0]!.getAttribute('POSITION')!;
        for (let i = 0; i < position.getCount(); i++) {
          const [x, y, z] = position.getElement(i, [] as number[]);
          box.expandByPoint({ x: x!, y: y!, z: z! } as never);
        }
      }
      return box.max.y - box.min.y;
    };
    assert.ok(Math.abs(sizeOf(after) / sizeOf(before) - 1) < 0.05, 'Taubin smoothing keeps the size');
    // Smoother: neighbouring face normals agree more after refining.
    const roughness = (doc: Document) => {
      const prim = doc.getRoot().listMeshes()[0]!.listPrimitives()[0]!;
      const normals = prim.getAttribute('NORMAL')!;
      const indices = prim.getIndices()!.getArray()!;
      let sum = 0;
      for (let t = 0; t < indices.length; t += 3) {
        const [a, b] = [normals.getElement(indices[t]!, [] as number[]), normals.getElement(indices[t + 1]!, [] as number[])];
        sum += 1 - (a[0]! * b[0]! + a[1]! * b[1]! + a[2]! * b[2]!);
      }
      return sum / (indices.length / 3);
    };
    assert.ok(roughness(after) < roughness(before));
  });

  it('voxelizes onto a grid: every vertex lies on a grid corner', async () => {
    const out = await edit('stylize', await model(), { style: 'voxel' });
    const grid = out.extra?.grid as { origin: number[]; cell: number; size: number[] };
    const prim = (await glbOf(out)).getRoot().listMeshes()[0]!.listPrimitives()[0]!;
    const positions = prim.getAttribute('POSITION')!;
    for (let i = 0; i < positions.getCount(); i++) {
      positions.getElement(i, [] as number[]).forEach((value, k) => {
        const steps = (value - grid.origin[k]!) / grid.cell;
        assert.ok(Math.abs(steps - Math.round(steps)) < 1e-3, `vertex ${i} off the grid`);
      });
    }
    assert.ok(prim.getAttribute('COLOR_0'), 'cells carry colours');
    // 40 cells along the largest side, plus a margin of empty cells.
    assert.ok([43, 44].includes(Math.max(...grid.size)), `grid ${grid.size}`);
    assert.equal(out.extra?.quad_count, triangles(await glbOf(out)) / 2);
  });

  it('makes bricks with studs and voronoi cells', async () => {
    const brick = await edit('stylize', await model(), { style: 'brick' });
    const grid = brick.extra?.grid as { origin: number[]; cell: number };
    const positions = (await glbOf(brick)).getRoot().listMeshes()[0]!.listPrimitives()[0]!.getAttribute('POSITION')!;
    let offGrid = 0;
    for (let i = 0; i < positions.getCount(); i++) {
      const [x] = positions.getElement(i, [] as number[]);
      const steps = (x! - grid.origin[0]!) / grid.cell;
      if (Math.abs(steps - Math.round(steps)) > 1e-3) offGrid++;
    }
    assert.ok(offGrid > 0, 'studs stand off the grid');
    assert.ok((brick.extra?.polygon_count as number) > (brick.extra?.quad_count as number), 'studs add triangles beside the cube quads');
    const voronoi = await edit('stylize', await model(), { style: 'voronoi' });
    const prim = (await glbOf(voronoi)).getRoot().listMeshes()[0]!.listPrimitives()[0]!;
    assert.ok(prim.getAttribute('COLOR_0'));
    assert.ok(triangles(await glbOf(voronoi)) >= 60000);
  });

  it('writes a block-game schematic of block_size with a preview', async () => {
    const out = await edit('stylize', await model(), { style: 'blockgame', block_size: 32 });
    const schem = fileOf(out, 'model');
    assert.match(schem.fileName, /\.schem$/);
    const nbt = gunzipSync(schem.data);
    assert.equal(nbt[0], 10, 'a compound');
    assert.equal(nbt.toString('utf8', 3, 3 + nbt.readUInt16BE(1)), 'Schematic');
    const shortTag = (name: string) => {
      const at = nbt.indexOf(Buffer.concat([Buffer.from([2, 0, name.length]), Buffer.from(name)]));
      return nbt.readInt16BE(at + 3 + name.length);
    };
    const [width, height, length] = [shortTag('Width'), shortTag('Height'), shortTag('Length')];
    // block_size blocks along the largest side, plus a margin of air.
    assert.ok([35, 36].includes(Math.max(width, height, length)), `${width} x ${height} x ${length}`);
    const dataAt = nbt.indexOf(Buffer.concat([Buffer.from([7, 0, 9]), Buffer.from('BlockData')]));
    assert.equal(nbt.readInt32BE(dataAt + 12), width * height * length, 'one block per cell');
    assert.ok((out.extra?.blocks as number) > 0);
    assert.ok((out.extra?.palette as string[]).includes('minecraft:air'));
    assert.equal((await sharp(fileOf(out, 'preview').data).metadata()).format, 'png');
  });
});

describe('local mesh sources in other formats', () => {
  it('rigs into FBX and animates that FBX: the skin survives the trip', async () => {
    const plain = fileOf(await run('generate.text', { prompt: 'a knight character', face_limit: 2000, enable_texture: false }), 'model').data;
    const rig = await edit('rig', plain, { rig_type: 'biped', out_format: 'fbx' });
    const fbx = fileOf(rig, 'model');
    assert.match(fbx.fileName, /\.fbx$/);
    assert.equal(rig.extra?.format, 'fbx');
    const out = await edit('retarget_animation', fbx.data, { animations: ['preset:idle'] }, { operation: 'rig', rig: rig.extra?.rig });
    const doc = await glbOf(out);
    assert.deepEqual(doc.getRoot().listAnimations().map((a) => a.getName()), ['preset:idle']);
    const skin = doc.getRoot().listSkins()[0]!;
    assert.deepEqual(skin.listJoints().map((j) => j.getName()), (rig.extra?.rig as { bones: string[] }).bones);
    // At rest each joint's world matrix undoes its inverse bind matrix.
    const inverse = skin.getInverseBindMatrices()!;
    skin.listJoints().forEach((joint, j) => {
      const world = joint.getWorldMatrix();
      const ibm = inverse.getElement(j, [] as number[]);
      for (let c = 0; c < 4; c++) {
        for (let r = 0; r < 4; r++) {
          let sum = 0;
          for (let k = 0; k < 4; k++) sum += world[k * 4 + r]! * ibm[c * 4 + k]!;
          assert.ok(Math.abs(sum - (c === r ? 1 : 0)) < 1e-4, `${joint.getName()} bind`);
        }
      }
    });
  });

  it('converts its own converted files again, in every format, keeping the faces', async () => {
    let source = fileOf(await run('generate.text', { prompt: 'a teapot', face_limit: 1200, enable_texture: false }), 'model').data;
    const faces = triangles(await io.readBinary(new Uint8Array(source)));
    for (const format of ['OBJ', 'STL', '3MF', 'USDZ', 'FBX', 'GLTF', 'OBJ']) {
      const out = await edit('convert', source, { format });
      assert.equal(out.extra?.face_count, faces, `${format} from the previous format`);
      source = fileOf(out, 'model').data;
    }
    await assert.rejects(edit('segmentation', Buffer.from('not a model at all')), TaskFailedError);
  });
});

