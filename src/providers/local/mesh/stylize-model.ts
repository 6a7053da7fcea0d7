/**
 * Stylization: voxel (the model as a solid of cubes on a grid), brick (coarser cubes in brick
 * colours with a stud on every top face), blockgame (cubes of block size in block colours; the
 * handler also writes the schematic) and voronoi (cells over the surface, grooved along their
 * borders and tinted one by one).
 */
import type { Document } from '@gltf-transform/core';
import { bakeVertexColors } from './bake-vertex-colors.ts';
import { createMeshNode, faceCount, joinArrays, meshNodes, nearestColor, positionRemap, readArrays, sceneOf, seededRandom, smoothNormals, subdivide, worldParts, writeArrays, type MeshArrays, type Vec3 } from './mesh-common.ts';
import { voxelize, type VoxelGrid } from './voxelize.ts';
import { BLOCK_COLORS } from './write-schematic.ts';

export const STYLES = ['brick', 'voxel', 'voronoi', 'blockgame'] as const;
export type Style = (typeof STYLES)[number];

export interface StylizeModelOptions {
  style: Style;
  /** Cells along the largest side (voxel, brick, blockgame). */
  resolution: number;
  /** Voronoi cells over the surface. */
  cells: number;
  seed: Buffer;
}

export const STYLIZE_MODEL_DEFAULTS: Omit<StylizeModelOptions, 'style' | 'seed'> = { resolution: 40, cells: 48 };

/** Classic brick colours. */
const BRICK_COLORS: Vec3[] = [
  [0.95, 0.95, 0.95], [0.05, 0.05, 0.05], [0.7, 0.05, 0.05], [0.05, 0.35, 0.7], [0.98, 0.78, 0.05], [0.1, 0.5, 0.2],
  [0.55, 0.55, 0.55], [0.35, 0.2, 0.1], [0.9, 0.45, 0.1], [0.6, 0.75, 0.9], [0.85, 0.75, 0.55], [0.55, 0.3, 0.6],
];

/** Restyles the model in place; returns the voxel grid for the grid styles. */
export async function stylizeModel(doc: Document, options: Partial<StylizeModelOptions> & { style: Style; seed: Buffer }): Promise<VoxelGrid | null> {
  const opts = { ...STYLIZE_MODEL_DEFAULTS, ...options };
  await bakeVertexColors(doc);
  if (opts.style === 'voronoi') {
    voronoi(doc, opts);
    return null;
  }
  const parts = worldParts(doc);
  const surface = joinArrays(parts.map((p) => ({ positions: p.arrays.positions, indices: p.arrays.indices, colors: p.arrays.colors })));
  const grid = voxelize(surface, { resolution: opts.resolution });
  const palette = opts.style === 'brick' ? BRICK_COLORS : opts.style === 'blockgame' ? BLOCK_COLORS : null;
  if (palette) {
    for (let i = 0; i < grid.filled.length; i++) {
      if (!grid.filled[i]) continue;
      const [r, g, b] = [grid.colors[i * 3]!, grid.colors[i * 3 + 1]!, grid.colors[i * 3 + 2]!];
      grid.colors.set(palette[nearestColor(palette, r, g, b)]!, i * 3);
    }
  }
  const cubes = cubeMesh(grid, opts.style === 'brick');
  replaceMeshes(doc, 'voxels', cubes.arrays, cubes.quads);
  return grid;
}

/** Drops the model's meshes, skins and animations and adds one node with `arrays` (its first `quads` triangle pairs quads), coloured per vertex. */
function replaceMeshes(doc: Document, name: string, arrays: MeshArrays, quads: number): void {
  const root = doc.getRoot();
  for (const animation of root.listAnimations()) animation.dispose();
  for (const skin of root.listSkins()) {
    for (const joint of skin.listJoints()) joint.dispose();
    skin.dispose();
  }
  for (const node of meshNodes(doc)) {
    node.getMesh()!.dispose();
    node.dispose();
  }
  const material = doc.createMaterial(name).setBaseColorFactor([1, 1, 1, 1]).setMetallicFactor(0).setRoughnessFactor(0.8);
  const node = createMeshNode(doc, name, [{ arrays, material }]);
  node.getMesh()!.listPrimitives()[0]!.setExtras({ topology: 'quad', quad_count: quads });
  sceneOf(doc).addChild(node);
}

