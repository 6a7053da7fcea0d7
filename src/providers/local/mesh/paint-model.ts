/**
 * Materials and textures: a base-colour texture painted from a palette (or projected from
 * pictures of the subject), and for PBR a metallic-roughness texture.
 */
import type { Document, Material, Texture } from '@gltf-transform/core';
import sharp from 'sharp';
import { meshNodes, readArrays, sceneBounds, seededRandom, writeArrays, type MeshArrays, type Vec3 } from './mesh-common.ts';

/** A picture of the subject taken from `direction` (subject faces +Z, its own left is +X). */
export interface ViewPicture {
  direction: Vec3;
  /** PNG or JPEG bytes. */
  image: Buffer;
}

export interface PaintModelOptions {
  seed: Buffer;
  /** RGB 0..1; the first colour dominates. */
  palette: Vec3[];
  /** Paint a base-colour texture (otherwise a plain colour per part, or keep the current base colour when `pbr` is on). */
  texture: boolean;
  /** Add a metallic-roughness texture. */
  pbr: boolean;
  /** Texture side in pixels. */
  size: number;
  metallic: number;
  roughness: number;
  /** The UV space is split into this many columns of tiles, one palette colour each (one per generated part). */
  tileColumns: number;
  /** Pictures projected onto the surface instead of the palette pattern. */
  views: ViewPicture[];
  /** Only these parts (node names); all when empty. */
  parts: string[];
}

export const PAINT_MODEL_DEFAULTS: Omit<PaintModelOptions, 'seed'> = {
  palette: [[0.7, 0.7, 0.7]],
  texture: true,
  pbr: false,
  size: 1024,
  metallic: 0,
  roughness: 0.7,
  tileColumns: 1,
  views: [],
  parts: [],
};

/** Six axis views: a box projection for surfaces without usable UVs. */
const AXIS_VIEWS: Vec3[] = [[0, 0, 1], [1, 0, 0], [0, 0, -1], [-1, 0, 0], [0, 1, 0], [0, -1, 0]];

/** Sets the materials of the chosen parts; projects UVs when pictures drive the texture or UVs are missing. */
export async function paintModel(doc: Document, options: Partial<PaintModelOptions> & { seed: Buffer }): Promise<Document> {
  const opts = { ...PAINT_MODEL_DEFAULTS, ...options };
  const nodes = meshNodes(doc).filter((node) => opts.parts.length === 0 || opts.parts.includes(node.getName()));
  const prims = nodes.flatMap((node) => node.getMesh()!.listPrimitives());
  const random = seededRandom(opts.seed);

  let baseColor: Texture | null = null;
  if (opts.texture) {
    const projection = opts.views.length > 0 ? opts.views.map((v) => v.direction) : prims.some((p) => !p.getAttribute('TEXCOORD_0')) ? AXIS_VIEWS : null;
    if (projection) {
      const bounds = sceneBounds(doc);
      for (const prim of prims) writeArrays(doc, prim, projectViews(readArrays(prim), projection, bounds));
    }
    const pixels = opts.views.length > 0 ? await viewAtlas(opts.views, opts.size) : palettePattern(opts, random);
    const png = await sharp(pixels, { raw: { width: opts.size, height: opts.size, channels: 3 } }).png().toBuffer();
    baseColor = doc.createTexture('base_color').setImage(png).setMimeType('image/png').setURI('base_color.png');
  }
  let metalRough: Texture | null = null;
  if (opts.pbr) {
    const side = Math.max(64, opts.size / 2);
    const png = await sharp(metalRoughPattern(opts, side, random), { raw: { width: side, height: side, channels: 3 } }).png().toBuffer();
    metalRough = doc.createTexture('metallic_roughness').setImage(png).setMimeType('image/png').setURI('metallic_roughness.png');
  }

  // A painted texture is one material for all parts; plain colours and kept colours go per part.
  const shared = baseColor ? finish(doc.createMaterial('surface').setBaseColorTexture(baseColor).setBaseColorFactor([1, 1, 1, 1])) : null;
  function finish(material: Material): Material {
    if (metalRough) return material.setMetallicRoughnessTexture(metalRough).setMetallicFactor(1).setRoughnessFactor(1);
    return material.setMetallicFactor(opts.metallic).setRoughnessFactor(opts.roughness);
  }
  nodes.forEach((node, index) => {
    for (const prim of node.getMesh()!.listPrimitives()) {
      const previous = prim.getMaterial();
      let material = shared;
      if (!material && (opts.texture || !previous)) {
        const [r, g, b] = opts.palette[index % opts.palette.length]!;
        material = finish(doc.createMaterial(nodes.length === 1 ? 'surface' : `${node.getName()}_surface`).setBaseColorFactor([r, g, b, 1]));
      } else if (!material) {
        // PBR maps added to a model keep its existing colour.
        material = finish(doc.createMaterial(previous!.getName() || 'surface').setBaseColorFactor(previous!.getBaseColorFactor()).setBaseColorTexture(previous!.getBaseColorTexture()));
      }
      prim.setMaterial(material);
    }
  });
  return doc;
}

