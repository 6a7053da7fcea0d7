/**
 * Riggability check: is the model one body, and what stands on the ground? Pieces whose bounds
 * overlap count as one body; the footprints are the separate clusters of surface in the lowest
 * slice of the model. Two footprints under an upright body make a biped, four a quadruped, six a
 * hexapod, eight an octopod; a long low body with none apart is serpentine.
 */
import type { Document } from '@gltf-transform/core';
import { triangleComponents, worldSurface, type Vec3 } from './mesh-common.ts';
import type { RigType } from './skeleton-templates.ts';

export interface InspectBodyOptions {
  /** Height share of the slice whose clusters are the footprints. */
  footSlice: number;
  /** Cells per side of the footprint grid. */
  grid: number;
}

export const INSPECT_BODY_DEFAULTS: InspectBodyOptions = { footSlice: 0.2, grid: 32 };

export interface BodyReport {
  riggable: boolean;
  /** The suggested rig type; absent when not riggable. */
  rig_type?: RigType;
  reason: string;
  bodies: number;
  footprints: number;
  /** Height over the larger horizontal extent. */
  height_ratio: number;
}

export function inspectBody(doc: Document, options: Partial<InspectBodyOptions> = {}): BodyReport {
  const opts = { ...INSPECT_BODY_DEFAULTS, ...options };
  const { positions, indices } = worldSurface(doc);
  const min: Vec3 = [Infinity, Infinity, Infinity], max: Vec3 = [-Infinity, -Infinity, -Infinity];
  for (let i = 0; i < positions.length; i++) {
    min[i % 3] = Math.min(min[i % 3]!, positions[i]!);
    max[i % 3] = Math.max(max[i % 3]!, positions[i]!);
  }
  const size = [max[0] - min[0], max[1] - min[1], max[2] - min[2]];
  const ratio = size[1]! / Math.max(size[0]!, size[2]!, 1e-9);
  const bodies = countBodies(positions, indices, Math.max(...size) * 0.01);
  const footprints = countFootprints(positions, indices, min[1] + size[1]! * opts.footSlice, opts.grid);
  const facts = { bodies, footprints, height_ratio: Math.round(ratio * 100) / 100 };
  if (bodies > 1) return { riggable: false, reason: `the model is ${bodies} separate bodies, not one connected body`, ...facts };
  const long = Math.max(size[0]!, size[2]!) >= 3 * size[1]! && Math.max(size[0]!, size[2]!) >= 2 * Math.min(size[0]!, size[2]!);
  const rig = ((): { type: RigType; why: string } | null => {
    if (footprints === 2 && ratio > 1) return { type: 'biped', why: 'two legs under an upright body' };
    if (footprints === 4 && ratio < 1.5) return { type: 'quadruped', why: 'four legs under a level body' };
    if (footprints === 6) return { type: 'hexapod', why: 'six legs' };
    if (footprints === 8) return { type: 'octopod', why: 'eight legs' };
    if (footprints <= 1 && long) return { type: 'serpentine', why: 'a long body lying on the ground' };
    return null;
  })();
  if (!rig) {
    const seen = footprints <= 1 ? 'no separate limbs reach the ground' : `${footprints} footprints match no rig type`;
    return { riggable: false, reason: `${seen} (height/width ${facts.height_ratio})`, ...facts };
  }
  return { riggable: true, rig_type: rig.type, reason: `${rig.why} (height/width ${facts.height_ratio})`, ...facts };
}

