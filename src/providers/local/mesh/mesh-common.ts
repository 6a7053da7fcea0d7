/**
 * Helpers shared by the local mesh operations: reading and writing GLB, raw vertex arrays of a
 * primitive, position welding, normals, seeded randomness and the facts a result reports.
 */
import { createHash } from 'node:crypto';
import { Document, Logger, NodeIO, Primitive, type Material, type Node } from '@gltf-transform/core';
import { ALL_EXTENSIONS } from '@gltf-transform/extensions';
import { clearNodeTransform, flatten, getBounds, prune } from '@gltf-transform/functions';
import { MeshoptDecoder, MeshoptEncoder, MeshoptSimplifier } from 'meshoptimizer';
import { TaskFailedError } from '../../spec.ts';
import { mulberry32 } from '../seeded-random.ts';

/** Triangle geometry of one primitive, positions in the node's space. */
export interface MeshArrays {
  positions: Float32Array;
  indices: Uint32Array;
  normals?: Float32Array;
  uvs?: Float32Array;
  /** RGB per vertex. */
  colors?: Float32Array;
  joints?: Uint16Array;
  weights?: Float32Array;
}

export type Vec3 = [number, number, number];

/** glTF-Transform logs to the console by default; results carry the facts instead. */
const SILENT = new Logger(Logger.Verbosity.SILENT);

/** An empty document. */
export function createDocument(): Document {
  return new Document().setLogger(SILENT);
}

/** A glTF reader/writer knowing every extension glTF-Transform implements. */
export async function meshIO(): Promise<NodeIO> {
  await Promise.all([MeshoptDecoder.ready, MeshoptEncoder.ready]);
  return new NodeIO().setLogger(SILENT).registerExtensions(ALL_EXTENSIONS).registerDependencies({ 'meshopt.decoder': MeshoptDecoder, 'meshopt.encoder': MeshoptEncoder });
}

/** Waits for the meshoptimizer wasm module every operation relies on. */
export async function meshoptReady(): Promise<void> {
  await MeshoptSimplifier.ready;
}

/** sha256 of the JSON of `parts`, buffers hashed by content. */
export function digestOf(...parts: unknown[]): Buffer {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(Buffer.isBuffer(part) ? part : JSON.stringify(part ?? null));
  return hash.digest();
}

/** A deterministic uniform [0, 1) generator seeded by a digest. */
export function seededRandom(seed: Buffer): () => number {
  return mulberry32(seed.readUInt32LE(0) ^ seed.readUInt32LE(4));
}

/** The index of the palette colour nearest to (r, g, b), the first of equals. */
export function nearestColor(palette: readonly Vec3[], r: number, g: number, b: number): number {
  let best = 0, bestDistance = Infinity;
  palette.forEach((c, i) => {
    const d = (c[0] - r) ** 2 + (c[1] - g) ** 2 + (c[2] - b) ** 2;
    if (d < bestDistance) [best, bestDistance] = [i, d];
  });
  return best;
}

/** Parses a GLB or a self-contained .gltf; anything else is a broken input for the engine. */
export async function readModelDocument(data: Buffer): Promise<Document> {
  const io = await meshIO();
  try {
    if (data.subarray(0, 4).toString('latin1') === 'glTF') return await io.readBinary(new Uint8Array(data));
    if (data[0] === 0x7b) {
      const json = JSON.parse(data.toString('utf8'));
      return await io.readJSON({ json, resources: {} });
    }
  } catch (err) {
    throw new TaskFailedError(`the source model could not be read: ${(err as Error).message}`);
  }
  throw new TaskFailedError('the source model is not a GLB or glTF file');
}

/** The document as GLB bytes, after dropping what nothing uses. */
export async function writeGlb(doc: Document): Promise<Buffer> {
  await doc.transform(prune({ keepAttributes: true, keepLeaves: true, keepExtras: true }));
  const io = await meshIO();
  return Buffer.from(await io.writeBinary(doc));
}

/**
 * Moves every mesh node to the scene root with its transform applied to the vertices, so
 * operations can treat node space as world space. Skinned models keep their hierarchy: their
 * vertices are already in the bind space of the skeleton.
 */
export async function bakeNodeTransforms(doc: Document): Promise<void> {
  if (doc.getRoot().listSkins().length > 0) return;
  await doc.transform(flatten());
  for (const node of meshNodes(doc)) clearNodeTransform(node);
}

/** Nodes holding a mesh, in scene order: the model's parts. */
export function meshNodes(doc: Document): Node[] {
  const nodes: Node[] = [];
  for (const scene of doc.getRoot().listScenes()) {
    scene.traverse((node) => {
      if (node.getMesh()) nodes.push(node);
    });
  }
  return nodes;
}

