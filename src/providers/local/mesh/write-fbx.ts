/**
 * ASCII FBX 7.4 writer (no FBX library exists for Node): the node hierarchy as Null, Mesh and
 * LimbNode models; per mesh one geometry with polygons (quads where the primitive pairs its
 * triangles), normals and UVs per polygon corner, a Phong material per glTF material with its
 * base-colour texture embedded; a skin as Skin/Cluster deformers with a bind pose; animations
 * as stacks of Euler-angle and translation curves.
 */
import type { Animation, Document, Material, Node, Skin, Texture } from '@gltf-transform/core';
import { polygonsOf, positionRemap, quadsOf, readArrays, sceneOf } from './mesh-common.ts';
import type { EncodedTexture } from './encode-texture.ts';

export interface WriteFbxOptions {
  /** Encoded texture files by glTF texture; a material's base colour embeds its file. */
  textures: Map<Texture, EncodedTexture & { fileName: string }>;
  animations: boolean;
}

/** FBX time unit: ticks per second. */
const KTIME_PER_SECOND = 46186158000;

const num = (x: number) => (Number.isInteger(x) ? String(x) : String(Number(x.toFixed(6))));
const list = (values: ArrayLike<number>) => Array.from(values, num).join(',');

export function writeFbx(doc: Document, options: WriteFbxOptions): Buffer {
  let nextId = 1000000;
  const id = () => nextId++;
  const objects: string[] = [];
  const connections: string[] = [];
  const counts = new Map<string, number>();
  const object = (type: string, text: string) => {
    counts.set(type, (counts.get(type) ?? 0) + 1);
    objects.push(text);
  };
  const connect = (child: number, parent: number, property?: string) => connections.push(`\tC: "${property ? 'OP' : 'OO'}",${child},${parent}${property ? `, "${property}"` : ''}`);
  const array = (name: string, values: ArrayLike<number>, indent: string) => `${indent}${name}: *${values.length} {\n${indent}\ta: ${list(values)}\n${indent}}`;

  const skins = doc.getRoot().listSkins();
  const jointOf = new Set<Node>(skins.flatMap((s) => s.listJoints()));
  const modelIds = new Map<Node, number>();
  const materialIds = new Map<Material, number>();
  const textureIds = new Map<Texture, number>();

  let fallback: Material | null = null;
  const materialId = (material: Material | null): number => {
    const key = material ?? (fallback ??= doc.createMaterial('default'));
    if (materialIds.has(key)) return materialIds.get(key)!;
    const mid = id();
    materialIds.set(key, mid);
    const [r, g, b] = key.getBaseColorFactor();
    object('Material', `\tMaterial: ${mid}, "Material::${key.getName() || 'material'}", "" {\n\t\tVersion: 102\n\t\tShadingModel: "phong"\n\t\tMultiLayer: 0\n\t\tProperties70:  {\n\t\t\tP: "DiffuseColor", "Color", "", "A",${list([r, g, b])}\n\t\t\tP: "DiffuseFactor", "Number", "", "A",1\n\t\t\tP: "Shininess", "double", "Number", "",${num((1 - key.getRoughnessFactor()) * 100)}\n\t\t\tP: "ReflectionFactor", "Number", "", "A",${num(key.getMetallicFactor())}\n\t\t}\n\t}`);
    const texture = key.getBaseColorTexture();
    const file = texture ? options.textures.get(texture) : undefined;
    if (texture && file) {
      if (!textureIds.has(texture)) {
        const tid = id(), vid = id();
        textureIds.set(texture, tid);
        object('Texture', `\tTexture: ${tid}, "Texture::${file.fileName}", "" {\n\t\tType: "TextureVideoClip"\n\t\tVersion: 202\n\t\tTextureName: "Texture::${file.fileName}"\n\t\tMedia: "Video::${file.fileName}"\n\t\tFileName: "${file.fileName}"\n\t\tRelativeFilename: "${file.fileName}"\n\t}`);
        object('Video', `\tVideo: ${vid}, "Video::${file.fileName}", "Clip" {\n\t\tType: "Clip"\n\t\tFileName: "${file.fileName}"\n\t\tRelativeFilename: "${file.fileName}"\n\t\tContent: ,\n\t\t\t"${file.data.toString('base64')}"\n\t}`);
        connect(vid, tid);
      }
      connect(textureIds.get(texture)!, mid, 'DiffuseColor');
    }
    return mid;
  };

  const transformProperties = (node: Node) => {
    const [tx, ty, tz] = node.getTranslation();
    const [rx, ry, rz] = quaternionToEuler(node.getRotation());
    const [sx, sy, sz] = node.getScale();
    return `\t\tProperties70:  {\n\t\t\tP: "Lcl Translation", "Lcl Translation", "", "A",${list([tx, ty, tz])}\n\t\t\tP: "Lcl Rotation", "Lcl Rotation", "", "A",${list([rx, ry, rz])}\n\t\t\tP: "Lcl Scaling", "Lcl Scaling", "", "A",${list([sx, sy, sz])}\n\t\t}`;
  };

  const visit = (node: Node, parentId: number) => {
    const mid = id();
    modelIds.set(node, mid);
    const name = node.getName() || `node${mid}`;
    const kind = jointOf.has(node) ? 'LimbNode' : node.getMesh() ? 'Mesh' : 'Null';
    if (kind === 'LimbNode') {
      const attribute = id();
      object('NodeAttribute', `\tNodeAttribute: ${attribute}, "NodeAttribute::${name}", "LimbNode" {\n\t\tTypeFlags: "Skeleton"\n\t}`);
      connect(attribute, mid);
    }
    object('Model', `\tModel: ${mid}, "Model::${name}", "${kind}" {\n\t\tVersion: 232\n${transformProperties(node)}\n\t\tShading: T\n\t\tCulling: "CullingOff"\n\t}`);
    connect(mid, parentId);
    if (node.getMesh()) writeGeometry(node, mid);
    for (const child of node.listChildren()) visit(child, mid);
  };

  const geometryOf = new Map<Node, { geometry: number; pointOfVertex: Uint32Array[]; prims: ReturnType<typeof readArrays>[] }>();
  const writeGeometry = (node: Node, modelId: number) => {
    const prims = node.getMesh()!.listPrimitives().map((prim) => ({ prim, arrays: readArrays(prim) }));
    // Control points are the node's welded positions; corners carry the per-vertex attributes.
    const positions: number[] = [], polygonIndex: number[] = [], normals: number[] = [], uvs: number[] = [], materials: number[] = [];
    const pointOfVertex: Uint32Array[] = [];
    const hasUv = prims.every(({ arrays }) => arrays.uvs);
    const materialSlots: number[] = [];
    prims.forEach(({ prim, arrays }) => {
      const remap = positionRemap(arrays.positions);
      const point = new Uint32Array(remap.length);
      const first = positions.length / 3;
      let unique = 0;
      for (let v = 0; v < remap.length; v++) {
        if (remap[v] === v) {
          point[v] = first + unique++;
          positions.push(arrays.positions[v * 3]!, arrays.positions[v * 3 + 1]!, arrays.positions[v * 3 + 2]!);
        } else point[v] = point[remap[v]!]!;
      }
      pointOfVertex.push(point);
      const mid = materialId(prim.getMaterial());
      if (!materialSlots.includes(mid)) materialSlots.push(mid);
      const slot = materialSlots.indexOf(mid);
      const corner = (v: number, last: boolean) => {
        polygonIndex.push(last ? ~point[v]! : point[v]!);
        if (arrays.normals) normals.push(arrays.normals[v * 3]!, arrays.normals[v * 3 + 1]!, arrays.normals[v * 3 + 2]!);
        else normals.push(0, 1, 0);
        if (hasUv) uvs.push(arrays.uvs![v * 2]!, 1 - arrays.uvs![v * 2 + 1]!);
      };
      for (const polygon of polygonsOf(arrays, quadsOf(prim))) {
        polygon.forEach((v, i) => corner(v, i === polygon.length - 1));
        materials.push(slot);
      }
    });
    const geometry = id();
    const layers = [
      `\t\tLayerElementNormal: 0 {\n\t\t\tVersion: 101\n\t\t\tName: ""\n\t\t\tMappingInformationType: "ByPolygonVertex"\n\t\t\tReferenceInformationType: "Direct"\n${array('Normals', normals, '\t\t\t')}\n\t\t}`,
      ...(hasUv ? [`\t\tLayerElementUV: 0 {\n\t\t\tVersion: 101\n\t\t\tName: "UVMap"\n\t\t\tMappingInformationType: "ByPolygonVertex"\n\t\t\tReferenceInformationType: "IndexToDirect"\n${array('UV', uvs, '\t\t\t')}\n${array('UVIndex', Array.from({ length: uvs.length / 2 }, (_, i) => i), '\t\t\t')}\n\t\t}`] : []),
      materialSlots.length === 1
        ? `\t\tLayerElementMaterial: 0 {\n\t\t\tVersion: 101\n\t\t\tName: ""\n\t\t\tMappingInformationType: "AllSame"\n\t\t\tReferenceInformationType: "IndexToDirect"\n${array('Materials', [0], '\t\t\t')}\n\t\t}`
        : `\t\tLayerElementMaterial: 0 {\n\t\t\tVersion: 101\n\t\t\tName: ""\n\t\t\tMappingInformationType: "ByPolygon"\n\t\t\tReferenceInformationType: "IndexToDirect"\n${array('Materials', materials, '\t\t\t')}\n\t\t}`,
    ];
    const layerRefs = ['LayerElementNormal', ...(hasUv ? ['LayerElementUV'] : []), 'LayerElementMaterial'].map((type) => `\t\t\tLayerElement:  {\n\t\t\t\tType: "${type}"\n\t\t\t\tTypedIndex: 0\n\t\t\t}`).join('\n');
    object('Geometry', `\tGeometry: ${geometry}, "Geometry::${node.getName()}", "Mesh" {\n${array('Vertices', positions, '\t\t')}\n${array('PolygonVertexIndex', polygonIndex, '\t\t')}\n\t\tGeometryVersion: 124\n${layers.join('\n')}\n\t\tLayer: 0 {\n\t\t\tVersion: 100\n${layerRefs}\n\t\t}\n\t}`);
    connect(geometry, modelId);
    for (const mid of materialSlots) connect(mid, modelId);
    geometryOf.set(node, { geometry, pointOfVertex, prims: prims.map((p) => p.arrays) });
  };

  for (const node of sceneOf(doc).listChildren()) visit(node, 0);
  for (const skin of skins) writeSkin(skin);
  if (options.animations) for (const animation of doc.getRoot().listAnimations()) writeAnimation(animation);

  function writeSkin(skin: Skin): void {
    const joints = skin.listJoints();
    const inverseBind = skin.getInverseBindMatrices();
    const bindPose = id();
    const poseNodes: string[] = [];
    const posed = new Set<Node>();
    const addPose = (node: Node, matrix: ArrayLike<number>) => {
      if (posed.has(node) || !modelIds.has(node)) return;
      posed.add(node);
      poseNodes.push(`\t\tPoseNode:  {\n\t\t\tNode: ${modelIds.get(node)}\n${array('Matrix', matrix, '\t\t\t')}\n\t\t}`);
    };
    for (const [node, geometry] of geometryOf) {
      if (node.getSkin() !== skin) continue;
      const meshWorld = node.getWorldMatrix();
      addPose(node, meshWorld);
      const skinId = id();
      object('Deformer', `\tDeformer: ${skinId}, "Deformer::${node.getName()}_skin", "Skin" {\n\t\tVersion: 101\n\t\tLink_DeformAcuracy: 50\n\t}`);
      connect(skinId, geometry.geometry);
      // Each control point takes the influences of its first vertex.
      const influences = joints.map(() => new Map<number, number>());
      geometry.prims.forEach((arrays, p) => {
        if (!arrays.joints || !arrays.weights) return;
        const point = geometry.pointOfVertex[p]!;
        for (let v = 0; v < point.length; v++) {
          for (let k = 0; k < 4; k++) {
            const weight = arrays.weights[v * 4 + k]!;
            if (weight > 0 && !influences[arrays.joints[v * 4 + k]!]!.has(point[v]!)) influences[arrays.joints[v * 4 + k]!]!.set(point[v]!, weight);
          }
        }
      });
      joints.forEach((joint, j) => {
        const link = jointBindWorld(meshWorld, inverseBind?.getElement(j, [] as number[]) ?? null, joint.getWorldMatrix());
        addPose(joint, link);
        const cluster = id();
        const entries = [...influences[j]!.entries()].sort((a, b) => a[0] - b[0]);
        object('Deformer', `\tDeformer: ${cluster}, "SubDeformer::${joint.getName()}", "Cluster" {\n\t\tVersion: 100\n\t\tUserData: "", ""\n${array('Indexes', entries.map((e) => e[0]), '\t\t')}\n${array('Weights', entries.map((e) => e[1]), '\t\t')}\n${array('Transform', multiply(invert(link), meshWorld), '\t\t')}\n${array('TransformLink', link, '\t\t')}\n\t}`);
        connect(cluster, skinId);
        connect(modelIds.get(joint)!, cluster);
      });
    }
    object('Pose', `\tPose: ${bindPose}, "Pose::BindPose", "BindPose" {\n\t\tType: "BindPose"\n\t\tVersion: 100\n\t\tNbPoseNodes: ${poseNodes.length}\n${poseNodes.join('\n')}\n\t}`);
  }

  function writeAnimation(animation: Animation): void {
    const stack = id(), layer = id();
    let end = 0;
    const curves: string[] = [];
    for (const channel of animation.listChannels()) {
      const target = channel.getTargetNode();
      const sampler = channel.getSampler();
      const path = channel.getTargetPath();
      if (!target || !sampler || !modelIds.has(target) || (path !== 'rotation' && path !== 'translation')) continue;
      const times = Array.from(sampler.getInput()!.getArray() as ArrayLike<number>);
      end = Math.max(end, times[times.length - 1] ?? 0);
      const output = sampler.getOutput()!;
      const values = times.map((_, i) => {
        const v = output.getElement(i, [] as number[]);
        return path === 'rotation' ? quaternionToEuler(v) : v;
      });
      const node = id();
      const short = path === 'rotation' ? 'R' : 'T';
      curves.push(`\tAnimationCurveNode: ${node}, "AnimCurveNode::${short}", "" {\n\t\tProperties70:  {\n${['X', 'Y', 'Z'].map((axis, k) => `\t\t\tP: "d|${axis}", "Number", "", "A",${num(values[0]![k]!)}`).join('\n')}\n\t\t}\n\t}`);
      connect(node, layer);
      connect(node, modelIds.get(target)!, path === 'rotation' ? 'Lcl Rotation' : 'Lcl Translation');
      ['X', 'Y', 'Z'].forEach((axis, k) => {
        const curve = id();
        const keyTimes = times.map((t) => Math.round(t * KTIME_PER_SECOND));
        curves.push(`\tAnimationCurve: ${curve}, "AnimCurve::", "" {\n\t\tDefault: 0\n\t\tKeyVer: 4009\n${array('KeyTime', keyTimes, '\t\t')}\n${array('KeyValueFloat', values.map((v) => v[k]!), '\t\t')}\n${array('KeyAttrFlags', [24836], '\t\t')}\n${array('KeyAttrDataFloat', [0, 0, 255790911, 0], '\t\t')}\n${array('KeyAttrRefCount', [times.length], '\t\t')}\n\t}`);
        connect(curve, node, `d|${axis}`);
      });
    }
    const stop = Math.round(end * KTIME_PER_SECOND);
    object('AnimationStack', `\tAnimationStack: ${stack}, "AnimStack::${animation.getName()}", "" {\n\t\tProperties70:  {\n\t\t\tP: "LocalStop", "KTime", "Time", "",${stop}\n\t\t\tP: "ReferenceStop", "KTime", "Time", "",${stop}\n\t\t}\n\t}`);
    object('AnimationLayer', `\tAnimationLayer: ${layer}, "AnimLayer::${animation.getName()}", "" {\n\t}`);
    for (const curve of curves) object(curve.includes('AnimationCurveNode') ? 'AnimationCurveNode' : 'AnimationCurve', curve);
    connect(layer, stack);
  }

  const definitions = [...counts.entries()].map(([type, count]) => `\tObjectType: "${type}" {\n\t\tCount: ${count}\n\t}`).join('\n');
  const text = [
    '; FBX 7.4.0 project file',
    '; ----------------------------------------------------',
    '',
    'FBXHeaderExtension:  {',
    '\tFBXHeaderVersion: 1003',
    '\tFBXVersion: 7400',
    '\tCreator: "Gengate local mesh engine"',
    '}',
    'GlobalSettings:  {',
    '\tVersion: 1000',
    '\tProperties70:  {',
    '\t\tP: "UpAxis", "int", "Integer", "",1',
    '\t\tP: "UpAxisSign", "int", "Integer", "",1',
    '\t\tP: "FrontAxis", "int", "Integer", "",2',
    '\t\tP: "FrontAxisSign", "int", "Integer", "",1',
    '\t\tP: "CoordAxis", "int", "Integer", "",0',
    '\t\tP: "CoordAxisSign", "int", "Integer", "",1',
    // Model units are metres; FBX counts centimetres.
    '\t\tP: "UnitScaleFactor", "double", "Number", "",100',
    '\t\tP: "TimeMode", "enum", "", "",6',
    '\t}',
    '}',
    'Definitions:  {',
    '\tVersion: 100',
    `\tCount: ${objects.length}`,
    definitions,
    '}',
    'Objects:  {',
    ...objects,
    '}',
    'Connections:  {',
    ...connections,
    '}',
    '',
  ];
  return Buffer.from(text.join('\n'), 'utf8');
}

