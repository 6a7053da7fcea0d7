/**
 * Builds a subject's geometry from a seed: a figure, a four-legged animal or an object, each made
 * of deformed superellipsoids laid out on box grids. The grids are quads, so the face count is
 * chosen exactly (≤ face_limit, close to it) and a quad topology is the geometry itself.
 */
import type { Document } from '@gltf-transform/core';
import { createMeshNode, joinArrays, seededRandom, sceneOf, smoothNormals, type MeshArrays, type Vec3 } from './mesh-common.ts';

export type SubjectKind = 'biped' | 'quadruped' | 'object';

/** A picture seen from `direction` that pushes the surface facing it out by its brightness. */
export interface ReliefView {
  /** From the subject towards the camera; the subject faces +Z and its own left is +X. */
  direction: Vec3;
  /** Brightness 0..1, `size` x `size`, rows top to bottom. */
  heights: Float32Array;
  size: number;
}

export interface GenerateModelOptions {
  seed: Buffer;
  subject: SubjectKind;
  /** Object shapes follow these words (box, ball, vase, rock...) before the seed's own choice. */
  words: string[];
  /** Triangles, or quads when `topology` is quad. */
  faceLimit: number;
  topology: 'triangle' | 'quad';
  /** One named node per part instead of one joined mesh. */
  separateParts: boolean;
  /** Finer surface detail (geometry_quality detailed). */
  detailed: boolean;
  relief: ReliefView[];
}

export const GENERATE_MODEL_DEFAULTS: Omit<GenerateModelOptions, 'seed'> = {
  subject: 'object',
  words: [],
  faceLimit: 20000,
  topology: 'triangle',
  separateParts: false,
  detailed: false,
  relief: [],
};

interface PartSpec {
  name: string;
  center: Vec3;
  radii: Vec3;
  /** Superellipsoid exponents: north-south, east-west (1 is round, small is boxy). */
  exponents: [number, number];
  /** Rotation about Z then X, radians. */
  roll?: number;
  pitch?: number;
  bumps: number;
}

const BIPED: PartSpec[] = [
  { name: 'head', center: [0, 0.885, 0], radii: [0.085, 0.1, 0.09], exponents: [1, 1], bumps: 0.03 },
  { name: 'torso', center: [0, 0.6, 0], radii: [0.15, 0.21, 0.09], exponents: [0.8, 0.8], bumps: 0.03 },
  { name: 'left_arm', center: [0.22, 0.58, 0], radii: [0.045, 0.21, 0.045], exponents: [0.9, 1], roll: 0.5, bumps: 0.02 },
  { name: 'right_arm', center: [-0.22, 0.58, 0], radii: [0.045, 0.21, 0.045], exponents: [0.9, 1], roll: -0.5, bumps: 0.02 },
  { name: 'left_leg', center: [0.085, 0.215, 0], radii: [0.055, 0.225, 0.06], exponents: [0.9, 1], bumps: 0.02 },
  { name: 'right_leg', center: [-0.085, 0.215, 0], radii: [0.055, 0.225, 0.06], exponents: [0.9, 1], bumps: 0.02 },
];

const QUADRUPED: PartSpec[] = [
  { name: 'body', center: [0, 0.5, 0], radii: [0.14, 0.13, 0.34], exponents: [0.9, 0.9], bumps: 0.03 },
  { name: 'head', center: [0, 0.68, 0.4], radii: [0.09, 0.09, 0.11], exponents: [1, 1], bumps: 0.03 },
  { name: 'tail', center: [0, 0.56, -0.36], radii: [0.025, 0.025, 0.12], exponents: [1, 1], pitch: 0.5, bumps: 0.01 },
  { name: 'front_left_leg', center: [0.09, 0.25, 0.22], radii: [0.045, 0.25, 0.05], exponents: [0.9, 1], bumps: 0.02 },
  { name: 'front_right_leg', center: [-0.09, 0.25, 0.22], radii: [0.045, 0.25, 0.05], exponents: [0.9, 1], bumps: 0.02 },
  { name: 'back_left_leg', center: [0.09, 0.25, -0.22], radii: [0.045, 0.25, 0.05], exponents: [0.9, 1], bumps: 0.02 },
  { name: 'back_right_leg', center: [-0.09, 0.25, -0.22], radii: [0.045, 0.25, 0.05], exponents: [0.9, 1], bumps: 0.02 },
];

