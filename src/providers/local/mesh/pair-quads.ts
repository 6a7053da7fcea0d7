import { positionRemap } from './mesh-common.ts';

/**
 * Quad-dominant re-topology of a triangle list: neighbouring triangles whose union is a convex,
 * nearly flat quad with the shared edge as its diagonal are paired, greedily in order. The result
 * lists the pairs first (two consecutive triangles each), then the triangles left single.
 */
export function pairQuads(positions: Float32Array, indices: Uint32Array): { indices: Uint32Array; quads: number } {
  const remap = positionRemap(positions);
  const triangleCount = indices.length / 3;
  const edgeKey = (a: number, b: number) => {
    const ra = remap[a]!, rb = remap[b]!;
    return ra < rb ? `${ra},${rb}` : `${rb},${ra}`;
  };
  const byEdge = new Map<string, number[]>();
  for (let t = 0; t < triangleCount; t++) {
    for (let k = 0; k < 3; k++) {
      const key = edgeKey(indices[t * 3 + k]!, indices[t * 3 + ((k + 1) % 3)]!);
      const list = byEdge.get(key);
      if (list) list.push(t);
      else byEdge.set(key, [t]);
    }
  }
  const p = (v: number) => [positions[v * 3]!, positions[v * 3 + 1]!, positions[v * 3 + 2]!];
  const normalOf = (t: number) => {
    const [a, b, c] = [p(indices[t * 3]!), p(indices[t * 3 + 1]!), p(indices[t * 3 + 2]!)];
    const u = [b[0]! - a[0]!, b[1]! - a[1]!, b[2]! - a[2]!], v = [c[0]! - a[0]!, c[1]! - a[1]!, c[2]! - a[2]!];
    const n = [u[1]! * v[2]! - u[2]! * v[1]!, u[2]! * v[0]! - u[0]! * v[2]!, u[0]! * v[1]! - u[1]! * v[0]!];
    const len = Math.hypot(n[0]!, n[1]!, n[2]!) || 1;
    return n.map((x) => x / len);
  };
  const length = (a: number, b: number) => {
    const [x, y] = [p(a), p(b)];
    return Math.hypot(x[0]! - y[0]!, x[1]! - y[1]!, x[2]! - y[2]!);
  };

  const partner = new Int32Array(triangleCount).fill(-1);
  for (let t = 0; t < triangleCount; t++) {
    if (partner[t] !== -1) continue;
    const n = normalOf(t);
    let best = -1, bestScore = 0;
    for (let k = 0; k < 3; k++) {
      const a = indices[t * 3 + k]!, b = indices[t * 3 + ((k + 1) % 3)]!;
      for (const other of byEdge.get(edgeKey(a, b)) ?? []) {
        if (other === t || partner[other] !== -1) continue;
        const m = normalOf(other);
        const flatness = n[0]! * m[0]! + n[1]! * m[1]! + n[2]! * m[2]!;
        if (flatness < 0.85) continue;
        // A good quad's diagonal is the longest edge of both triangles.
        const diagonal = length(a, b);
        const longest = Math.max(...[0, 1, 2].flatMap((i) => [length(indices[t * 3 + i]!, indices[t * 3 + ((i + 1) % 3)]!), length(indices[other * 3 + i]!, indices[other * 3 + ((i + 1) % 3)]!)]));
        const score = flatness * (diagonal / (longest || 1));
        if (score > bestScore && diagonal >= longest * 0.9) [best, bestScore] = [other, score];
      }
    }
    if (best !== -1) {
      partner[t] = best;
      partner[best] = t;
    }
  }

  const out = new Uint32Array(indices.length);
  let o = 0, quads = 0;
  const emit = (t: number) => {
    out[o++] = indices[t * 3]!;
    out[o++] = indices[t * 3 + 1]!;
    out[o++] = indices[t * 3 + 2]!;
  };
  for (let t = 0; t < triangleCount; t++) {
    if (partner[t] > t) {
      emit(t);
      emit(partner[t]!);
      quads++;
    }
  }
  for (let t = 0; t < triangleCount; t++) if (partner[t] === -1) emit(t);
  return { indices: out, quads };
}
