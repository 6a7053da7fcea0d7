/**
 * Part segmentation: the surface splits into its connected pieces (welded by position); a model
 * that is one piece splits into spatial clusters. Each part becomes a node named after where it
 * sits (upper, middle_left, lower_right_back...), the subject facing +Z with its own left at +X.
 */
import type { Document, Material, Skin } from '@gltf-transform/core';
import { createMeshNode, joinArrays, meshNodes, pickTriangles, readArrays, sceneBounds, sceneOf, triangleComponents, type MeshArrays, type Vec3 } from './mesh-common.ts';

export interface SegmentModelOptions {
  /** At most this many parts; the smallest pieces join their nearest neighbour. */
  maxParts: number;
  /** Pieces under this share of all triangles join their nearest neighbour. */
  minShare: number;
  /** Parts a one-piece model is split into. */
  clusters: number;
}

export const SEGMENT_MODEL_DEFAULTS: SegmentModelOptions = { maxParts: 8, minShare: 0.01, clusters: 4 };

interface Segment {
  triangles: number[];
  centroid: Vec3;
}

/** Replaces the model's mesh nodes by one node per part; returns the part names in order. */
export function segmentModel(doc: Document, options: Partial<SegmentModelOptions> = {}): string[] {
  const opts = { ...SEGMENT_MODEL_DEFAULTS, ...options };
  const nodes = meshNodes(doc);
  const skin: Skin | null = nodes.find((n) => n.getSkin())?.getSkin() ?? null;
  // One surface with a material number per triangle, so parts keep their materials.
  const sources: { arrays: MeshArrays; material: Material | null }[] = nodes.flatMap((node) => node.getMesh()!.listPrimitives().map((prim) => ({ arrays: readArrays(prim), material: prim.getMaterial() })));
  const materials = [...new Set(sources.map((s) => s.material))];
  const surface = joinArrays(sources.map((s) => s.arrays));
  const triangleMaterial = new Uint32Array(surface.indices.length / 3);
  let offset = 0;
  for (const source of sources) {
    triangleMaterial.fill(materials.indexOf(source.material), offset, offset + source.arrays.indices.length / 3);
    offset += source.arrays.indices.length / 3;
  }

  const centroids = triangleCentroids(surface);
  let segments = connectedPieces(surface, centroids);
  const total = triangleMaterial.length;
  segments = mergeSmall(segments, (s, all) => s.triangles.length < total * opts.minShare || all.length > opts.maxParts, centroids);
  if (segments.length === 1) segments = cluster(centroids, Math.min(opts.clusters, total));

  const bounds = sceneBounds(doc);
  for (const node of nodes) {
    node.getMesh()!.dispose();
    node.dispose();
  }
  const scene = sceneOf(doc);
  const names = nameSegments(segments, bounds);
  segments.forEach((segment, i) => {
    const byMaterial = materials.map((material, m) => ({ material, triangles: segment.triangles.filter((t) => triangleMaterial[t] === m) })).filter((g) => g.triangles.length > 0);
    const node = createMeshNode(doc, names[i]!, byMaterial.map((g) => ({ arrays: pickTriangles(surface, g.triangles), material: g.material })));
    if (skin) node.setSkin(skin);
    scene.addChild(node);
  });
  return names;
}

function triangleCentroids({ positions, indices }: MeshArrays): Float32Array {
  const centroids = new Float32Array(indices.length);
  for (let t = 0; t < indices.length; t += 3) {
    for (let k = 0; k < 3; k++) centroids[t + k] = (positions[indices[t]! * 3 + k]! + positions[indices[t + 1]! * 3 + k]! + positions[indices[t + 2]! * 3 + k]!) / 3;
  }
  return centroids;
}

function segmentOf(triangles: number[], centroids: Float32Array): Segment {
  const centroid: Vec3 = [0, 0, 0];
  for (const t of triangles) for (let k = 0; k < 3; k++) centroid[k] += centroids[t * 3 + k]! / triangles.length;
  return { triangles, centroid };
}

/** Triangles grouped by connectivity through shared positions. */
function connectedPieces(surface: MeshArrays, centroids: Float32Array): Segment[] {
  const component = triangleComponents(surface.positions, surface.indices);
  const groups = new Map<number, number[]>();
  component.forEach((c, t) => {
    if (!groups.has(c)) groups.set(c, []);
    groups.get(c)!.push(t);
  });
  return [...groups.values()].map((triangles) => segmentOf(triangles, centroids));
}

