import type { MeshArrays, Vec3 } from './mesh-common.ts';

/** A solid voxel grid: cell (x, y, z) is `x + y * size[0] + z * size[0] * size[1]`. */
export interface VoxelGrid {
  /** Corner of cell (0, 0, 0). */
  origin: Vec3;
  /** Side of a cell. */
  cell: number;
  size: [number, number, number];
  filled: Uint8Array;
  /** RGB 0..1 per cell (the surface colour; inner cells take their nearest surface cell's). */
  colors: Float32Array;
}

export interface VoxelizeOptions {
  /** Cells along the model's largest side. */
  resolution: number;
}

export const VOXELIZE_DEFAULTS: VoxelizeOptions = { resolution: 40 };

/**
 * Fills the cells the surface passes through (sampled densely over each triangle, colours
 * averaged), then every cell the outside cannot reach: the model as a solid of cells.
 */
export function voxelize(surface: MeshArrays, options: Partial<VoxelizeOptions> = {}): VoxelGrid {
  const { resolution } = { ...VOXELIZE_DEFAULTS, ...options };
  const { positions, indices, colors: vertexColors } = surface;
  const min: Vec3 = [Infinity, Infinity, Infinity], max: Vec3 = [-Infinity, -Infinity, -Infinity];
  for (let i = 0; i < positions.length; i++) {
    min[i % 3] = Math.min(min[i % 3]!, positions[i]!);
    max[i % 3] = Math.max(max[i % 3]!, positions[i]!);
  }
  const cell = Math.max(max[0] - min[0], max[1] - min[1], max[2] - min[2]) / resolution;
  // One empty cell of margin on every side lets the outside flow around the model.
  const origin: Vec3 = [min[0] - cell, min[1] - cell, min[2] - cell];
  const size: [number, number, number] = [0, 1, 2].map((k) => Math.ceil((max[k]! - min[k]!) / cell) + 3) as [number, number, number];
  const count = size[0] * size[1] * size[2];
  const at = (x: number, y: number, z: number) => x + y * size[0] + z * size[0] * size[1];
  const surfaceHits = new Uint32Array(count);
  const sums = new Float32Array(count * 3);

  for (let t = 0; t < indices.length; t += 3) {
    const [a, b, c] = [indices[t]!, indices[t + 1]!, indices[t + 2]!];
    const p = (v: number, k: number) => positions[v * 3 + k]!;
    const edge = Math.max(...[0, 1, 2].map((k) => Math.max(Math.abs(p(b, k) - p(a, k)), Math.abs(p(c, k) - p(a, k)), Math.abs(p(c, k) - p(b, k)))));
    const steps = Math.max(1, Math.ceil(edge / (cell * 0.5)));
    for (let i = 0; i <= steps; i++) {
      for (let j = 0; i + j <= steps; j++) {
        const u = i / steps, w = j / steps, s = 1 - u - w;
        const x = Math.floor((s * p(a, 0) + u * p(b, 0) + w * p(c, 0) - origin[0]) / cell);
        const y = Math.floor((s * p(a, 1) + u * p(b, 1) + w * p(c, 1) - origin[1]) / cell);
        const z = Math.floor((s * p(a, 2) + u * p(b, 2) + w * p(c, 2) - origin[2]) / cell);
        const index = at(x, y, z);
        surfaceHits[index]!++;
        for (let k = 0; k < 3; k++) sums[index * 3 + k]! += vertexColors ? s * vertexColors[a * 3 + k]! + u * vertexColors[b * 3 + k]! + w * vertexColors[c * 3 + k]! : 0.8;
      }
    }
  }

  // Outside: everything reachable from the corner without crossing the surface.
  const outside = new Uint8Array(count);
  const queue = new Int32Array(count);
  let head = 0, tail = 0;
  outside[0] = 1;
  queue[tail++] = 0;
  const neighbours = (index: number, visit: (n: number) => void) => {
    const x = index % size[0], y = Math.floor(index / size[0]) % size[1], z = Math.floor(index / (size[0] * size[1]));
    if (x > 0) visit(index - 1);
    if (x < size[0] - 1) visit(index + 1);
    if (y > 0) visit(index - size[0]);
    if (y < size[1] - 1) visit(index + size[0]);
    if (z > 0) visit(index - size[0] * size[1]);
    if (z < size[2] - 1) visit(index + size[0] * size[1]);
  };
  while (head < tail) {
    neighbours(queue[head++]!, (n) => {
      if (!outside[n] && !surfaceHits[n]) {
        outside[n] = 1;
        queue[tail++] = n;
      }
    });
  }

  const filled = new Uint8Array(count);
  const colors = new Float32Array(count * 3);
  head = tail = 0;
  for (let i = 0; i < count; i++) {
    if (outside[i]) continue;
    filled[i] = 1;
    if (surfaceHits[i]) {
      for (let k = 0; k < 3; k++) colors[i * 3 + k] = sums[i * 3 + k]! / surfaceHits[i]!;
      queue[tail++] = i;
    }
  }
  // Inner cells take the colour of the nearest surface cell (breadth first from the surface).
  const coloured = Uint8Array.from(surfaceHits, (hits) => (hits > 0 ? 1 : 0));
  while (head < tail) {
    const from = queue[head++]!;
    neighbours(from, (n) => {
      if (filled[n] && !coloured[n]) {
        coloured[n] = 1;
        colors.set(colors.subarray(from * 3, from * 3 + 3), n * 3);
        queue[tail++] = n;
      }
    });
  }
  return { origin, cell, size, filled, colors };
}