/** The document's only buffer, created on first use. */
export function bufferOf(doc: Document) {
  return doc.getRoot().listBuffers()[0] ?? doc.createBuffer();
}

/** Reads a triangle primitive into plain arrays (an unindexed primitive gets sequential indices). */
export function readArrays(prim: Primitive): MeshArrays {
  const position = prim.getAttribute('POSITION');
  if (!position) throw new TaskFailedError('a primitive of the source model has no positions');
  if (prim.getMode() !== Primitive.Mode.TRIANGLES) throw new TaskFailedError('the source model has non-triangle primitives');
  const count = position.getCount();
  const indexAccessor = prim.getIndices();
  const indices = indexAccessor ? Uint32Array.from(indexAccessor.getArray()!) : Uint32Array.from({ length: count }, (_, i) => i);
  const floats = (name: string, size: number): Float32Array | undefined => {
    const accessor = prim.getAttribute(name);
    if (!accessor) return undefined;
    const array = accessor.getArray();
    // Plain float data of the expected width copies as is; anything else goes element by element.
    if (array instanceof Float32Array && accessor.getElementSize() === size && !accessor.getNormalized()) return Float32Array.from(array);
    const out = new Float32Array(count * size);
    const element: number[] = [];
    for (let i = 0; i < count; i++) {
      accessor.getElement(i, element);
      for (let k = 0; k < size; k++) out[i * size + k] = element[k] ?? (k === 3 ? 1 : 0);
    }
    return out;
  };
  const jointsAccessor = prim.getAttribute('JOINTS_0');
  return {
    positions: floats('POSITION', 3)!,
    indices,
    normals: floats('NORMAL', 3),
    uvs: floats('TEXCOORD_0', 2),
    colors: floats('COLOR_0', 3),
    joints: jointsAccessor ? Uint16Array.from(floats('JOINTS_0', 4)!) : undefined,
    weights: floats('WEIGHTS_0', 4),
  };
}

/** Replaces a primitive's geometry with `arrays` (attributes absent from `arrays` are removed). */
export function writeArrays(doc: Document, prim: Primitive, arrays: MeshArrays): void {
  const buffer = bufferOf(doc);
  const vertexCount = arrays.positions.length / 3;
  const indices = vertexCount > 65535 ? arrays.indices : Uint16Array.from(arrays.indices);
  prim.setIndices(doc.createAccessor().setType('SCALAR').setArray(indices).setBuffer(buffer));
  const attributes: [string, Float32Array | Uint16Array | undefined, 'VEC2' | 'VEC3' | 'VEC4'][] = [
    ['POSITION', arrays.positions, 'VEC3'],
    ['NORMAL', arrays.normals, 'VEC3'],
    ['TEXCOORD_0', arrays.uvs, 'VEC2'],
    ['COLOR_0', arrays.colors, 'VEC3'],
    ['JOINTS_0', arrays.joints, 'VEC4'],
    ['WEIGHTS_0', arrays.weights, 'VEC4'],
  ];
  for (const semantic of prim.listSemantics()) {
    if (!attributes.some(([name, array]) => name === semantic && array)) prim.setAttribute(semantic, null);
  }
  for (const [name, array, type] of attributes) {
    if (array) prim.setAttribute(name, doc.createAccessor().setType(type).setArray(array).setBuffer(buffer));
  }
}

/** A new node named `name` holding one primitive made of `arrays`. */
export function createMeshNode(doc: Document, name: string, parts: { arrays: MeshArrays; material: Material | null }[]): Node {
  const mesh = doc.createMesh(name);
  for (const { arrays, material } of parts) {
    const prim = doc.createPrimitive().setMaterial(material);
    writeArrays(doc, prim, arrays);
    mesh.addPrimitive(prim);
  }
  return doc.createNode(name).setMesh(mesh);
}

/** The document's scene, created when missing. */
export function sceneOf(doc: Document) {
  const root = doc.getRoot();
  const scene = root.getDefaultScene() ?? root.listScenes()[0] ?? doc.createScene('scene');
  root.setDefaultScene(scene);
  return scene;
}

/** For each vertex, the first vertex with the same position: seams and duplicates share topology. */
export function positionRemap(positions: Float32Array): Uint32Array {
  return MeshoptSimplifier.generatePositionRemap(positions, 3);
}

