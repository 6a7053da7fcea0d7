/**
 * Reads a source model in any format the engine writes, so edits can start from converted,
 * FBX-rigged or animated results: GLB and glTF directly; FBX, OBJ and STL through three's
 * loaders (meshes, materials, embedded textures, skins and animations carried over to glTF);
 * 3MF and USDZ packages through their XML and USDA text.
 */
import type { Document, Material, Node as GltfNode, Texture as GltfTexture } from '@gltf-transform/core';
import { AnimationClip, Bone, LoadingManager, Matrix4, Mesh, Texture, type BufferGeometry, type Object3D, type SkinnedMesh } from 'three';
import { unzipSync } from 'three/examples/jsm/libs/fflate.module.js';
import { FBXLoader } from 'three/examples/jsm/loaders/FBXLoader.js';
import { OBJLoader } from 'three/examples/jsm/loaders/OBJLoader.js';
import { STLLoader } from 'three/examples/jsm/loaders/STLLoader.js';
import { TaskFailedError } from '../../spec.ts';
import { bufferOf, createDocument, createMeshNode, readModelDocument, sceneOf, type MeshArrays } from './mesh-common.ts';

/** The document behind a model file; TaskFailedError when it is no model the engine reads. */
export async function importModel(data: Buffer): Promise<Document> {
  const head = data.subarray(0, 32).toString('latin1');
  if (head.startsWith('glTF') || data[0] === 0x7b) return readModelDocument(data);
  try {
    if (head.startsWith('PK')) return await importPackage(unzip(data));
    if (head.startsWith('; FBX') || head.startsWith('Kaydara FBX Binary')) return await fromThree(new FBXLoader(imageCatcher()).parse(arrayBuffer(data), ''), {});
    if (isStl(data)) return await fromThree(new Mesh(new STLLoader().parse(arrayBuffer(data))), {});
    if (/^(#|v |o |g |mtllib )/m.test(data.subarray(0, 4096).toString('utf8'))) return await fromThree(new OBJLoader().parse(data.toString('utf8')), {});
  } catch (err) {
    if (err instanceof TaskFailedError) throw err;
    throw new TaskFailedError(`the source model could not be read: ${(err as Error).message}`);
  }
  throw new TaskFailedError('the source model is in no format the local engine reads (GLB, glTF, FBX, OBJ, STL, 3MF, USDZ)');
}

const arrayBuffer = (b: Buffer) => b.buffer.slice(b.byteOffset, b.byteOffset + b.length) as ArrayBuffer;

function unzip(data: Buffer): Map<string, Buffer> {
  return new Map(Object.entries(unzipSync(new Uint8Array(data))).map(([name, bytes]) => [name, Buffer.from(bytes)]));
}

/** Binary STL: an 80-byte header and a triangle count matching the size; ASCII STL starts with `solid`. */
function isStl(data: Buffer): boolean {
  return (data.length >= 84 && data.length === 84 + data.readUInt32LE(80) * 50) || /^solid\s[\s\S]*facet/.test(data.subarray(0, 1024).toString('latin1'));
}

/** Loaders ask for textures by URL; this keeps the URL (an embedded data URI) instead of loading it through a browser. */
function imageCatcher(): LoadingManager {
  const manager = new LoadingManager();
  const catcher = {
    path: '',
    setPath(path: string) {
      this.path = path;
      return this;
    },
    load(url: string) {
      const texture = new Texture();
      texture.userData.url = url;
      return texture;
    },
  };
  manager.addHandler(/\.(png|jpe?g|webp|tiff?|bmp|tga)$/i, catcher as never);
  return manager;
}

/** OBJ (with its MTL and textures), 3MF or USDZ in a zip. */
async function importPackage(files: Map<string, Buffer>): Promise<Document> {
  const names = [...files.keys()];
  const obj = names.find((n) => n.toLowerCase().endsWith('.obj'));
  if (obj) {
    const group = new OBJLoader().parse(files.get(obj)!.toString('utf8'));
    const mtl = names.find((n) => n.toLowerCase().endsWith('.mtl'));
    return fromThree(group, mtl ? objMaterials(files.get(mtl)!.toString('utf8'), files) : {});
  }
  if (files.has('3D/3dmodel.model')) return from3mf(files.get('3D/3dmodel.model')!.toString('utf8'));
  const usda = names.find((n) => n.toLowerCase().endsWith('.usda'));
  if (usda) return fromUsda(files.get(usda)!.toString('utf8'));
  throw new TaskFailedError('the zip holds no OBJ, 3MF model or USDA layer');
}

interface MaterialFacts {
  color: [number, number, number];
  image?: Buffer;
}

/** Colours and texture files of an MTL library, by material name. */
function objMaterials(mtl: string, files: Map<string, Buffer>): Record<string, MaterialFacts> {
  const materials: Record<string, MaterialFacts> = {};
  let current: MaterialFacts | null = null;
  for (const line of mtl.split('\n')) {
    const [key, ...rest] = line.trim().split(/\s+/);
    if (key === 'newmtl') materials[rest.join(' ')] = current = { color: [0.8, 0.8, 0.8] };
    else if (key === 'Kd' && current) current.color = [Number(rest[0]), Number(rest[1]), Number(rest[2])];
    else if (key === 'map_Kd' && current) current.image = files.get(rest.join(' '));
  }
  return materials;
}

/** A three scene as a glTF document: meshes in world space (skinned ones in bind space), skins and animations. */
async function fromThree(root: Object3D & { animations?: AnimationClip[] }, materials: Record<string, MaterialFacts>): Promise<Document> {
  const doc = createDocument();
  const scene = sceneOf(doc);
  root.updateMatrixWorld(true);
  const gltfMaterials = new Map<string, Material>();
  const textures = new Map<string, GltfTexture>();
  const materialOf = (source: unknown): Material => {
    const m = source as { name?: string; color?: { r: number; g: number; b: number }; map?: Texture | null };
    const name = m?.name || 'material';
    if (gltfMaterials.has(name)) return gltfMaterials.get(name)!;
    const facts = materials[name];
    const color = facts?.color ?? (m?.color ? [m.color.r, m.color.g, m.color.b] : [0.8, 0.8, 0.8]);
    const material = doc.createMaterial(name).setBaseColorFactor([color[0]!, color[1]!, color[2]!, 1]).setMetallicFactor(0).setRoughnessFactor(0.8);
    const url = m?.map?.userData?.url as string | undefined;
    const image = facts?.image ?? (url?.startsWith('data:') ? Buffer.from(url.slice(url.indexOf(',') + 1), 'base64') : undefined);
    if (image) {
      const key = url ?? name;
      if (!textures.has(key)) textures.set(key, doc.createTexture(name).setImage(image).setMimeType(sniffImage(image)));
      material.setBaseColorTexture(textures.get(key)!).setBaseColorFactor([1, 1, 1, 1]);
    }
    gltfMaterials.set(name, material);
    return material;
  };

  const joints = new Map<Bone, GltfNode>();
  const jointOf = (bone: Bone): GltfNode => {
    if (joints.has(bone)) return joints.get(bone)!;
    const node = doc.createNode(bone.name).setTranslation(bone.position.toArray()).setRotation(bone.quaternion.toArray() as [number, number, number, number]).setScale(bone.scale.toArray());
    joints.set(bone, node);
    if (bone.parent instanceof Bone) jointOf(bone.parent).addChild(node);
    else {
      // What holds the skeleton becomes one node placed where it is in the world: animation keys stay local.
      const [t, r, s] = decompose(bone.parent?.matrixWorld ?? new Matrix4());
      const holder = doc.createNode(bone.parent?.name || 'skeleton').setTranslation(t).setRotation(r).setScale(s);
      holder.addChild(node);
      scene.addChild(holder);
    }
    return node;
  };

  const meshes: Mesh[] = [];
  root.traverse((o) => {
    if ((o as Mesh).isMesh) meshes.push(o as Mesh);
  });
  for (const mesh of meshes) {
    const skinned = (mesh as SkinnedMesh).isSkinnedMesh ? (mesh as SkinnedMesh) : null;
    const geometry = mesh.geometry as BufferGeometry;
    const groups = geometry.groups.length > 0 ? geometry.groups : [{ start: 0, count: geometry.index?.count ?? geometry.attributes.position!.count, materialIndex: 0 }];
    const sources = Array.isArray(mesh.material) ? mesh.material : [mesh.material];
    const matrix = skinned ? null : mesh.matrixWorld;
    const parts = groups.map((group) => ({ arrays: arraysOf(geometry, group.start, group.count, matrix), material: materialOf(sources[group.materialIndex ?? 0]) }));
    const node = createMeshNode(doc, mesh.name || 'model', parts);
    scene.addChild(node);
    if (skinned) {
      const skin = doc.createSkin(`${mesh.name || 'model'}_skin`);
      const bones = skinned.skeleton.bones;
      bones.forEach((bone) => skin.addJoint(jointOf(bone)));
      skin.setSkeleton(jointOf(bones[0]!));
      // glTF binds in mesh space: inverse bind = three's bone inverse times the bind matrix.
      const inverse = new Float32Array(bones.length * 16);
      skinned.skeleton.boneInverses.forEach((m, i) => inverse.set(m.clone().multiply(skinned.bindMatrix).elements, i * 16));
      skin.setInverseBindMatrices(doc.createAccessor().setType('MAT4').setArray(inverse).setBuffer(bufferOf(doc)));
      node.setSkin(skin);
    }
  }

  const byName = new Map([...joints].map(([bone, node]) => [bone.name, node]));
  for (const clip of root.animations ?? []) {
    const animation = doc.createAnimation(clip.name);
    for (const track of clip.tracks) {
      const [name, property] = [track.name.slice(0, track.name.lastIndexOf('.')), track.name.slice(track.name.lastIndexOf('.') + 1)];
      const target = byName.get(name);
      const path = property === 'quaternion' ? 'rotation' : property === 'position' ? 'translation' : property === 'scale' ? 'scale' : null;
      if (!target || !path) continue;
      const sampler = doc
        .createAnimationSampler()
        .setInput(doc.createAccessor().setType('SCALAR').setArray(Float32Array.from(track.times)).setBuffer(bufferOf(doc)))
        .setOutput(doc.createAccessor().setType(path === 'rotation' ? 'VEC4' : 'VEC3').setArray(Float32Array.from(track.values)).setBuffer(bufferOf(doc)))
        .setInterpolation('LINEAR');
      animation.addSampler(sampler).addChannel(doc.createAnimationChannel().setTargetNode(target).setTargetPath(path).setSampler(sampler));
    }
  }
  if (meshes.length === 0) throw new TaskFailedError('the source model has no meshes');
  return doc;
}

function arraysOf(geometry: BufferGeometry, start: number, count: number, matrix: Matrix4 | null): MeshArrays {
  const index = geometry.index;
  const corners = Uint32Array.from({ length: count }, (_, i) => (index ? index.getX(start + i) : start + i));
  const used = [...new Set(corners)].sort((a, b) => a - b);
  const local = new Map(used.map((v, i) => [v, i]));
  const take = (name: string, size: number, transform?: (v: number[]) => number[]): Float32Array | undefined => {
    const attribute = geometry.getAttribute(name);
    if (!attribute) return undefined;
    const out = new Float32Array(used.length * size);
    used.forEach((v, i) => {
      const value = Array.from({ length: size }, (_, k) => attribute.getComponent(v, k));
      out.set(transform ? transform(value) : value, i * size);
    });
    return out;
  };
  const e = matrix?.elements;
  const place = e ? ([x, y, z]: number[]) => [e[0]! * x! + e[4]! * y! + e[8]! * z! + e[12]!, e[1]! * x! + e[5]! * y! + e[9]! * z! + e[13]!, e[2]! * x! + e[6]! * y! + e[10]! * z! + e[14]!] : undefined;
  const turn = e
    ? ([x, y, z]: number[]) => {
        const n = [e[0]! * x! + e[4]! * y! + e[8]! * z!, e[1]! * x! + e[5]! * y! + e[9]! * z!, e[2]! * x! + e[6]! * y! + e[10]! * z!];
        const length = Math.hypot(n[0]!, n[1]!, n[2]!) || 1;
        return n.map((c) => c / length);
      }
    : undefined;
  const joints = take('skinIndex', 4);
  return {
    positions: take('position', 3, place)!,
    indices: Uint32Array.from(corners, (v) => local.get(v)!),
    normals: take('normal', 3, turn),
    // three's UV origin is bottom left; glTF's is top left.
    uvs: take('uv', 2, ([u, v]) => [u!, 1 - v!]),
    colors: take('color', 3),
    joints: joints ? Uint16Array.from(joints) : undefined,
    weights: take('skinWeight', 4),
  };
}

function decompose(m: Matrix4): [[number, number, number], [number, number, number, number], [number, number, number]] {
  const bone = new Bone();
  m.decompose(bone.position, bone.quaternion, bone.scale);
  return [bone.position.toArray(), bone.quaternion.toArray() as [number, number, number, number], bone.scale.toArray()];
}

function sniffImage(data: Buffer): string {
  if (data[0] === 0x89 && data[1] === 0x50) return 'image/png';
  if (data[0] === 0xff && data[1] === 0xd8) return 'image/jpeg';
  if (data.subarray(8, 12).toString('latin1') === 'WEBP') return 'image/webp';
  return 'image/png';
}

/** A 3MF model's mesh objects (Z up, as 3MF has it) back in glTF's Y up, with each object's display colour. */
function from3mf(xml: string): Document {
  const doc = createDocument();
  const colors = new Map<string, [number, number, number]>();
  for (const m of xml.matchAll(/<basematerials id="(\d+)"[^>]*>\s*<base [^>]*displaycolor="#([0-9A-Fa-f]{6})/g)) {
    const hex = m[2]!;
    colors.set(m[1]!, [parseInt(hex.slice(0, 2), 16) / 255, parseInt(hex.slice(2, 4), 16) / 255, parseInt(hex.slice(4, 6), 16) / 255]);
  }
  for (const object of xml.matchAll(/<object ([^>]*)>([\s\S]*?)<\/object>/g)) {
    const attributes = object[1]!;
    const name = /name="([^"]*)"/.exec(attributes)?.[1] ?? 'model';
    const color = colors.get(/pid="(\d+)"/.exec(attributes)?.[1] ?? '') ?? [0.8, 0.8, 0.8];
    const positions = [...object[2]!.matchAll(/<vertex x="([^"]+)" y="([^"]+)" z="([^"]+)"/g)].flatMap((v) => [Number(v[1]), Number(v[3]), -Number(v[2])]);
    const indices = [...object[2]!.matchAll(/<triangle v1="(\d+)" v2="(\d+)" v3="(\d+)"/g)].flatMap((t) => [Number(t[1]), Number(t[2]), Number(t[3])]);
    if (indices.length === 0) continue;
    const material = doc.createMaterial(name).setBaseColorFactor([...color, 1]);
    sceneOf(doc).addChild(createMeshNode(doc, name, [{ arrays: { positions: Float32Array.from(positions), indices: Uint32Array.from(indices) }, material }]));
  }
  if (sceneOf(doc).listChildren().length === 0) throw new TaskFailedError('the 3MF package holds no mesh');
  return doc;
}

/** The Mesh prims of a USDA layer (points, faces triangulated as fans, UVs back to glTF's top-left origin). */
function fromUsda(text: string): Document {
  const doc = createDocument();
  const numbers = (s: string | undefined) => (s ? (s.match(/-?[\d.]+(?:e-?\d+)?/g) ?? []).map(Number) : []);
  for (const prim of text.matchAll(/def Mesh "([^"]+)"[\s\S]*?\{([\s\S]*?)\n\s*\}/g)) {
    const body = prim[2]!;
    const counts = numbers(/int\[\] faceVertexCounts = \[([^\]]*)\]/.exec(body)?.[1]);
    const corners = numbers(/int\[\] faceVertexIndices = \[([^\]]*)\]/.exec(body)?.[1]);
    const points = numbers(/point3f\[\] points = \[([^\]]*)\]/.exec(body)?.[1]);
    const st = numbers(/texCoord2f\[\] primvars:st = \[([^\]]*)\]/.exec(body)?.[1]);
    const indices: number[] = [];
    let at = 0;
    for (const n of counts) {
      for (let k = 1; k < n - 1; k++) indices.push(corners[at]!, corners[at + k]!, corners[at + k + 1]!);
      at += n;
    }
    if (indices.length === 0) continue;
    const uvs = st.length === (points.length / 3) * 2 ? Float32Array.from(st, (v, i) => (i % 2 === 1 ? 1 - v : v)) : undefined;
    sceneOf(doc).addChild(createMeshNode(doc, prim[1]!, [{ arrays: { positions: Float32Array.from(points), indices: Uint32Array.from(indices), uvs }, material: null }]));
  }
  if (sceneOf(doc).listChildren().length === 0) throw new TaskFailedError('the USD layer holds no mesh');
  return doc;
}
