import type { Material, Texture } from '@gltf-transform/core';
import { polygonsOf, type WorldPart } from './mesh-common.ts';
import type { EncodedTexture } from './encode-texture.ts';

export interface WriteObjOptions {
  /** Encoded texture files by glTF texture; map_Kd names them. */
  textures: Map<Texture, EncodedTexture & { fileName: string }>;
  /** `v x y z r g b` lines from the vertices' colours. */
  vertexColors: boolean;
  /** Name of the material library the OBJ refers to. */
  mtlName: string;
}

/** Wavefront OBJ and its MTL: one object per part, quads kept as four-corner faces, UVs with V up. */
export function writeObj(parts: WorldPart[], options: WriteObjOptions): { obj: string; mtl: string } {
  const num = (x: number) => String(Number(x.toFixed(6)));
  const lines = ['# Gengate local mesh engine', `mtllib ${options.mtlName}`];
  const materials = new Map<Material | null, string>();
  const materialName = (material: Material | null) => {
    if (!materials.has(material)) materials.set(material, `${material?.getName() || 'material'}_${materials.size}`);
    return materials.get(material)!;
  };
  let base = 1;
  for (const part of parts) {
    const { positions, normals, uvs, colors } = part.arrays;
    lines.push(`o ${part.name}`);
    for (let v = 0; v < positions.length / 3; v++) {
      const color = options.vertexColors && colors ? ` ${num(colors[v * 3]!)} ${num(colors[v * 3 + 1]!)} ${num(colors[v * 3 + 2]!)}` : '';
      lines.push(`v ${num(positions[v * 3]!)} ${num(positions[v * 3 + 1]!)} ${num(positions[v * 3 + 2]!)}${color}`);
    }
    if (uvs) for (let v = 0; v < uvs.length / 2; v++) lines.push(`vt ${num(uvs[v * 2]!)} ${num(1 - uvs[v * 2 + 1]!)}`);
    if (normals) for (let v = 0; v < normals.length / 3; v++) lines.push(`vn ${num(normals[v * 3]!)} ${num(normals[v * 3 + 1]!)} ${num(normals[v * 3 + 2]!)}`);
    lines.push(`usemtl ${materialName(part.material)}`);
    const corner = (v: number) => {
      const i = base + v;
      return uvs && normals ? `${i}/${i}/${i}` : uvs ? `${i}/${i}` : normals ? `${i}//${i}` : `${i}`;
    };
    for (const polygon of polygonsOf(part.arrays, part.quads)) lines.push(`f ${polygon.map(corner).join(' ')}`);
    base += positions.length / 3;
  }
  const mtl = ['# Gengate local mesh engine'];
  for (const [material, name] of materials) {
    const [r, g, b, a] = material?.getBaseColorFactor() ?? [0.8, 0.8, 0.8, 1];
    mtl.push(`newmtl ${name}`, `Kd ${num(r)} ${num(g)} ${num(b)}`, `d ${num(a)}`, `Pr ${num(material?.getRoughnessFactor() ?? 1)}`, `Pm ${num(material?.getMetallicFactor() ?? 0)}`);
    const texture = material?.getBaseColorTexture();
    const file = texture ? options.textures.get(texture) : undefined;
    if (file) mtl.push(`map_Kd ${file.fileName}`);
    mtl.push('');
  }
  return { obj: lines.join('\n') + '\n', mtl: mtl.join('\n') };
}