/** Words that pin an object's exponents and roughness. */
const OBJECT_SHAPES: { words: string[]; exponents: [number, number]; bumps: number }[] = [
  { words: ['box', 'cube', 'crate', 'block', 'chest', 'house', 'building'], exponents: [0.25, 0.25], bumps: 0.02 },
  { words: ['ball', 'sphere', 'orb', 'planet', 'apple', 'egg'], exponents: [1, 1], bumps: 0.04 },
  { words: ['vase', 'bottle', 'cup', 'mug', 'can', 'barrel', 'tower', 'pillar', 'lamp'], exponents: [0.3, 1], bumps: 0.03 },
  { words: ['rock', 'stone', 'boulder', 'asteroid', 'mountain'], exponents: [0.9, 0.9], bumps: 0.2 },
  { words: ['gem', 'crystal', 'diamond'], exponents: [1.6, 1.6], bumps: 0.02 },
];

/** How the generated parts share the texture: part i owns tile i of `tileColumns` x `tileColumns`. */
export interface GeneratedLayout {
  parts: string[];
  tileColumns: number;
}

/** Adds the subject's mesh nodes to the document's scene (largest dimension 1, centred). */
export function generateModel(doc: Document, options: Partial<GenerateModelOptions> & { seed: Buffer }): GeneratedLayout {
  const opts = { ...GENERATE_MODEL_DEFAULTS, ...options };
  const random = seededRandom(opts.seed);
  const specs = partSpecs(opts, random);
  const quadBudget = opts.topology === 'quad' ? opts.faceLimit : Math.floor(opts.faceLimit / 2);
  const parts = fitParts(specs, quadBudget);
  const built = parts.map(({ spec, grid }, index) => buildPart(spec, grid, random, opts.detailed, tileOf(index, parts.length)));
  applyRelief(built, opts.relief);
  normalize(built);

  const scene = sceneOf(doc);
  const pieces = built.map((part) => {
    const arrays: MeshArrays = { positions: part.positions, indices: part.indices, uvs: part.uvs };
    arrays.normals = smoothNormals(arrays.positions, arrays.indices);
    return { name: part.name, arrays };
  });
  const nodes = opts.separateParts ? pieces : [{ name: 'model', arrays: joinArrays(pieces.map((p) => p.arrays)) }];
  for (const { name, arrays } of nodes) {
    const node = createMeshNode(doc, name, [{ arrays, material: null }]);
    // In quad topology every grid cell is a quad: its two triangles are consecutive.
    if (opts.topology === 'quad') node.getMesh()!.listPrimitives()[0]!.setExtras({ topology: 'quad', quad_count: arrays.indices.length / 6 });
    scene.addChild(node);
  }
  return { parts: built.map((part) => part.name), tileColumns: Math.ceil(Math.sqrt(built.length)) };
}

function partSpecs(opts: GenerateModelOptions, random: () => number): PartSpec[] {
  const jitter = (v: number, amount: number) => v * (1 + (random() * 2 - 1) * amount);
  if (opts.subject !== 'object') {
    const template = opts.subject === 'biped' ? BIPED : QUADRUPED;
    const scale: Vec3 = [jitter(1, 0.08), jitter(1, 0.05), jitter(1, 0.08)];
    return template.map((spec) => ({
      ...spec,
      center: [spec.center[0] * scale[0], spec.center[1] * scale[1], spec.center[2] * scale[2]],
      radii: [jitter(spec.radii[0] * scale[0], 0.1), jitter(spec.radii[1] * scale[1], 0.05), jitter(spec.radii[2] * scale[2], 0.1)],
    }));
  }
  const shape = OBJECT_SHAPES.find((s) => s.words.some((w) => opts.words.includes(w)));
  const exponents: [number, number] = shape?.exponents ?? [0.3 + random() * 1.1, 0.3 + random() * 1.1];
  const radii: Vec3 = [0.3 + random() * 0.2, 0.3 + random() * 0.25, 0.3 + random() * 0.2];
  const specs: PartSpec[] = [{ name: 'body', center: [0, 0, 0], radii, exponents, bumps: shape?.bumps ?? 0.05 + random() * 0.12 }];
  const extras = random();
  if (extras < 0.4) {
    specs.push({ name: 'base', center: [0, -radii[1] * 0.95, 0], radii: [radii[0] * 0.9, 0.05, radii[2] * 0.9], exponents: [0.3, 1], bumps: 0.01 });
  } else if (extras < 0.7) {
    const r = 0.1 + random() * 0.08;
    specs.push({ name: 'top', center: [0, radii[1] + r * 0.6, 0], radii: [r, r, r], exponents: [1, 1], bumps: 0.04 });
  }
  return specs;
}

