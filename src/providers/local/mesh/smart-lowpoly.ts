/**
 * Smart low-poly: meshoptimizer simplification of the chosen parts down to a face limit, the
 * budget shared by the parts in proportion to their size; with quads the result is re-paired
 * into a quad-dominant mesh whose polygon count (quads plus single triangles) meets the limit.
 */
import type { Document, Primitive } from '@gltf-transform/core';
import { MeshoptSimplifier } from 'meshoptimizer';
import { meshNodes, pickTriangles, readArrays, writeArrays, type MeshArrays } from './mesh-common.ts';
import { pairQuads } from './pair-quads.ts';

export interface SmartLowpolyOptions {
  /** Triangles, or polygons when `quad` is on, over all chosen parts. */
  faceLimit: number;
  quad: boolean;
  /** Part (node) names to simplify; all parts when empty. */
  parts: string[];
}

export const SMART_LOWPOLY_DEFAULTS: SmartLowpolyOptions = { faceLimit: 10000, quad: false, parts: [] };

export function smartLowpoly(doc: Document, options: Partial<SmartLowpolyOptions> = {}): Document {
  const opts = { ...SMART_LOWPOLY_DEFAULTS, ...options };
  const prims: Primitive[] = meshNodes(doc)
    .filter((node) => opts.parts.length === 0 || opts.parts.includes(node.getName()))
    .flatMap((node) => node.getMesh()!.listPrimitives());
  const sources = prims.map((prim) => readArrays(prim));
  const total = sources.reduce((sum, a) => sum + a.indices.length / 3, 0);
  let remaining = opts.faceLimit;
  prims.forEach((prim, i) => {
    const arrays = sources[i]!;
    const faces = arrays.indices.length / 3;
    // The last primitive takes what the others left, so rounding never overshoots the limit.
    const budget = i === prims.length - 1 ? remaining : Math.max(1, Math.floor((opts.faceLimit * faces) / total));
    const result = opts.quad ? simplifyToPolygons(arrays, budget) : { arrays: simplifyToTriangles(arrays, budget), quads: 0 };
    remaining -= result.arrays.indices.length / 3 - result.quads;
    writeArrays(doc, prim, result.arrays);
    prim.setExtras(opts.quad ? { topology: 'quad', quad_count: result.quads } : {});
  });
  return doc;
}

/** At most `limit` triangles: topology-aware simplification, then the sloppy kind if that stalls. */
function simplifyToTriangles(arrays: MeshArrays, limit: number): MeshArrays {
  if (arrays.indices.length / 3 <= limit) return arrays;
  const target = Math.max(1, limit) * 3;
  let [indices] = MeshoptSimplifier.simplify(arrays.indices, arrays.positions, 3, target, 1, []);
  if (indices.length > target) [indices] = MeshoptSimplifier.simplifySloppy(arrays.indices, arrays.positions, 3, null, target, 1);
  if (indices.length > target) indices = indices.subarray(0, target);
  const triangles = Uint32Array.from({ length: indices.length / 3 }, (_, t) => t);
  return pickTriangles({ ...arrays, indices }, triangles);
}

/** Quads plus single triangles ≤ `limit`: simplify, pair, and retry lower when too few triangles paired. */
function simplifyToPolygons(arrays: MeshArrays, limit: number): { arrays: MeshArrays; quads: number } {
  let triangleTarget = Math.min(arrays.indices.length / 3, limit * 2);
  for (let attempt = 0; ; attempt++) {
    const simplified = simplifyToTriangles(arrays, triangleTarget);
    const paired = pairQuads(simplified.positions, simplified.indices);
    const polygons = simplified.indices.length / 3 - paired.quads;
    if (polygons <= limit || attempt === 5 || triangleTarget <= 1) {
      if (polygons <= limit) return { arrays: { ...simplified, indices: paired.indices }, quads: paired.quads };
      // Still over: drop the polygons beyond the limit rather than exceed it.
      const quads = Math.min(paired.quads, limit);
      const keep = quads * 2 + Math.max(0, limit - quads);
      const kept = { ...simplified, indices: paired.indices.subarray(0, keep * 3) };
      return { arrays: pickTriangles(kept, Uint32Array.from({ length: keep }, (_, t) => t)), quads };
    }
    triangleTarget = Math.max(1, Math.floor((triangleTarget * limit) / polygons) - 1);
  }
}