/** A joint's world matrix at bind time: the mesh's world times the inverse of its inverse bind matrix. */
function jointBindWorld(meshWorld: ArrayLike<number>, inverseBind: number[] | null, current: ArrayLike<number>): number[] {
  return inverseBind && inverseBind.length === 16 ? multiply(meshWorld, invert(inverseBind)) : Array.from(current);
}

/** Column-major 4x4 product a·b. */
function multiply(a: ArrayLike<number>, b: ArrayLike<number>): number[] {
  const out = new Array<number>(16).fill(0);
  for (let c = 0; c < 4; c++) for (let r = 0; r < 4; r++) for (let k = 0; k < 4; k++) out[c * 4 + r]! += a[k * 4 + r]! * b[c * 4 + k]!;
  return out;
}

/** Inverse of an affine column-major 4x4 matrix. */
function invert(m: ArrayLike<number>): number[] {
  const [a, b, c, d, e, f, g, h, i] = [m[0]!, m[4]!, m[8]!, m[1]!, m[5]!, m[9]!, m[2]!, m[6]!, m[10]!];
  const det = a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g) || 1;
  const inv = [(e * i - f * h) / det, (c * h - b * i) / det, (b * f - c * e) / det, (f * g - d * i) / det, (a * i - c * g) / det, (c * d - a * f) / det, (d * h - e * g) / det, (b * g - a * h) / det, (a * e - b * d) / det];
  const t = [m[12]!, m[13]!, m[14]!];
  const tx = -(inv[0]! * t[0]! + inv[1]! * t[1]! + inv[2]! * t[2]!);
  const ty = -(inv[3]! * t[0]! + inv[4]! * t[1]! + inv[5]! * t[2]!);
  const tz = -(inv[6]! * t[0]! + inv[7]! * t[1]! + inv[8]! * t[2]!);
  return [inv[0]!, inv[3]!, inv[6]!, 0, inv[1]!, inv[4]!, inv[7]!, 0, inv[2]!, inv[5]!, inv[8]!, 0, tx, ty, tz, 1];
}

/** Quaternion [x, y, z, w] as FBX XYZ Euler degrees (matrix Rz·Ry·Rx). */
function quaternionToEuler(q: ArrayLike<number>): [number, number, number] {
  const [x, y, z, w] = [q[0]!, q[1]!, q[2]!, q[3]!];
  const rx = Math.atan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y));
  const ry = Math.asin(Math.max(-1, Math.min(1, 2 * (w * y - z * x))));
  const rz = Math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z));
  const degrees = 180 / Math.PI;
  return [rx * degrees, ry * degrees, rz * degrees];
}
