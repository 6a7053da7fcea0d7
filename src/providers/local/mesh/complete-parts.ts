/**
 * Part completion: every hole of the chosen parts (a loop of edges used by one triangle only)
 * is capped with a fan around the loop's centre, so each part becomes a closed surface.
 */
import type { Document } from '@gltf-transform/core';
import { meshNodes, positionRemap, readArrays, writeArrays, type MeshArrays } from './mesh-common.ts';

export interface CompletePartsOptions {
  /** Part (node) names to close; all parts when empty. */
  parts: string[];
}

export const COMPLETE_PARTS_DEFAULTS: CompletePartsOptions = { parts: [] };

/** Caps the holes of the chosen parts; returns the number of holes filled per part. */
export function completeParts(doc: Document, options: Partial<CompletePartsOptions> = {}): Record<string, number> {
  const { parts } = { ...COMPLETE_PARTS_DEFAULTS, ...options };
  const filled: Record<string, number> = {};
  for (const node of meshNodes(doc)) {
    if (parts.length > 0 && !parts.includes(node.getName())) continue;
    filled[node.getName()] = 0;
    for (const prim of node.getMesh()!.listPrimitives()) {
      const arrays = readArrays(prim);
      const loops = boundaryLoops(arrays);
      if (loops.length === 0) continue;
      writeArrays(doc, prim, capLoops(arrays, loops));
      // New triangles break the quad pairing of the original order.
      prim.setExtras({});
      filled[node.getName()]! += loops.length;
    }
  }
  return filled;
}

/** Closed chains of boundary edges, as vertex indices in the order the edges run. */
function boundaryLoops({ positions, indices }: MeshArrays): number[][] {
  const remap = positionRemap(positions);
  const directed = new Map<string, number>();
  for (let t = 0; t < indices.length; t += 3) {
    for (let k = 0; k < 3; k++) {
      const key = `${remap[indices[t + k]!]},${remap[indices[t + ((k + 1) % 3)]!]}`;
      directed.set(key, (directed.get(key) ?? 0) + 1);
    }
  }
  // A boundary edge runs a -> b with no triangle running b -> a; keyed by its welded start.
  const outgoing = new Map<number, { from: number; to: number; toWelded: number }[]>();
  for (let t = 0; t < indices.length; t += 3) {
    for (let k = 0; k < 3; k++) {
      const from = indices[t + k]!, to = indices[t + ((k + 1) % 3)]!;
      const a = remap[from]!, b = remap[to]!;
      if (a === b || directed.has(`${b},${a}`)) continue;
      if (!outgoing.has(a)) outgoing.set(a, []);
      outgoing.get(a)!.push({ from, to, toWelded: b });
    }
  }
  const loops: number[][] = [];
  for (const [start, edges] of outgoing) {
    while (edges.length > 0) {
      const loop: number[] = [];
      let edge = edges.pop()!;
      for (let guard = 0; guard <= indices.length; guard++) {
        loop.push(edge.from);
        if (edge.toWelded === start) break;
        const next = outgoing.get(edge.toWelded)?.pop();
        if (!next) break;
        edge = next;
      }
      if (edge.toWelded === start && loop.length >= 3) loops.push(loop);
    }
  }
  return loops;
}

/** Adds a fan per loop: copies of the loop's corners with the cap's normal, plus a centre vertex. */
function capLoops(arrays: MeshArrays, loops: number[][]): MeshArrays {
  const added = loops.reduce((sum, loop) => sum + loop.length + 1, 0);
  const base = arrays.positions.length / 3;
  const grow = <T extends Float32Array | Uint16Array>(array: T | undefined, size: number): T | undefined => {
    if (!array) return undefined;
    const next = new (array.constructor as new (n: number) => T)((base + added) * size);
    next.set(array);
    return next;
  };
  const out: MeshArrays = {
    positions: grow(arrays.positions, 3)!,
    indices: new Uint32Array(arrays.indices.length + loops.reduce((sum, loop) => sum + loop.length * 3, 0)),
    normals: grow(arrays.normals, 3),
    uvs: grow(arrays.uvs, 2),
    colors: grow(arrays.colors, 3),
    joints: grow(arrays.joints, 4),
    weights: grow(arrays.weights, 4),
  };
  out.indices.set(arrays.indices);
  let vertex = base, index = arrays.indices.length;
  const copy = (from: number, to: number) => {
    for (const [key, size] of [['positions', 3], ['uvs', 2], ['colors', 3], ['joints', 4], ['weights', 4]] as const) {
      const array = out[key];
      if (array) for (let k = 0; k < size; k++) array[to * size + k] = array[from * size + k]!;
    }
  };
  for (const loop of loops) {
    // Newell's normal of the loop run backwards: the cap faces away from the part.
    const normal = [0, 0, 0];
    const center = [0, 0, 0];
    loop.forEach((v, i) => {
      const w = loop[(i + 1) % loop.length]!;
      const [px, py, pz] = [arrays.positions[w * 3]!, arrays.positions[w * 3 + 1]!, arrays.positions[w * 3 + 2]!];
      const [qx, qy, qz] = [arrays.positions[v * 3]!, arrays.positions[v * 3 + 1]!, arrays.positions[v * 3 + 2]!];
      normal[0]! += (py - qy) * (pz + qz);
      normal[1]! += (pz - qz) * (px + qx);
      normal[2]! += (px - qx) * (py + qy);
      center[0]! += qx / loop.length;
      center[1]! += qy / loop.length;
      center[2]! += qz / loop.length;
    });
    const length = Math.hypot(normal[0]!, normal[1]!, normal[2]!) || 1;
    const first = vertex;
    for (const v of loop) {
      copy(v, vertex);
      out.normals?.set(normal.map((n) => n / length), vertex * 3);
      vertex++;
    }
    const middle = vertex++;
    copy(loop[0]!, middle);
    out.positions.set(center, middle * 3);
    out.normals?.set(normal.map((n) => n / length), middle * 3);
    if (out.uvs) {
      // The centre takes the mean UV of its loop.
      const uv = [0, 1].map((k) => loop.reduce((sum, v) => sum + arrays.uvs![v * 2 + k]!, 0) / loop.length);
      out.uvs.set(uv, middle * 2);
    }
    for (let i = 0; i < loop.length; i++) {
      const a = first + i, b = first + ((i + 1) % loop.length);
      out.indices.set([b, a, middle], index);
      index += 3;
    }
  }
  return out;
}