type Grid = [number, number, number];

/** Quads of a box grid: two per cell on each of the six faces. */
const gridQuads = ([a, b, c]: Grid) => 2 * (a * b + b * c + c * a);

/** Spreads the quad budget over the parts by surface area; the smallest parts go when it cannot cover them all. */
function fitParts(specs: PartSpec[], budget: number): { spec: PartSpec; grid: Grid }[] {
  const area = (r: Vec3) => r[0] * r[1] + r[1] * r[2] + r[2] * r[0];
  let kept = [...specs];
  for (;;) {
    const total = kept.reduce((sum, s) => sum + area(s.radii), 0);
    const fitted = kept.map((spec) => ({ spec, grid: gridFor(Math.max(6, Math.floor((budget * area(spec.radii)) / total)), spec.radii) }));
    // The rounding leftovers go to the largest part so the total lands close to the budget.
    const largest = fitted.reduce((max, p) => (area(p.spec.radii) > area(max.spec.radii) ? p : max));
    const others = fitted.reduce((sum, p) => sum + (p === largest ? 0 : gridQuads(p.grid)), 0);
    largest.grid = gridFor(Math.max(6, budget - others), largest.spec.radii);
    if (others + gridQuads(largest.grid) <= budget || kept.length === 1) return fitted;
    const smallest = kept.reduce((min, s) => (area(s.radii) < area(min.radii) ? s : min));
    kept = kept.filter((s) => s !== smallest);
  }
}

/** Box grid cells along x, y, z proportional to the radii, with as many quads as fit in `budget`. */
function gridFor(budget: number, radii: Vec3): Grid {
  const s = radii[0] * radii[1] + radii[1] * radii[2] + radii[2] * radii[0];
  const k = Math.sqrt(budget / (2 * s));
  const grid: Grid = [Math.max(1, Math.floor(k * radii[0])), Math.max(1, Math.floor(k * radii[1])), Math.max(1, Math.floor(k * radii[2]))];
  for (;;) {
    // Grow the axis with the coarsest cells that still fits.
    const order = [0, 1, 2].sort((i, j) => grid[i]! / radii[i]! - grid[j]! / radii[j]!);
    const axis = order.find((i) => {
      const next: Grid = [...grid];
      next[i]++;
      return gridQuads(next) <= budget;
    });
    if (axis === undefined) return grid;
    grid[axis]++;
  }
}

/** Where a part's six faces go in the shared texture: a square tile of a near-square layout. */
function tileOf(index: number, count: number): { u: number; v: number; size: number } {
  // Kept in step with GeneratedLayout.tileColumns.
  const columns = Math.ceil(Math.sqrt(count));
  const size = 1 / columns;
  return { u: (index % columns) * size, v: Math.floor(index / columns) * size, size };
}

interface BuiltPart {
  name: string;
  positions: Float32Array;
  indices: Uint32Array;
  uvs: Float32Array;
  /** Unit direction from the part centre per vertex, for relief displacement. */
  radial: Float32Array;
}

/** The six faces of the unit cube as origin and axes u, v with u x v pointing outwards. */
const CUBE_FACES: { origin: Vec3; u: Vec3; v: Vec3; axes: [0 | 1 | 2, 0 | 1 | 2] }[] = [
  { origin: [1, -1, 1], u: [0, 0, -1], v: [0, 1, 0], axes: [2, 1] },
  { origin: [-1, -1, -1], u: [0, 0, 1], v: [0, 1, 0], axes: [2, 1] },
  { origin: [-1, 1, 1], u: [1, 0, 0], v: [0, 0, -1], axes: [0, 2] },
  { origin: [-1, -1, -1], u: [1, 0, 0], v: [0, 0, 1], axes: [0, 2] },
  { origin: [-1, -1, 1], u: [1, 0, 0], v: [0, 1, 0], axes: [0, 1] },
  { origin: [1, -1, -1], u: [-1, 0, 0], v: [0, 1, 0], axes: [0, 1] },
];