/** Joins segments matching `tooSmall` (smallest first) into the segment with the nearest centroid. */
function mergeSmall(segments: Segment[], tooSmall: (s: Segment, all: Segment[]) => boolean, centroids: Float32Array): Segment[] {
  let list = [...segments].sort((a, b) => a.triangles.length - b.triangles.length);
  while (list.length > 1 && tooSmall(list[0]!, list)) {
    const [small, ...rest] = list;
    const nearest = rest.reduce((best, s) => (distance(s.centroid, small!.centroid) < distance(best.centroid, small!.centroid) ? s : best));
    const merged = segmentOf([...nearest.triangles, ...small!.triangles], centroids);
    list = [...rest.filter((s) => s !== nearest), merged].sort((a, b) => a.triangles.length - b.triangles.length);
  }
  return list;
}

/** k-means of triangle centroids, seeded by farthest points from the topmost triangle: deterministic. */
function cluster(centroids: Float32Array, k: number): Segment[] {
  const count = centroids.length / 3;
  const distance2 = (t: number, c: Vec3) => {
    const dx = centroids[t * 3]! - c[0], dy = centroids[t * 3 + 1]! - c[1], dz = centroids[t * 3 + 2]! - c[2];
    return dx * dx + dy * dy + dz * dz;
  };
  const at = (t: number): Vec3 => [centroids[t * 3]!, centroids[t * 3 + 1]!, centroids[t * 3 + 2]!];
  let top = 0;
  for (let t = 1; t < count; t++) if (centroids[t * 3 + 1]! > centroids[top * 3 + 1]!) top = t;
  const centers: Vec3[] = [at(top)];
  const nearest = new Float64Array(count).fill(Infinity);
  while (centers.length < k) {
    let far = 0;
    for (let t = 0; t < count; t++) {
      nearest[t] = Math.min(nearest[t]!, distance2(t, centers[centers.length - 1]!));
      if (nearest[t]! > nearest[far]!) far = t;
    }
    centers.push(at(far));
  }
  const assignment = new Uint32Array(count);
  for (let iteration = 0; iteration < 10; iteration++) {
    const sums = new Float64Array(centers.length * 4);
    for (let t = 0; t < count; t++) {
      let best = 0, bestDistance = distance2(t, centers[0]!);
      for (let c = 1; c < centers.length; c++) {
        const d = distance2(t, centers[c]!);
        if (d < bestDistance) [best, bestDistance] = [c, d];
      }
      assignment[t] = best;
      for (let j = 0; j < 3; j++) sums[best * 4 + j]! += centroids[t * 3 + j]!;
      sums[best * 4 + 3]!++;
    }
    centers.forEach((_, c) => {
      const n = sums[c * 4 + 3]!;
      if (n > 0) centers[c] = [sums[c * 4]! / n, sums[c * 4 + 1]! / n, sums[c * 4 + 2]! / n];
    });
  }
  const groups = centers.map(() => [] as number[]);
  for (let t = 0; t < count; t++) groups[assignment[t]!]!.push(t);
  return groups.filter((g) => g.length > 0).map((triangles) => segmentOf(triangles, centroids));
}

/** Names from each part's place in the model's bounds; parts ordered top to bottom, left to right. */
function nameSegments(segments: Segment[], bounds: { min: Vec3; max: Vec3 }): string[] {
  segments.sort((a, b) => b.centroid[1] - a.centroid[1] || b.centroid[0] - a.centroid[0] || b.centroid[2] - a.centroid[2]);
  const used = new Map<string, number>();
  return segments.map(({ centroid }) => {
    const rel = [0, 1, 2].map((k) => (2 * (centroid[k]! - bounds.min[k]!)) / (bounds.max[k]! - bounds.min[k]! || 1) - 1);
    const words = [rel[1]! > 1 / 3 ? 'upper' : rel[1]! < -1 / 3 ? 'lower' : 'middle'];
    if (Math.abs(rel[0]!) > 0.15) words.push(rel[0]! > 0 ? 'left' : 'right');
    if (Math.abs(rel[2]!) > 0.15) words.push(rel[2]! > 0 ? 'front' : 'back');
    const base = words.join('_');
    const n = (used.get(base) ?? 0) + 1;
    used.set(base, n);
    return n === 1 ? base : `${base}_${n}`;
  });
}

function distance(a: Vec3, b: Vec3): number {
  return Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
}