/** Area-weighted vertex normals, smooth across vertices that share a position. */
export function smoothNormals(positions: Float32Array, indices: Uint32Array): Float32Array {
  const remap = positionRemap(positions);
  const sums = new Float64Array(positions.length);
  for (let t = 0; t < indices.length; t += 3) {
    const a = indices[t]! * 3, b = indices[t + 1]! * 3, c = indices[t + 2]! * 3;
    const ux = positions[b]! - positions[a]!, uy = positions[b + 1]! - positions[a + 1]!, uz = positions[b + 2]! - positions[a + 2]!;
    const vx = positions[c]! - positions[a]!, vy = positions[c + 1]! - positions[a + 1]!, vz = positions[c + 2]! - positions[a + 2]!;
    const nx = uy * vz - uz * vy, ny = uz * vx - ux * vz, nz = ux * vy - uy * vx;
    for (let k = 0; k < 3; k++) {
      const r = remap[indices[t + k]!]! * 3;
      sums[r] += nx;
      sums[r + 1] += ny;
      sums[r + 2] += nz;
    }
  }
  const normals = new Float32Array(positions.length);
  for (let v = 0; v < positions.length / 3; v++) {
    const r = remap[v]! * 3;
    const len = Math.hypot(sums[r]!, sums[r + 1]!, sums[r + 2]!) || 1;
    normals[v * 3] = sums[r]! / len;
    normals[v * 3 + 1] = sums[r + 1]! / len;
    normals[v * 3 + 2] = sums[r + 2]! / len;
  }
  return normals;
}

/** Splits every triangle into four at its edge midpoints (attributes interpolated; shared edges share midpoints). */
export function subdivide(arrays: MeshArrays): MeshArrays {
  const { indices } = arrays;
  const vertexCount = arrays.positions.length / 3;
  const midpoints = new Map<string, number>();
  const extra: [number, number][] = [];
  const midpoint = (a: number, b: number): number => {
    const key = a < b ? `${a},${b}` : `${b},${a}`;
    let index = midpoints.get(key);
    if (index === undefined) {
      index = vertexCount + extra.length;
      extra.push([a, b]);
      midpoints.set(key, index);
    }
    return index;
  };
  const out = new Uint32Array(indices.length * 4);
  for (let t = 0, o = 0; t < indices.length; t += 3) {
    const a = indices[t]!, b = indices[t + 1]!, c = indices[t + 2]!;
    const ab = midpoint(a, b), bc = midpoint(b, c), ca = midpoint(c, a);
    out.set([a, ab, ca, ab, b, bc, ca, bc, c, ab, bc, ca], o);
    o += 12;
  }
  const grow = <T extends Float32Array | Uint16Array>(array: T | undefined, size: number, make: (n: number) => T, nearest = false): T | undefined => {
    if (!array) return undefined;
    const next = make((vertexCount + extra.length) * size);
    next.set(array);
    extra.forEach(([a, b], i) => {
      for (let k = 0; k < size; k++) {
        next[(vertexCount + i) * size + k] = nearest ? array[a * size + k]! : (array[a * size + k]! + array[b * size + k]!) / 2;
      }
    });
    return next;
  };
  const f32 = (n: number) => new Float32Array(n);
  const normals = grow(arrays.normals, 3, f32);
  if (normals) {
    for (let v = vertexCount; v < normals.length / 3; v++) {
      const len = Math.hypot(normals[v * 3]!, normals[v * 3 + 1]!, normals[v * 3 + 2]!) || 1;
      for (let k = 0; k < 3; k++) normals[v * 3 + k]! /= len;
    }
  }
  return {
    positions: grow(arrays.positions, 3, f32)!,
    indices: out,
    normals,
    uvs: grow(arrays.uvs, 2, f32),
    colors: grow(arrays.colors, 3, f32),
    // Skin influences are not interpolable; a midpoint takes its first end's joints and weights.
    joints: grow(arrays.joints, 4, (n) => new Uint16Array(n), true),
    weights: grow(arrays.weights, 4, f32, true),
  };
}

/** Triangles in all meshes the scene uses. */
export function faceCount(doc: Document): number {
  let faces = 0;
  for (const node of meshNodes(doc)) {
    for (const prim of node.getMesh()!.listPrimitives()) {
      const count = prim.getIndices()?.getCount() ?? prim.getAttribute('POSITION')?.getCount() ?? 0;
      faces += Math.floor(count / 3);
    }
  }
  return faces;
}

/**
 * Quads stored as consecutive triangle pairs: a primitive's extras `quad_count` says its first
 * 2 x quad_count triangles pair up (each pair shares an edge).
 */
export function quadsOf(prim: Primitive): number {
  return Number((prim.getExtras() as { quad_count?: number }).quad_count ?? 0);
}

