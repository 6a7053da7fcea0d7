/**
 * Refinement of a draft: each triangle split in four (while under a face budget), then Taubin
 * smoothing (a shrink-free pair of Laplacian steps) over welded positions, then fresh normals.
 */
import type { Document } from '@gltf-transform/core';
import { meshNodes, positionRemap, readArrays, smoothNormals, subdivide, writeArrays } from './mesh-common.ts';

export interface RefineModelOptions {
  /** Subdivide only while the whole model stays within this many triangles. */
  maxFaces: number;
  /** Smoothing rounds. */
  iterations: number;
}

export const REFINE_MODEL_DEFAULTS: RefineModelOptions = { maxFaces: 400000, iterations: 4 };

export function refineModel(doc: Document, options: Partial<RefineModelOptions> = {}): Document {
  const opts = { ...REFINE_MODEL_DEFAULTS, ...options };
  const prims = meshNodes(doc).flatMap((node) => node.getMesh()!.listPrimitives());
  const total = prims.reduce((sum, prim) => sum + (prim.getIndices()?.getCount() ?? 0) / 3, 0);
  for (const prim of prims) {
    let arrays = readArrays(prim);
    if (total * 4 <= opts.maxFaces) arrays = subdivide(arrays);
    taubinSmooth(arrays.positions, arrays.indices, opts.iterations);
    arrays.normals = smoothNormals(arrays.positions, arrays.indices);
    writeArrays(doc, prim, arrays);
    prim.setExtras({});
  }
  return doc;
}

/** Alternating shrink (λ) and inflate (μ) umbrella steps on welded positions, in place. */
function taubinSmooth(positions: Float32Array, indices: Uint32Array, iterations: number): void {
  const remap = positionRemap(positions);
  const neighbours = new Map<number, Set<number>>();
  for (let t = 0; t < indices.length; t += 3) {
    for (let k = 0; k < 3; k++) {
      const a = remap[indices[t + k]!]!, b = remap[indices[t + ((k + 1) % 3)]!]!;
      if (a === b) continue;
      if (!neighbours.has(a)) neighbours.set(a, new Set());
      if (!neighbours.has(b)) neighbours.set(b, new Set());
      neighbours.get(a)!.add(b);
      neighbours.get(b)!.add(a);
    }
  }
  const welded = [...neighbours.keys()];
  const next = new Float32Array(positions.length);
  for (let step = 0; step < iterations * 2; step++) {
    const factor = step % 2 === 0 ? 0.5 : -0.53;
    for (const v of welded) {
      const around = neighbours.get(v)!;
      for (let k = 0; k < 3; k++) {
        let mean = 0;
        for (const n of around) mean += positions[n * 3 + k]!;
        mean /= around.size;
        next[v * 3 + k] = positions[v * 3 + k]! + factor * (mean - positions[v * 3 + k]!);
      }
    }
    for (const v of welded) for (let k = 0; k < 3; k++) positions[v * 3 + k] = next[v * 3 + k]!;
  }
  // Vertices sharing a position follow the one that moved.
  for (let v = 0; v < remap.length; v++) if (remap[v] !== v) for (let k = 0; k < 3; k++) positions[v * 3 + k] = positions[remap[v]! * 3 + k]!;
}