/** The outer faces of the filled cells (corners exactly on the grid), plus studs on top faces for bricks. */
function cubeMesh(grid: VoxelGrid, studs: boolean): { arrays: MeshArrays; quads: number } {
  const [sx, sy, sz] = grid.size;
  const positions: number[] = [], normals: number[] = [], colors: number[] = [], indices: number[] = [];
  const filled = (x: number, y: number, z: number) => x >= 0 && y >= 0 && z >= 0 && x < sx && y < sy && z < sz && grid.filled[x + y * sx + z * sx * sy] === 1;
  const corner = (x: number, y: number, z: number): Vec3 => [grid.origin[0] + x * grid.cell, grid.origin[1] + y * grid.cell, grid.origin[2] + z * grid.cell];
  const faces: { n: Vec3; u: Vec3; v: Vec3; base: Vec3 }[] = [
    { n: [1, 0, 0], u: [0, 1, 0], v: [0, 0, 1], base: [1, 0, 0] },
    { n: [-1, 0, 0], u: [0, 0, 1], v: [0, 1, 0], base: [0, 0, 0] },
    { n: [0, 1, 0], u: [0, 0, 1], v: [1, 0, 0], base: [0, 1, 0] },
    { n: [0, -1, 0], u: [1, 0, 0], v: [0, 0, 1], base: [0, 0, 0] },
    { n: [0, 0, 1], u: [1, 0, 0], v: [0, 1, 0], base: [0, 0, 1] },
    { n: [0, 0, -1], u: [0, 1, 0], v: [1, 0, 0], base: [0, 0, 0] },
  ];
  const vertex = (p: Vec3, n: Vec3, c: ArrayLike<number>) => {
    positions.push(...p);
    normals.push(...n);
    colors.push(c[0]!, c[1]!, c[2]!);
    return positions.length / 3 - 1;
  };
  let quads = 0;
  const studSides: number[] = [];
  for (let z = 0; z < sz; z++) {
    for (let y = 0; y < sy; y++) {
      for (let x = 0; x < sx; x++) {
        if (!filled(x, y, z)) continue;
        const color = grid.colors.subarray((x + y * sx + z * sx * sy) * 3, (x + y * sx + z * sx * sy) * 3 + 3);
        for (const { n, u, v, base } of faces) {
          if (filled(x + n[0], y + n[1], z + n[2])) continue;
          const b: Vec3 = [x + base[0], y + base[1], z + base[2]];
          const c = [b, [b[0] + u[0], b[1] + u[1], b[2] + u[2]], [b[0] + u[0] + v[0], b[1] + u[1] + v[1], b[2] + u[2] + v[2]], [b[0] + v[0], b[1] + v[1], b[2] + v[2]]].map(([i, j, k]) => vertex(corner(i!, j!, k!), n, color));
          indices.push(c[0]!, c[1]!, c[2]!, c[0]!, c[2]!, c[3]!);
          quads++;
          if (studs && n[1] === 1) studSides.push(x, y, z);
        }
      }
    }
  }
  // Studs come after the cube faces so the quad pairs stay first.
  for (let i = 0; i < studSides.length; i += 3) {
    const [x, y, z] = [studSides[i]!, studSides[i + 1]!, studSides[i + 2]!];
    const color = grid.colors.subarray((x + y * sx + z * sx * sy) * 3, (x + y * sx + z * sx * sy) * 3 + 3);
    addStud(corner(x + 0.5, y + 1, z + 0.5), grid.cell, color, vertex, indices);
  }
  return {
    arrays: { positions: Float32Array.from(positions), normals: Float32Array.from(normals), colors: Float32Array.from(colors), indices: Uint32Array.from(indices) },
    quads,
  };
}