function buildPart(spec: PartSpec, grid: Grid, random: () => number, detailed: boolean, tile: { u: number; v: number; size: number }): BuiltPart {
  const bumps = Array.from({ length: 6 }, () => {
    const d = randomDirection(random);
    return { d, amplitude: (random() * 2 - 1) * spec.bumps * 4, width: 0.05 + random() * 0.25 };
  });
  const ripples = detailed ? Array.from({ length: 4 }, () => ({ d: randomDirection(random), frequency: 12 + random() * 20, phase: random() * 6.28 })) : [];
  const displacement = (d: Vec3): number => {
    let sum = 0;
    for (const b of bumps) sum += b.amplitude * Math.exp((d[0] * b.d[0] + d[1] * b.d[1] + d[2] * b.d[2] - 1) / b.width);
    for (const r of ripples) sum += 0.006 * Math.sin(r.frequency * (d[0] * r.d[0] + d[1] * r.d[1] + d[2] * r.d[2]) + r.phase);
    return sum;
  };
  const [e1, e2] = spec.exponents;
  const cosR = Math.cos(spec.roll ?? 0), sinR = Math.sin(spec.roll ?? 0);
  const cosP = Math.cos(spec.pitch ?? 0), sinP = Math.sin(spec.pitch ?? 0);
  const rotated = Boolean(spec.roll || spec.pitch);

  const vertexCount = CUBE_FACES.reduce((sum, f) => sum + (grid[f.axes[0]] + 1) * (grid[f.axes[1]] + 1), 0);
  const positions = new Float32Array(vertexCount * 3);
  const radial = new Float32Array(vertexCount * 3);
  const uvs = new Float32Array(vertexCount * 2);
  const indices = new Uint32Array(gridQuads(grid) * 6);
  let vertex = 0, index = 0;
  CUBE_FACES.forEach((face, faceIndex) => {
    const nu = grid[face.axes[0]], nv = grid[face.axes[1]];
    const first = vertex;
    // Faces sit in a 3 x 2 layout inside the part's tile.
    const cellU = tile.u + ((faceIndex % 3) / 3) * tile.size, cellV = tile.v + (Math.floor(faceIndex / 3) / 2) * tile.size;
    for (let j = 0; j <= nv; j++) {
      for (let i = 0; i <= nu; i++) {
        const fu = (2 * i) / nu, fv = (2 * j) / nv;
        const d = spherify(face.origin[0] + face.u[0] * fu + face.v[0] * fv, face.origin[1] + face.u[1] * fu + face.v[1] * fv, face.origin[2] + face.u[2] * fu + face.v[2] * fv);
        const r = superellipsoidRadius(d, e1, e2) * (1 + displacement(d));
        let x = d[0] * r * spec.radii[0], y = d[1] * r * spec.radii[1], z = d[2] * r * spec.radii[2];
        let rx = d[0], ry = d[1], rz = d[2];
        if (rotated) {
          [x, y] = [x * cosR - y * sinR, x * sinR + y * cosR];
          [y, z] = [y * cosP - z * sinP, y * sinP + z * cosP];
          [rx, ry] = [rx * cosR - ry * sinR, rx * sinR + ry * cosR];
          [ry, rz] = [ry * cosP - rz * sinP, ry * sinP + rz * cosP];
        }
        positions[vertex * 3] = x + spec.center[0];
        positions[vertex * 3 + 1] = y + spec.center[1];
        positions[vertex * 3 + 2] = z + spec.center[2];
        radial[vertex * 3] = rx;
        radial[vertex * 3 + 1] = ry;
        radial[vertex * 3 + 2] = rz;
        uvs[vertex * 2] = cellU + (i / nu) * (tile.size / 3) * 0.96 + tile.size * 0.006;
        uvs[vertex * 2 + 1] = cellV + (1 - j / nv) * (tile.size / 2) * 0.96 + tile.size * 0.01;
        vertex++;
      }
    }
    for (let j = 0; j < nv; j++) {
      for (let i = 0; i < nu; i++) {
        const a = first + j * (nu + 1) + i, b = a + 1, c = b + nu + 1, d = a + nu + 1;
        indices[index++] = a;
        indices[index++] = b;
        indices[index++] = c;
        indices[index++] = a;
        indices[index++] = c;
        indices[index++] = d;
      }
    }
  });
  return { name: spec.name, positions, indices, uvs, radial };
}

