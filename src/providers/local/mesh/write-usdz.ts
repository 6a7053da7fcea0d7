import type { Material, Texture } from '@gltf-transform/core';
import { polygonsOf, type WorldPart } from './mesh-common.ts';
import type { EncodedTexture } from './encode-texture.ts';
import { storedZip } from './stored-zip.ts';

export interface WriteUsdzOptions {
  /** Encoded texture files (PNG or JPEG) by glTF texture, placed under textures/. */
  textures: Map<Texture, EncodedTexture & { fileName: string }>;
}

/**
 * A USDZ package: model.usda first (one Mesh prim per part, Y up, metres, quads kept) with
 * UsdPreviewSurface materials, then the textures; files stored and 64-byte aligned as USDZ
 * requires.
 */
export function writeUsdz(parts: WorldPart[], options: WriteUsdzOptions): Buffer {
  const num = (x: number) => String(Number(x.toFixed(6)));
  const identifier = (name: string, used: Set<string>) => {
    let id = name.replace(/[^A-Za-z0-9_]/g, '_');
    if (!/^[A-Za-z_]/.test(id)) id = `_${id}`;
    while (used.has(id)) id = `${id}_`;
    used.add(id);
    return id;
  };
  const primNames = new Set<string>();
  const materialNames = new Map<Material | null, string>();
  const usedMaterialNames = new Set<string>();
  const files: { name: string; data: Buffer }[] = [];
  const textureFiles = new Map<Texture, string>();
  const meshes: string[] = [];
  for (const part of parts) {
    if (!materialNames.has(part.material)) materialNames.set(part.material, identifier(part.material?.getName() || 'material', usedMaterialNames));
    const { positions, normals, uvs } = part.arrays;
    const polygons = polygonsOf(part.arrays, part.quads);
    const tuples = (array: Float32Array, size: number, map: (v: number[]) => number[] = (v) => v) =>
      Array.from({ length: array.length / size }, (_, i) => `(${map(Array.from(array.subarray(i * size, i * size + size))).map(num).join(', ')})`).join(', ');
    const lines = [
      `        def Mesh "${identifier(part.name, primNames)}" (`,
      '            prepend apiSchemas = ["MaterialBindingAPI"]',
      '        )',
      '        {',
      `            int[] faceVertexCounts = [${polygons.map((p) => p.length).join(', ')}]`,
      `            int[] faceVertexIndices = [${polygons.map((p) => p.join(', ')).join(', ')}]`,
      `            rel material:binding = </Root/Materials/${materialNames.get(part.material)}>`,
      `            point3f[] points = [${tuples(positions, 3)}]`,
      ...(normals ? [`            normal3f[] normals = [${tuples(normals, 3)}] (`, '                interpolation = "vertex"', '            )'] : []),
      ...(uvs ? [`            texCoord2f[] primvars:st = [${tuples(uvs, 2, ([u, v]) => [u!, 1 - v!])}] (`, '                interpolation = "vertex"', '            )'] : []),
      '            uniform token subdivisionScheme = "none"',
      '        }',
    ];
    meshes.push(lines.join('\n'));
  }
  const materials: string[] = [];
  for (const [material, name] of materialNames) {
    const [r, g, b] = material?.getBaseColorFactor() ?? [0.8, 0.8, 0.8, 1];
    const texture = material?.getBaseColorTexture();
    const file = texture ? options.textures.get(texture) : undefined;
    const path = `/Root/Materials/${name}`;
    if (texture && file && !textureFiles.has(texture)) {
      textureFiles.set(texture, `textures/${file.fileName}`);
      files.push({ name: `textures/${file.fileName}`, data: file.data });
    }
    const diffuse = texture && file ? `            color3f inputs:diffuseColor.connect = <${path}/BaseColor.outputs:rgb>` : `            color3f inputs:diffuseColor = (${[r, g, b].map(num).join(', ')})`;
    materials.push(
      [
        `        def Material "${name}"`,
        '        {',
        `            token outputs:surface.connect = <${path}/PreviewSurface.outputs:surface>`,
        '            def Shader "PreviewSurface"',
        '            {',
        '                uniform token info:id = "UsdPreviewSurface"',
        `    ${diffuse}`,
        `                float inputs:metallic = ${num(material?.getMetallicFactor() ?? 0)}`,
        `                float inputs:roughness = ${num(material?.getRoughnessFactor() ?? 1)}`,
        '                token outputs:surface',
        '            }',
        ...(texture && file
          ? [
              '            def Shader "PrimvarReader"',
              '            {',
              '                uniform token info:id = "UsdPrimvarReader_float2"',
              '                string inputs:varname = "st"',
              '                float2 outputs:result',
              '            }',
              '            def Shader "BaseColor"',
              '            {',
              '                uniform token info:id = "UsdUVTexture"',
              `                asset inputs:file = @${textureFiles.get(texture)}@`,
              `                float2 inputs:st.connect = <${path}/PrimvarReader.outputs:result>`,
              '                token inputs:wrapS = "repeat"',
              '                token inputs:wrapT = "repeat"',
              '                float3 outputs:rgb',
              '            }',
            ]
          : []),
        '        }',
      ].join('\n'),
    );
  }
  const usda = [
    '#usda 1.0',
    '(',
    '    defaultPrim = "Root"',
    '    metersPerUnit = 1',
    '    upAxis = "Y"',
    '    doc = "Gengate local mesh engine"',
    ')',
    '',
    'def Xform "Root"',
    '{',
    '    def Scope "Geometry"',
    '    {',
    meshes.join('\n'),
    '    }',
    '',
    '    def Scope "Materials"',
    '    {',
    materials.join('\n'),
    '    }',
    '}',
    '',
  ].join('\n');
  return storedZip([{ name: 'model.usda', data: Buffer.from(usda, 'utf8') }, ...files], { align: 64 });
}