/** A short eight-sided cylinder standing on a top face. */
function addStud(center: Vec3, cell: number, color: ArrayLike<number>, vertex: (p: Vec3, n: Vec3, c: ArrayLike<number>) => number, indices: number[]): void {
  const radius = cell * 0.3, height = cell * 0.18, sides = 8;
  const ring = (i: number): [number, number] => [Math.cos((2 * Math.PI * i) / sides), Math.sin((2 * Math.PI * i) / sides)];
  for (let i = 0; i < sides; i++) {
    const [c0, s0] = ring(i), [c1, s1] = ring(i + 1), [cm, sm] = ring(i + 0.5);
    const n: Vec3 = [cm, 0, sm];
    const a = vertex([center[0] + c0 * radius, center[1], center[2] + s0 * radius], n, color);
    const b = vertex([center[0] + c1 * radius, center[1], center[2] + s1 * radius], n, color);
    const c = vertex([center[0] + c1 * radius, center[1] + height, center[2] + s1 * radius], n, color);
    const d = vertex([center[0] + c0 * radius, center[1] + height, center[2] + s0 * radius], n, color);
    indices.push(a, c, b, a, d, c);
  }
  const top = vertex([center[0], center[1] + height, center[2]], [0, 1, 0], color);
  for (let i = 0; i < sides; i++) {
    const [c0, s0] = ring(i), [c1, s1] = ring(i + 1);
    const a = vertex([center[0] + c0 * radius, center[1] + height, center[2] + s0 * radius], [0, 1, 0], color);
    const b = vertex([center[0] + c1 * radius, center[1] + height, center[2] + s1 * radius], [0, 1, 0], color);
    indices.push(top, b, a);
  }
}

/** Voronoi cells from seeds on the surface: borders grooved inwards, each cell's colour shifted. */
function voronoi(doc: Document, opts: StylizeModelOptions): void {
  const random = seededRandom(opts.seed);
  const prims = meshNodes(doc).flatMap((node) => node.getMesh()!.listPrimitives());
  // Enough vertices for the grooves to show.
  let faces = faceCount(doc);
  const list = prims.map((prim) => readArrays(prim));
  while (faces > 0 && faces < 60000) {
    list.forEach((arrays, i) => (list[i] = subdivide(arrays)));
    faces *= 4;
  }
  const all = joinArrays(list.map((a) => ({ positions: a.positions, indices: a.indices })));
  const seeds: Vec3[] = Array.from({ length: opts.cells }, () => {
    const t = Math.floor(random() * (all.indices.length / 3));
    const [u, v] = [random(), random()];
    const [a, b] = u + v > 1 ? [1 - u, 1 - v] : [u, v];
    return [0, 1, 2].map((k) => all.positions[all.indices[t * 3]! * 3 + k]! * (1 - a - b) + all.positions[all.indices[t * 3 + 1]! * 3 + k]! * a + all.positions[all.indices[t * 3 + 2]! * 3 + k]! * b) as Vec3;
  });
  const tints = seeds.map(() => 0.75 + random() * 0.5);
  let low = Infinity, high = -Infinity;
  for (let i = 0; i < all.positions.length; i++) [low, high] = [Math.min(low, all.positions[i]!), Math.max(high, all.positions[i]!)];
  const width = (high - low) * 0.02, depth = (high - low) * 0.015;
  const material = doc.createMaterial('voronoi').setBaseColorFactor([1, 1, 1, 1]).setMetallicFactor(0).setRoughnessFactor(0.6);
  prims.forEach((prim, p) => {
    const arrays = list[p]!;
    const normals = smoothNormals(arrays.positions, arrays.indices);
    const remap = positionRemap(arrays.positions);
    const moved = Float32Array.from(arrays.positions);
    const colors = new Float32Array(arrays.positions.length);
    for (let v = 0; v < arrays.positions.length / 3; v++) {
      const w = remap[v]!;
      const q: Vec3 = [arrays.positions[w * 3]!, arrays.positions[w * 3 + 1]!, arrays.positions[w * 3 + 2]!];
      let first = Infinity, second = Infinity, cell = 0;
      seeds.forEach((s, i) => {
        const d = Math.hypot(q[0] - s[0], q[1] - s[1], q[2] - s[2]);
        if (d < first) [second, first, cell] = [first, d, i];
        else if (d < second) second = d;
      });
      const groove = Math.max(0, 1 - (second - first) / width);
      for (let k = 0; k < 3; k++) {
        moved[v * 3 + k] = q[k]! - normals[w * 3 + k]! * depth * groove;
        colors[v * 3 + k] = Math.min(1, (arrays.colors?.[v * 3 + k] ?? 0.8) * tints[cell]! * (1 - 0.5 * groove));
      }
    }
    const next: MeshArrays = { ...arrays, positions: moved, colors };
    next.normals = smoothNormals(moved, arrays.indices);
    writeArrays(doc, prim, next);
    prim.setMaterial(material).setExtras({});
  });
}
