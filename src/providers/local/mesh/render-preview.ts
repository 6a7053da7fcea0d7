/**
 * A PNG preview of a model: an orthographic three-quarter view, z-buffered, flat shaded, each
 * triangle coloured by its material (texture sampled at the triangle's centre, vertex colours).
 */
import type { Document, Texture } from '@gltf-transform/core';
import sharp from 'sharp';
import { meshNodes, readArrays } from './mesh-common.ts';

export interface RenderPreviewOptions {
  /** Image side in pixels. */
  size: number;
  /** Turn about the vertical axis and tilt towards the viewer, radians. */
  yaw: number;
  pitch: number;
}

export const RENDER_PREVIEW_DEFAULTS: RenderPreviewOptions = { size: 512, yaw: 0.6, pitch: 0.35 };

interface DecodedTexture {
  data: Buffer;
  width: number;
  height: number;
  channels: number;
}

export async function renderPreview(doc: Document, options: Partial<RenderPreviewOptions> = {}): Promise<Buffer> {
  const { size, yaw, pitch } = { ...RENDER_PREVIEW_DEFAULTS, ...options };
  const decoded = new Map<Texture, DecodedTexture>();
  const decode = async (texture: Texture | null): Promise<DecodedTexture | null> => {
    if (!texture?.getImage()) return null;
    if (!decoded.has(texture)) {
      const { data, info } = await sharp(Buffer.from(texture.getImage()!)).raw().toBuffer({ resolveWithObject: true });
      decoded.set(texture, { data, width: info.width, height: info.height, channels: info.channels });
    }
    return decoded.get(texture)!;
  };

  // Camera space: x right, y up, z towards the viewer.
  const cy = Math.cos(yaw), sy = Math.sin(yaw), cp = Math.cos(pitch), sp = Math.sin(pitch);
  const meshes: { cam: Float32Array; indices: Uint32Array; colors: Float32Array }[] = [];
  let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
  for (const node of meshNodes(doc)) {
    const m = node.getSkin() ? null : node.getWorldMatrix();
    for (const prim of node.getMesh()!.listPrimitives()) {
      const arrays = readArrays(prim);
      const material = prim.getMaterial();
      const factor = material?.getBaseColorFactor() ?? [0.8, 0.8, 0.8, 1];
      const texture = await decode(material?.getBaseColorTexture() ?? null);
      const { positions, indices, uvs, colors: vertexColors } = arrays;
      const cam = new Float32Array(positions.length);
      for (let v = 0; v < positions.length; v += 3) {
        let x = positions[v]!, y = positions[v + 1]!, z = positions[v + 2]!;
        if (m) [x, y, z] = [m[0] * x + m[4] * y + m[8] * z + m[12], m[1] * x + m[5] * y + m[9] * z + m[13], m[2] * x + m[6] * y + m[10] * z + m[14]];
        const x1 = x * cy + z * sy, z1 = -x * sy + z * cy;
        cam[v] = x1;
        cam[v + 1] = y * cp - z1 * sp;
        cam[v + 2] = y * sp + z1 * cp;
        minX = Math.min(minX, cam[v]!);
        maxX = Math.max(maxX, cam[v]!);
        minY = Math.min(minY, cam[v + 1]!);
        maxY = Math.max(maxY, cam[v + 1]!);
      }
      const colors = new Float32Array(indices.length);
      for (let t = 0; t < indices.length; t += 3) {
        const a = indices[t]!, b = indices[t + 1]!, c = indices[t + 2]!;
        let r = factor[0], g = factor[1], bl = factor[2];
        if (texture && uvs) {
          const u = (uvs[a * 2]! + uvs[b * 2]! + uvs[c * 2]!) / 3, w = (uvs[a * 2 + 1]! + uvs[b * 2 + 1]! + uvs[c * 2 + 1]!) / 3;
          const px = Math.min(texture.width - 1, Math.max(0, Math.floor((u - Math.floor(u)) * texture.width)));
          const py = Math.min(texture.height - 1, Math.max(0, Math.floor((w - Math.floor(w)) * texture.height)));
          const o = (py * texture.width + px) * texture.channels;
          r *= texture.data[o]! / 255;
          g *= texture.data[o + 1]! / 255;
          bl *= texture.data[o + 2]! / 255;
        }
        if (vertexColors) {
          r *= (vertexColors[a * 3]! + vertexColors[b * 3]! + vertexColors[c * 3]!) / 3;
          g *= (vertexColors[a * 3 + 1]! + vertexColors[b * 3 + 1]! + vertexColors[c * 3 + 1]!) / 3;
          bl *= (vertexColors[a * 3 + 2]! + vertexColors[b * 3 + 2]! + vertexColors[c * 3 + 2]!) / 3;
        }
        colors[t] = r;
        colors[t + 1] = g;
        colors[t + 2] = bl;
      }
      meshes.push({ cam, indices, colors });
    }
  }

  const pixels = Buffer.alloc(size * size * 3, 235);
  const depth = new Float32Array(size * size).fill(-Infinity);
  const scale = (size * 0.9) / Math.max(maxX - minX, maxY - minY, 1e-9);
  const offsetX = size / 2 - ((minX + maxX) / 2) * scale, offsetY = size / 2 + ((minY + maxY) / 2) * scale;
  const light = normalize3([0.4, 0.8, 0.6]);
  for (const { cam, indices, colors } of meshes) {
    for (let t = 0; t < indices.length; t += 3) {
      const a = indices[t]! * 3, b = indices[t + 1]! * 3, c = indices[t + 2]! * 3;
      const ax = cam[a]! * scale + offsetX, ay = offsetY - cam[a + 1]! * scale;
      const bx = cam[b]! * scale + offsetX, by = offsetY - cam[b + 1]! * scale;
      const cx = cam[c]! * scale + offsetX, cyy = offsetY - cam[c + 1]! * scale;
      const area = (bx - ax) * (cyy - ay) - (by - ay) * (cx - ax);
      if (Math.abs(area) < 1e-12) continue;
      const n = normalize3(cross([cam[b]! - cam[a]!, cam[b + 1]! - cam[a + 1]!, cam[b + 2]! - cam[a + 2]!], [cam[c]! - cam[a]!, cam[c + 1]! - cam[a + 1]!, cam[c + 2]! - cam[a + 2]!]));
      const shade = 0.35 + 0.65 * Math.abs(n[0] * light[0] + n[1] * light[1] + n[2] * light[2]);
      const x0 = Math.max(0, Math.floor(Math.min(ax, bx, cx))), x1 = Math.min(size - 1, Math.ceil(Math.max(ax, bx, cx)));
      const y0 = Math.max(0, Math.floor(Math.min(ay, by, cyy))), y1 = Math.min(size - 1, Math.ceil(Math.max(ay, by, cyy)));
      for (let y = y0; y <= y1; y++) {
        for (let x = x0; x <= x1; x++) {
          const px = x + 0.5, py = y + 0.5;
          const w0 = ((bx - px) * (cyy - py) - (by - py) * (cx - px)) / area;
          const w1 = ((cx - px) * (ay - py) - (cyy - py) * (ax - px)) / area;
          const w2 = 1 - w0 - w1;
          if (w0 < 0 || w1 < 0 || w2 < 0) continue;
          const z = w0 * cam[a + 2]! + w1 * cam[b + 2]! + w2 * cam[c + 2]!;
          const i = y * size + x;
          if (z <= depth[i]!) continue;
          depth[i] = z;
          pixels[i * 3] = Math.round(255 * Math.min(1, colors[t]! * shade));
          pixels[i * 3 + 1] = Math.round(255 * Math.min(1, colors[t + 1]! * shade));
          pixels[i * 3 + 2] = Math.round(255 * Math.min(1, colors[t + 2]! * shade));
        }
      }
    }
  }
  return sharp(pixels, { raw: { width: size, height: size, channels: 3 } }).png().toBuffer();
}

function cross(a: number[], b: number[]): [number, number, number] {
  return [a[1]! * b[2]! - a[2]! * b[1]!, a[2]! * b[0]! - a[0]! * b[2]!, a[0]! * b[1]! - a[1]! * b[0]!];
}

function normalize3(v: number[]): [number, number, number] {
  const len = Math.hypot(v[0]!, v[1]!, v[2]!) || 1;
  return [v[0]! / len, v[1]! / len, v[2]! / len];
}