/** Quads of every mesh of the model (see quadsOf). */
function quadCount(doc: Document): number {
  let quads = 0;
  for (const node of meshNodes(doc)) {
    for (const prim of node.getMesh()!.listPrimitives()) quads += quadsOf(prim);
  }
  return quads;
}

/** Facts every model result reports: faces, quads, part names, format. */
export function describeModel(doc: Document, format = 'glb'): Record<string, unknown> {
  const quads = quadCount(doc);
  return {
    face_count: faceCount(doc),
    ...(quads > 0 ? { quad_count: quads, polygon_count: faceCount(doc) - quads } : {}),
    format,
    parts: meshNodes(doc).map((node) => node.getName()),
  };
}

/** Axis-aligned bounds of the scene in world space. */
export function sceneBounds(doc: Document): { min: Vec3; max: Vec3 } {
  const { min, max } = getBounds(sceneOf(doc));
  return { min: [min[0], min[1], min[2]], max: [max[0], max[1], max[2]] };
}

/** Concatenates meshes into one (indices offset). */
export function joinArrays(list: MeshArrays[]): MeshArrays {
  const vertexTotal = list.reduce((sum, a) => sum + a.positions.length / 3, 0);
  const indexTotal = list.reduce((sum, a) => sum + a.indices.length, 0);
  const joined: MeshArrays = { positions: new Float32Array(vertexTotal * 3), indices: new Uint32Array(indexTotal) };
  if (list.every((a) => a.normals)) joined.normals = new Float32Array(vertexTotal * 3);
  if (list.every((a) => a.uvs)) joined.uvs = new Float32Array(vertexTotal * 2);
  if (list.every((a) => a.colors)) joined.colors = new Float32Array(vertexTotal * 3);
  if (list.every((a) => a.joints && a.weights)) {
    joined.joints = new Uint16Array(vertexTotal * 4);
    joined.weights = new Float32Array(vertexTotal * 4);
  }
  let vertex = 0, index = 0;
  for (const a of list) {
    joined.positions.set(a.positions, vertex * 3);
    joined.normals?.set(a.normals!, vertex * 3);
    joined.uvs?.set(a.uvs!, vertex * 2);
    joined.colors?.set(a.colors!, vertex * 3);
    joined.joints?.set(a.joints!, vertex * 4);
    joined.weights?.set(a.weights!, vertex * 4);
    for (let i = 0; i < a.indices.length; i++) joined.indices[index + i] = a.indices[i]! + vertex;
    vertex += a.positions.length / 3;
    index += a.indices.length;
  }
  return joined;
}

/** The triangles of `arrays` listed in `triangles` (by triangle number), with only the vertices they use. */
export function pickTriangles(arrays: MeshArrays, triangles: ArrayLike<number>): MeshArrays {
  const remap = new Int32Array(arrays.positions.length / 3).fill(-1);
  const indices = new Uint32Array(triangles.length * 3);
  const used: number[] = [];
  for (let i = 0; i < triangles.length; i++) {
    for (let k = 0; k < 3; k++) {
      const v = arrays.indices[triangles[i]! * 3 + k]!;
      if (remap[v] === -1) {
        remap[v] = used.length;
        used.push(v);
      }
      indices[i * 3 + k] = remap[v]!;
    }
  }
  const take = <T extends Float32Array | Uint16Array>(array: T | undefined, size: number): T | undefined => {
    if (!array) return undefined;
    const out = new (array.constructor as new (n: number) => T)(used.length * size);
    used.forEach((v, i) => out.set(array.subarray(v * size, v * size + size), i * size));
    return out;
  };
  return {
    positions: take(arrays.positions, 3)!,
    indices,
    normals: take(arrays.normals, 3),
    uvs: take(arrays.uvs, 2),
    colors: take(arrays.colors, 3),
    joints: take(arrays.joints, 4),
    weights: take(arrays.weights, 4),
  };
}

/** For each triangle, a label shared by the triangles it connects to through shared positions (union-find). */
export function triangleComponents(positions: Float32Array, indices: Uint32Array): Uint32Array {
  const remap = positionRemap(positions);
  const parent = Int32Array.from({ length: remap.length }, (_, i) => i);
  const find = (v: number): number => {
    while (parent[v] !== v) {
      parent[v] = parent[parent[v]!]!;
      v = parent[v]!;
    }
    return v;
  };
  for (let t = 0; t < indices.length; t += 3) {
    const a = find(remap[indices[t]!]!);
    for (let k = 1; k < 3; k++) {
      const b = find(remap[indices[t + k]!]!);
      if (a !== b) parent[b] = a;
    }
  }
  return Uint32Array.from({ length: indices.length / 3 }, (_, t) => find(remap[indices[t * 3]!]!));
}

