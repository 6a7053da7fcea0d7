/**
 * Format conversion: the model's chosen parts, limited to a face count, optionally flattened at
 * the bottom, turned to face an axis, scaled and moved to a pivot, with textures re-encoded,
 * written as GLTF (one .gltf with embedded data), USDZ, FBX (ASCII, textures embedded), OBJ (a
 * zip of the .obj, its .mtl and textures), STL (binary) or 3MF.
 */
import type { Document, Node, Texture } from '@gltf-transform/core';
import { EXTTextureWebP } from '@gltf-transform/extensions';
import { TaskRejectedError } from '../../spec.ts';
import { bakeVertexColors } from './bake-vertex-colors.ts';
import { encodeTexture, type EncodedTexture } from './encode-texture.ts';
import { faceCount, meshNodes, readArrays, sceneBounds, sceneOf, worldParts, worldSurface, writeArrays } from './mesh-common.ts';
import { smartLowpoly } from './smart-lowpoly.ts';
import { storedZip } from './stored-zip.ts';
import { write3mf } from './write-3mf.ts';
import { writeFbx } from './write-fbx.ts';
import { writeGltf } from './write-gltf.ts';
import { writeObj } from './write-obj.ts';
import { writeStl } from './write-stl.ts';
import { writeUsdz } from './write-usdz.ts';

export const CONVERT_FORMATS = ['GLTF', 'USDZ', 'FBX', 'OBJ', 'STL', '3MF'] as const;
export type ConvertFormat = (typeof CONVERT_FORMATS)[number];

export interface ConvertModelOptions {
  format: ConvertFormat;
  /** Quad-dominant output; GLTF and STL still store triangles. */
  quad: boolean;
  /** Triangles, or polygons when `quad` is on. */
  faceLimit: number;
  flattenBottom: boolean;
  /** Vertices this close to the lowest point (model units) are moved onto it. */
  flattenBottomThreshold: number;
  /** Largest texture side; smaller textures are kept as they are. */
  textureSize: number;
  /** PNG, JPEG, WEBP, TIFF, BMP or TARGA; null for the format's default (PNG for FBX, JPEG otherwise). */
  textureFormat: string | null;
  pivotToCenterBottom: boolean;
  scaleFactor: number;
  withAnimation: boolean;
  /** Root joints keep their horizontal place through the animations. */
  animateInPlace: boolean;
  /** Part (node) names to keep; all when empty. */
  parts: string[];
  /** Vertex colours sampled from the base colour (OBJ and GLTF). */
  exportVertexColors: boolean;
  /** Where the model's front (+Z) points: +x, -x, +y or -y. */
  orientation: string;
}

export const CONVERT_MODEL_DEFAULTS: Omit<ConvertModelOptions, 'format'> = {
  quad: false,
  faceLimit: 10000,
  flattenBottom: false,
  flattenBottomThreshold: 0.01,
  textureSize: 4096,
  textureFormat: null,
  pivotToCenterBottom: false,
  scaleFactor: 1,
  withAnimation: true,
  animateInPlace: false,
  parts: [],
  exportVertexColors: false,
  orientation: '+x',
};

export interface ConvertedModel {
  data: Buffer;
  extension: string;
  mimeType: string;
}

/** Texture formats each container can hold. */
const TEXTURE_FORMATS: Record<ConvertFormat, string[]> = {
  GLTF: ['JPEG', 'PNG', 'WEBP'],
  USDZ: ['JPEG', 'PNG'],
  '3MF': ['JPEG', 'PNG'],
  OBJ: ['JPEG', 'PNG', 'WEBP', 'TIFF', 'BMP', 'TARGA'],
  FBX: ['PNG', 'JPEG', 'TIFF', 'BMP', 'TARGA'],
  STL: [],
};

/** Rotation (quaternion) turning the front (+Z) towards each export_orientation. */
const ORIENTATIONS: Record<string, [number, number, number, number]> = {
  '+x': [0, Math.SQRT1_2, 0, Math.SQRT1_2],
  '-x': [0, -Math.SQRT1_2, 0, Math.SQRT1_2],
  '+y': [-Math.SQRT1_2, 0, 0, Math.SQRT1_2],
  '-y': [Math.SQRT1_2, 0, 0, Math.SQRT1_2],
};

/** Refuses (TaskRejectedError) a format, texture format or orientation the converter cannot honour. */
export function checkConvertOptions(options: { format: string; textureFormat?: string | null | undefined; orientation?: string | undefined }): void {
  const format = options.format as ConvertFormat;
  if (!CONVERT_FORMATS.includes(format)) throw new TaskRejectedError(`format must be one of ${CONVERT_FORMATS.join(', ')}`);
  if (options.orientation !== undefined && !ORIENTATIONS[options.orientation]) throw new TaskRejectedError(`export_orientation must be one of ${Object.keys(ORIENTATIONS).join(', ')}`);
  const textureFormat = options.textureFormat ?? (format === 'FBX' ? 'PNG' : 'JPEG');
  if (format !== 'STL' && !TEXTURE_FORMATS[format].includes(textureFormat)) {
    throw new TaskRejectedError(`${format} cannot hold ${textureFormat} textures; it takes ${TEXTURE_FORMATS[format].join(', ')}`);
  }
}