/**
 * Gives every triangle its own corners with UVs projected from the view it faces most; view k's
 * picture occupies tile k of a square layout.
 */
function projectViews(arrays: MeshArrays, directions: Vec3[], bounds: { min: Vec3; max: Vec3 }): MeshArrays {
  const { positions, indices } = arrays;
  const columns = Math.ceil(Math.sqrt(directions.length));
  const tile = 1 / columns;
  const extent = Math.max(...[0, 1, 2].map((k) => bounds.max[k]! - bounds.min[k]!)) || 1;
  const center = [0, 1, 2].map((k) => (bounds.min[k]! + bounds.max[k]!) / 2);
  const frames = directions.map((w) => {
    const up: Vec3 = Math.abs(w[1]) > 0.9 ? [0, 0, -Math.sign(w[1])] : [0, 1, 0];
    const right: Vec3 = [up[1] * w[2] - up[2] * w[1], up[2] * w[0] - up[0] * w[2], up[0] * w[1] - up[1] * w[0]];
    return { w, up, right };
  });
  const corners = indices.length;
  const out: MeshArrays = { positions: new Float32Array(corners * 3), indices: Uint32Array.from({ length: corners }, (_, i) => i), uvs: new Float32Array(corners * 2) };
  if (arrays.normals) out.normals = new Float32Array(corners * 3);
  if (arrays.colors) out.colors = new Float32Array(corners * 3);
  if (arrays.joints) out.joints = new Uint16Array(corners * 4);
  if (arrays.weights) out.weights = new Float32Array(corners * 4);
  for (let t = 0; t < corners; t += 3) {
    const [a, b, c] = [indices[t]!, indices[t + 1]!, indices[t + 2]!];
    const p = (v: number, k: number) => positions[v * 3 + k]!;
    const u = [p(b, 0) - p(a, 0), p(b, 1) - p(a, 1), p(b, 2) - p(a, 2)];
    const v = [p(c, 0) - p(a, 0), p(c, 1) - p(a, 1), p(c, 2) - p(a, 2)];
    const n = [u[1]! * v[2]! - u[2]! * v[1]!, u[2]! * v[0]! - u[0]! * v[2]!, u[0]! * v[1]! - u[1]! * v[0]!];
    let best = 0, bestDot = -Infinity;
    frames.forEach(({ w }, k) => {
      const dot = n[0]! * w[0] + n[1]! * w[1] + n[2]! * w[2];
      if (dot > bestDot) [best, bestDot] = [k, dot];
    });
    const { up, right } = frames[best]!;
    const tileU = (best % columns) * tile, tileV = Math.floor(best / columns) * tile;
    for (let k = 0; k < 3; k++) {
      const src = indices[t + k]!, dst = t + k;
      const q = [0, 1, 2].map((i) => positions[src * 3 + i]! - center[i]!);
      const s = Math.min(1, Math.max(0, 0.5 + (q[0]! * right[0] + q[1]! * right[1] + q[2]! * right[2]) / extent));
      const r = Math.min(1, Math.max(0, 0.5 - (q[0]! * up[0] + q[1]! * up[1] + q[2]! * up[2]) / extent));
      out.positions.set(positions.subarray(src * 3, src * 3 + 3), dst * 3);
      out.uvs!.set([tileU + s * tile, tileV + r * tile], dst * 2);
      out.normals?.set(arrays.normals!.subarray(src * 3, src * 3 + 3), dst * 3);
      out.colors?.set(arrays.colors!.subarray(src * 3, src * 3 + 3), dst * 3);
      out.joints?.set(arrays.joints!.subarray(src * 4, src * 4 + 4), dst * 4);
      out.weights?.set(arrays.weights!.subarray(src * 4, src * 4 + 4), dst * 4);
    }
  }
  return out;
}