/** Connected pieces, merged while their bounds overlap (within `tolerance`). */
function countBodies(positions: Float32Array, indices: Uint32Array, tolerance: number): number {
  const component = triangleComponents(positions, indices);
  const boxes = new Map<number, { min: Vec3; max: Vec3 }>();
  component.forEach((c, t) => {
    const box = boxes.get(c) ?? { min: [Infinity, Infinity, Infinity], max: [-Infinity, -Infinity, -Infinity] };
    for (let k = 0; k < 3; k++) {
      const v = indices[t * 3 + k]!;
      for (let a = 0; a < 3; a++) {
        box.min[a] = Math.min(box.min[a]!, positions[v * 3 + a]!);
        box.max[a] = Math.max(box.max[a]!, positions[v * 3 + a]!);
      }
    }
    boxes.set(c, box);
  });
  const list = [...boxes.values()];
  const parent = list.map((_, i) => i);
  const find = (i: number): number => (parent[i] === i ? i : (parent[i] = find(parent[i]!)));
  for (let a = 0; a < list.length; a++) {
    for (let b = a + 1; b < list.length; b++) {
      const overlap = [0, 1, 2].every((k) => list[a]!.min[k]! <= list[b]!.max[k]! + tolerance && list[b]!.min[k]! <= list[a]!.max[k]! + tolerance);
      if (overlap) parent[find(b)] = find(a);
    }
  }
  return new Set(list.map((_, i) => find(i))).size;
}

/** Clusters of the surface below `top` seen from above on a grid: cells up to two apart connect (sparse samples leave gaps), at least 2 cells each. */
function countFootprints(positions: Float32Array, indices: Uint32Array, top: number, grid: number): number {
  const points: number[] = [];
  for (let t = 0; t < indices.length; t += 3) {
    const [a, b, c] = [indices[t]! * 3, indices[t + 1]! * 3, indices[t + 2]! * 3];
    // Corners, edge midpoints and centre: enough samples for coarse meshes.
    const weights = [[1, 0, 0], [0, 1, 0], [0, 0, 1], [0.5, 0.5, 0], [0, 0.5, 0.5], [0.5, 0, 0.5], [1 / 3, 1 / 3, 1 / 3]];
    for (const [wa, wb, wc] of weights) {
      const y = wa! * positions[a + 1]! + wb! * positions[b + 1]! + wc! * positions[c + 1]!;
      if (y > top) continue;
      points.push(wa! * positions[a]! + wb! * positions[b]! + wc! * positions[c]!, wa! * positions[a + 2]! + wb! * positions[b + 2]! + wc! * positions[c + 2]!);
    }
  }
  if (points.length === 0) return 0;
  let minX = Infinity, maxX = -Infinity, minZ = Infinity, maxZ = -Infinity;
  for (let i = 0; i < points.length; i += 2) {
    minX = Math.min(minX, points[i]!);
    maxX = Math.max(maxX, points[i]!);
    minZ = Math.min(minZ, points[i + 1]!);
    maxZ = Math.max(maxZ, points[i + 1]!);
  }
  const cell = Math.max(maxX - minX, maxZ - minZ, 1e-9) / grid;
  const columns = Math.floor((maxX - minX) / cell) + 1, rows = Math.floor((maxZ - minZ) / cell) + 1;
  const occupied = new Uint8Array(columns * rows);
  for (let i = 0; i < points.length; i += 2) occupied[Math.floor((points[i + 1]! - minZ) / cell) * columns + Math.floor((points[i]! - minX) / cell)] = 1;
  const seen = new Uint8Array(columns * rows);
  let clusters = 0;
  for (let start = 0; start < occupied.length; start++) {
    if (!occupied[start] || seen[start]) continue;
    let cells = 0;
    const stack = [start];
    seen[start] = 1;
    while (stack.length > 0) {
      const i = stack.pop()!;
      cells++;
      const x = i % columns, z = Math.floor(i / columns);
      for (let dz = -2; dz <= 2; dz++) {
        for (let dx = -2; dx <= 2; dx++) {
          const nx = x + dx, nz = z + dz, n = nz * columns + nx;
          if (nx >= 0 && nx < columns && nz >= 0 && nz < rows && occupied[n] && !seen[n]) {
            seen[n] = 1;
            stack.push(n);
          }
        }
      }
    }
    if (cells >= 2) clusters++;
  }
  return clusters;
}