function randomDirection(random: () => number): Vec3 {
  const z = random() * 2 - 1, angle = random() * Math.PI * 2, r = Math.sqrt(1 - z * z);
  return [r * Math.cos(angle), z, r * Math.sin(angle)];
}

/** A point of the cube's surface onto the unit sphere, evenly (the "spherified cube" map). */
function spherify(x: number, y: number, z: number): Vec3 {
  const x2 = x * x, y2 = y * y, z2 = z * z;
  return [x * Math.sqrt(1 - y2 / 2 - z2 / 2 + (y2 * z2) / 3), y * Math.sqrt(1 - z2 / 2 - x2 / 2 + (z2 * x2) / 3), z * Math.sqrt(1 - x2 / 2 - y2 / 2 + (x2 * y2) / 3)];
}

/** How far the superellipsoid's surface lies in unit direction `d`. */
function superellipsoidRadius(d: Vec3, e1: number, e2: number): number {
  const f = Math.pow(Math.pow(Math.abs(d[0]), 2 / e2) + Math.pow(Math.abs(d[2]), 2 / e2), e2 / e1) + Math.pow(Math.abs(d[1]), 2 / e1);
  return f > 0 ? Math.pow(f, -e1 / 2) : 1;
}

/** Pushes surfaces facing each view out by the view's brightness at their projection. */
function applyRelief(parts: BuiltPart[], views: ReliefView[]): void {
  if (views.length === 0) return;
  const { min, max } = boundsOfParts(parts);
  const extent = Math.max(max[0] - min[0], max[1] - min[1], max[2] - min[2]);
  const center = [0, 1, 2].map((k) => (min[k]! + max[k]!) / 2);
  for (const view of views) {
    const w = view.direction;
    const up: Vec3 = Math.abs(w[1]) > 0.9 ? [0, 0, -Math.sign(w[1])] : [0, 1, 0];
    const right: Vec3 = [up[1] * w[2] - up[2] * w[1], up[2] * w[0] - up[0] * w[2], up[0] * w[1] - up[1] * w[0]];
    for (const part of parts) {
      for (let v = 0; v < part.positions.length / 3; v++) {
        const r = [part.radial[v * 3]!, part.radial[v * 3 + 1]!, part.radial[v * 3 + 2]!];
        const facing = r[0]! * w[0] + r[1]! * w[1] + r[2]! * w[2];
        if (facing <= 0) continue;
        const p = [0, 1, 2].map((k) => part.positions[v * 3 + k]! - center[k]!);
        const s = 0.5 + (p[0]! * right[0] + p[1]! * right[1] + p[2]! * right[2]) / extent;
        const t = 0.5 - (p[0]! * up[0] + p[1]! * up[1] + p[2]! * up[2]) / extent;
        const px = Math.min(view.size - 1, Math.max(0, Math.floor(s * view.size)));
        const py = Math.min(view.size - 1, Math.max(0, Math.floor(t * view.size)));
        const push = 0.08 * extent * view.heights[py * view.size + px]! * facing * facing;
        for (let k = 0; k < 3; k++) part.positions[v * 3 + k]! += r[k]! * push;
      }
    }
  }
}

function boundsOfParts(parts: BuiltPart[]): { min: Vec3; max: Vec3 } {
  const min: Vec3 = [Infinity, Infinity, Infinity], max: Vec3 = [-Infinity, -Infinity, -Infinity];
  for (const part of parts) {
    for (let i = 0; i < part.positions.length; i++) {
      const k = i % 3;
      min[k] = Math.min(min[k], part.positions[i]!);
      max[k] = Math.max(max[k], part.positions[i]!);
    }
  }
  return { min, max };
}

/** Centres the subject on the origin with its largest dimension 1. */
function normalize(parts: BuiltPart[]): void {
  const { min, max } = boundsOfParts(parts);
  const scale = 1 / Math.max(max[0] - min[0], max[1] - min[1], max[2] - min[2]);
  for (const part of parts) {
    for (let i = 0; i < part.positions.length; i++) {
      const k = i % 3;
      part.positions[i] = (part.positions[i]! - (min[k]! + max[k]!) / 2) * scale;
    }
  }
}