/** The pictures side by side in the tile layout projectViews uses, as raw RGB. */
async function viewAtlas(views: ViewPicture[], size: number): Promise<Buffer> {
  const columns = Math.ceil(Math.sqrt(views.length));
  const tile = Math.floor(size / columns);
  const composites = await Promise.all(
    views.map(async (view, k) => ({
      input: await sharp(view.image).removeAlpha().resize(tile, tile, { fit: 'fill' }).png().toBuffer(),
      left: (k % columns) * tile,
      top: Math.floor(k / columns) * tile,
    })),
  );
  return sharp({ create: { width: size, height: size, channels: 3, background: { r: 128, g: 128, b: 128 } } }).composite(composites).removeAlpha().raw().toBuffer();
}

/** Smooth lattice noise in [0, 1] with a seeded lattice. */
function valueNoise(random: () => number): (x: number, y: number) => number {
  const lattice = Float32Array.from({ length: 256 }, () => random());
  const at = (i: number, j: number) => lattice[((i & 255) * 31 + (j & 255) * 17 + ((i * j) & 255)) & 255]!;
  return (x, y) => {
    const i = Math.floor(x), j = Math.floor(y);
    const fx = x - i, fy = y - j;
    const sx = fx * fx * (3 - 2 * fx), sy = fy * fy * (3 - 2 * fy);
    const top = at(i, j) + (at(i + 1, j) - at(i, j)) * sx;
    const bottom = at(i, j + 1) + (at(i + 1, j + 1) - at(i, j + 1)) * sx;
    return top + (bottom - top) * sy;
  };
}

/** A base-colour pattern: a palette colour per tile, patches of the second colour, fine grain. */
function palettePattern(opts: PaintModelOptions, random: () => number): Buffer {
  const { size, palette, tileColumns } = opts;
  const noise = valueNoise(random);
  const style = Math.floor(random() * 3);
  const pixels = Buffer.alloc(size * size * 3);
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const u = x / size, v = y / size;
      const tile = Math.floor(v * tileColumns) * tileColumns + Math.floor(u * tileColumns);
      let color = palette[tile % palette.length]!;
      const patch = noise(u * 6, v * 6);
      if (tileColumns === 1 && palette.length > 1) {
        if (style === 1 && Math.sin(v * 40 + patch * 4) > 0.6) color = palette[1]!;
        else if (style === 2 && patch > 0.68) color = palette[1]!;
      }
      const grain = 0.82 + 0.18 * noise(u * 96, v * 96);
      const o = (y * size + x) * 3;
      pixels[o] = Math.round(255 * Math.min(1, color[0] * grain));
      pixels[o + 1] = Math.round(255 * Math.min(1, color[1] * grain));
      pixels[o + 2] = Math.round(255 * Math.min(1, color[2] * grain));
    }
  }
  return pixels;
}

/** glTF metallic-roughness channels: G roughness, B metallic (R unused, white). */
function metalRoughPattern(opts: PaintModelOptions, side: number, random: () => number): Buffer {
  const noise = valueNoise(random);
  const pixels = Buffer.alloc(side * side * 3);
  for (let y = 0; y < side; y++) {
    for (let x = 0; x < side; x++) {
      const wear = noise((x / side) * 24, (y / side) * 24) - 0.5;
      const o = (y * side + x) * 3;
      pixels[o] = 255;
      pixels[o + 1] = Math.round(255 * Math.min(1, Math.max(0.04, opts.roughness + wear * 0.3)));
      pixels[o + 2] = Math.round(255 * Math.min(1, Math.max(0, opts.metallic + wear * 0.1)));
    }
  }
  return pixels;
}