/** All mesh geometry of the scene joined, in world space (bind space for skinned meshes). */
export function worldSurface(doc: Document): MeshArrays {
  const list: MeshArrays[] = [];
  for (const node of meshNodes(doc)) {
    const m = node.getSkin() ? null : node.getWorldMatrix();
    for (const prim of node.getMesh()!.listPrimitives()) {
      const arrays = readArrays(prim);
      if (m) {
        const p = arrays.positions;
        for (let v = 0; v < p.length; v += 3) {
          const [x, y, z] = [p[v]!, p[v + 1]!, p[v + 2]!];
          p[v] = m[0] * x + m[4] * y + m[8] * z + m[12];
          p[v + 1] = m[1] * x + m[5] * y + m[9] * z + m[13];
          p[v + 2] = m[2] * x + m[6] * y + m[10] * z + m[14];
        }
      }
      list.push({ positions: arrays.positions, indices: arrays.indices });
    }
  }
  return joinArrays(list);
}

/**
 * The faces of a primitive's arrays as polygons of vertex indices: its first `quads` triangle
 * pairs as quads (in the first triangle's winding), the rest as triangles.
 */
export function polygonsOf(arrays: MeshArrays, quads: number): number[][] {
  const { indices } = arrays;
  const point = quads > 0 ? positionRemap(arrays.positions) : null;
  const polygons: number[][] = [];
  for (let t = 0; t < indices.length / 3; t++) {
    const tri = [indices[t * 3]!, indices[t * 3 + 1]!, indices[t * 3 + 2]!];
    if (point && t < quads * 2 && t % 2 === 0) {
      const next = [indices[t * 3 + 3]!, indices[t * 3 + 4]!, indices[t * 3 + 5]!];
      const quad = quadOf(tri, next, point);
      if (quad) {
        polygons.push(quad);
        t++;
        continue;
      }
    }
    polygons.push(tri);
  }
  return polygons;
}

/** Two triangles sharing an edge (by position) as one quad x, extra, y, z where x -> y is the shared edge in the first. */
function quadOf(first: number[], second: number[], point: Uint32Array): number[] | null {
  for (let k = 0; k < 3; k++) {
    const x = first[k]!, y = first[(k + 1) % 3]!, z = first[(k + 2) % 3]!;
    const shared = second.filter((v) => point[v] === point[x] || point[v] === point[y]);
    const extra = second.find((v) => point[v] !== point[x] && point[v] !== point[y]);
    if (shared.length === 2 && extra !== undefined) return [x, extra, y, z];
  }
  return null;
}

/** One primitive of the scene in world space, named after its node (numbered when a node has several). */
export interface WorldPart {
  name: string;
  arrays: MeshArrays;
  material: Material | null;
  quads: number;
}

/** Every primitive with positions and normals in world space, for writers of formats without a node hierarchy. */
export function worldParts(doc: Document): WorldPart[] {
  const parts: WorldPart[] = [];
  for (const node of meshNodes(doc)) {
    const m = node.getWorldMatrix();
    const prims = node.getMesh()!.listPrimitives();
    prims.forEach((prim, i) => {
      const arrays = readArrays(prim);
      const { positions, normals } = arrays;
      for (let v = 0; v < positions.length; v += 3) {
        const [x, y, z] = [positions[v]!, positions[v + 1]!, positions[v + 2]!];
        positions[v] = m[0] * x + m[4] * y + m[8] * z + m[12];
        positions[v + 1] = m[1] * x + m[5] * y + m[9] * z + m[13];
        positions[v + 2] = m[2] * x + m[6] * y + m[10] * z + m[14];
        if (normals) {
          const [nx, ny, nz] = [normals[v]!, normals[v + 1]!, normals[v + 2]!];
          const wx = m[0] * nx + m[4] * ny + m[8] * nz, wy = m[1] * nx + m[5] * ny + m[9] * nz, wz = m[2] * nx + m[6] * ny + m[10] * nz;
          const len = Math.hypot(wx, wy, wz) || 1;
          [normals[v], normals[v + 1], normals[v + 2]] = [wx / len, wy / len, wz / len];
        }
      }
      parts.push({ name: prims.length > 1 ? `${node.getName()}_${i + 1}` : node.getName(), arrays, material: prim.getMaterial(), quads: quadsOf(prim) });
    });
  }
  return parts;
}