/** Converts the model; options left undefined take their defaults. */
export async function convertModel(doc: Document, options: { [K in keyof ConvertModelOptions]?: ConvertModelOptions[K] | undefined } & { format: ConvertFormat }): Promise<ConvertedModel> {
  const given = Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined));
  const opts = { ...CONVERT_MODEL_DEFAULTS, ...given } as ConvertModelOptions;
  checkConvertOptions(opts);
  const rotation = ORIENTATIONS[opts.orientation]!;
  const textureFormat = opts.textureFormat ?? (opts.format === 'FBX' ? 'PNG' : 'JPEG');
  if (opts.parts.length > 0) {
    for (const node of meshNodes(doc)) if (!opts.parts.includes(node.getName())) node.dispose();
  }
  if (!opts.withAnimation) for (const animation of doc.getRoot().listAnimations()) animation.dispose();
  if (opts.animateInPlace) keepInPlace(doc);
  if (opts.quad || faceCount(doc) > opts.faceLimit) smartLowpoly(doc, { faceLimit: opts.faceLimit, quad: opts.quad });
  if (opts.flattenBottom) flattenBottom(doc, opts.flattenBottomThreshold);
  if (opts.exportVertexColors) await bakeVertexColors(doc);
  placeModel(doc, rotation, opts.scaleFactor, opts.pivotToCenterBottom);

  const textures = new Map<Texture, EncodedTexture & { fileName: string }>();
  if (opts.format !== 'STL') {
    for (const [i, texture] of doc.getRoot().listTextures().entries()) {
      const image = texture.getImage();
      if (!image) continue;
      const encoded = await encodeTexture(Buffer.from(image), textureFormat, opts.textureSize);
      textures.set(texture, { ...encoded, fileName: `${(texture.getName() || `texture_${i}`).replace(/[^A-Za-z0-9_-]/g, '_')}.${encoded.extension}` });
    }
  }

  switch (opts.format) {
    case 'GLTF': {
      for (const [texture, file] of textures) texture.setImage(file.data).setMimeType(file.mimeType).setURI(file.fileName);
      if (textureFormat === 'WEBP' && textures.size > 0) doc.createExtension(EXTTextureWebP).setRequired(true);
      return { data: await writeGltf(doc), extension: 'gltf', mimeType: 'model/gltf+json' };
    }
    case 'FBX':
      return { data: writeFbx(doc, { textures, animations: opts.withAnimation }), extension: 'fbx', mimeType: 'application/octet-stream' };
    case 'USDZ':
      return { data: writeUsdz(worldParts(doc), { textures }), extension: 'usdz', mimeType: 'model/vnd.usdz+zip' };
    case 'OBJ': {
      const { obj, mtl } = writeObj(worldParts(doc), { textures, vertexColors: opts.exportVertexColors, mtlName: 'model.mtl' });
      const files = [{ name: 'model.obj', data: Buffer.from(obj) }, { name: 'model.mtl', data: Buffer.from(mtl) }, ...[...textures.values()].map((t) => ({ name: t.fileName, data: t.data }))];
      return { data: storedZip(files), extension: 'zip', mimeType: 'application/zip' };
    }
    case 'STL':
      return { data: writeStl(worldParts(doc)), extension: 'stl', mimeType: 'model/stl' };
    case '3MF':
      return { data: write3mf(worldParts(doc), { textures }), extension: '3mf', mimeType: 'model/3mf' };
  }
}

/** Translation keys of skeleton roots keep the first key's horizontal place. */
function keepInPlace(doc: Document): void {
  const roots = new Set(doc.getRoot().listSkins().flatMap((skin) => skin.listJoints().slice(0, 1)));
  for (const animation of doc.getRoot().listAnimations()) {
    for (const channel of animation.listChannels()) {
      const output = channel.getSampler()?.getOutput();
      const target = channel.getTargetNode();
      if (channel.getTargetPath() !== 'translation' || !target || !roots.has(target) || !output) continue;
      const values = Float32Array.from(output.getArray() as ArrayLike<number>);
      for (let i = 3; i < values.length; i += 3) [values[i], values[i + 2]] = [values[0]!, values[2]!];
      output.setArray(values);
    }
  }
}

/** Moves every vertex within `threshold` of the lowest point down onto it: a flat base. */
function flattenBottom(doc: Document, threshold: number): void {
  const { positions } = worldSurface(doc);
  let lowest = Infinity;
  for (let i = 1; i < positions.length; i += 3) lowest = Math.min(lowest, positions[i]!);
  for (const node of meshNodes(doc)) {
    for (const prim of node.getMesh()!.listPrimitives()) {
      const arrays = readArrays(prim);
      for (let i = 1; i < arrays.positions.length; i += 3) if (arrays.positions[i]! <= lowest + threshold) arrays.positions[i] = lowest;
      writeArrays(doc, prim, arrays);
    }
  }
}

/** Puts the scene under one node that turns, scales and (for the pivot) moves it; skeletons follow. */
function placeModel(doc: Document, rotation: [number, number, number, number], scale: number, pivotToCenterBottom: boolean): void {
  const scene = sceneOf(doc);
  const root: Node = doc.createNode('root').setRotation(rotation).setScale([scale, scale, scale]);
  for (const child of scene.listChildren()) root.addChild(child);
  scene.addChild(root);
  if (pivotToCenterBottom) {
    const { min, max } = sceneBounds(doc);
    root.setTranslation([-(min[0] + max[0]) / 2, -min[1], -(min[2] + max[2]) / 2]);
  }
}
