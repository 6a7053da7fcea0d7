import type { Material, Texture } from '@gltf-transform/core';
import { positionRemap, type WorldPart } from './mesh-common.ts';
import type { EncodedTexture } from './encode-texture.ts';
import { storedZip } from './stored-zip.ts';

export interface Write3mfOptions {
  /** Encoded texture files (PNG or JPEG) by glTF texture, placed under /3D/Textures. */
  textures: Map<Texture, EncodedTexture & { fileName: string }>;
}

const CORE = 'http://schemas.microsoft.com/3dmanufacturing/core/2015/02';
const MATERIALS = 'http://schemas.microsoft.com/3dmanufacturing/material/2015/02';

/**
 * A 3MF package: [Content_Types].xml, the root relationship and 3D/3dmodel.model with one mesh
 * object per part (vertices welded, Z up, metres), colours as base materials and textures
 * through the materials extension's texture2d groups.
 */
export function write3mf(parts: WorldPart[], options: Write3mfOptions): Buffer {
  const num = (x: number) => String(Number(x.toFixed(6)));
  const escape = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
  const hex = (c: number) => Math.round(Math.min(1, Math.max(0, c)) * 255).toString(16).padStart(2, '0').toUpperCase();
  let nextId = 1;
  const resources: string[] = [];
  const objects: string[] = [];
  const textureIds = new Map<Texture, number>();
  const colorIds = new Map<Material | null, number>();
  const files: { name: string; data: Buffer }[] = [];

  for (const part of parts) {
    const material = part.material;
    if (!colorIds.has(material)) {
      const [r, g, b, a] = material?.getBaseColorFactor() ?? [0.8, 0.8, 0.8, 1];
      const id = nextId++;
      colorIds.set(material, id);
      resources.push(`  <basematerials id="${id}"><base name="${escape(material?.getName() || 'material')}" displaycolor="#${hex(r)}${hex(g)}${hex(b)}${hex(a)}"/></basematerials>`);
    }
    const texture = material?.getBaseColorTexture();
    const file = texture ? options.textures.get(texture) : undefined;
    if (texture && file && !textureIds.has(texture)) {
      const id = nextId++;
      textureIds.set(texture, id);
      files.push({ name: `3D/Textures/${file.fileName}`, data: file.data });
      resources.push(`  <m:texture2d id="${id}" path="/3D/Textures/${file.fileName}" contenttype="${file.mimeType}"/>`);
    }
    const { positions, indices, uvs } = part.arrays;
    const remap = positionRemap(positions);
    const vertexOf = new Int32Array(remap.length).fill(-1);
    const vertices: string[] = [];
    for (let v = 0; v < remap.length; v++) {
      if (remap[v] !== v) continue;
      vertexOf[v] = vertices.length;
      // glTF is Y up; 3MF is Z up.
      vertices.push(`<vertex x="${num(positions[v * 3]!)}" y="${num(-positions[v * 3 + 2]!)}" z="${num(positions[v * 3 + 1]!)}"/>`);
    }
    const textured = texture && file && uvs;
    let groupId = 0;
    if (textured) {
      groupId = nextId++;
      const coords: string[] = [];
      for (let v = 0; v < uvs.length / 2; v++) coords.push(`<m:tex2coord u="${num(uvs[v * 2]!)}" v="${num(1 - uvs[v * 2 + 1]!)}"/>`);
      resources.push(`  <m:texture2dgroup id="${groupId}" texid="${textureIds.get(texture)}">${coords.join('')}</m:texture2dgroup>`);
    }
    const triangles: string[] = [];
    for (let t = 0; t < indices.length; t += 3) {
      const [a, b, c] = [indices[t]!, indices[t + 1]!, indices[t + 2]!];
      const [v1, v2, v3] = [vertexOf[remap[a]!]!, vertexOf[remap[b]!]!, vertexOf[remap[c]!]!];
      if (v1 === v2 || v2 === v3 || v1 === v3) continue;
      triangles.push(`<triangle v1="${v1}" v2="${v2}" v3="${v3}"${textured ? ` pid="${groupId}" p1="${a}" p2="${b}" p3="${c}"` : ''}/>`);
    }
    const id = nextId++;
    resources.push(`  <object id="${id}" type="model" name="${escape(part.name)}" pid="${colorIds.get(material)}" pindex="0"><mesh><vertices>${vertices.join('')}</vertices><triangles>${triangles.join('')}</triangles></mesh></object>`);
    objects.push(`  <item objectid="${id}"/>`);
  }

  const model = `<?xml version="1.0" encoding="UTF-8"?>\n<model unit="meter" xml:lang="en-US" xmlns="${CORE}" xmlns:m="${MATERIALS}">\n <metadata name="Application">Gengate local mesh engine</metadata>\n <resources>\n${resources.join('\n')}\n </resources>\n <build>\n${objects.join('\n')}\n </build>\n</model>\n`;
  const contentTypes = `<?xml version="1.0" encoding="UTF-8"?>\n<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="model" ContentType="application/vnd.ms-package.3dmanufacturing-3dmodel+xml"/><Default Extension="png" ContentType="application/vnd.ms-package.3dmanufacturing-3dmodeltexture"/><Default Extension="jpg" ContentType="application/vnd.ms-package.3dmanufacturing-3dmodeltexture"/></Types>\n`;
  const rels = `<?xml version="1.0" encoding="UTF-8"?>\n<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Target="/3D/3dmodel.model" Id="rel0" Type="http://schemas.microsoft.com/3dmanufacturing/2013/01/3dmodel"/></Relationships>\n`;
  const textureRels = files.map((f, i) => `<Relationship Target="/${f.name}" Id="tex${i}" Type="http://schemas.microsoft.com/3dmanufacturing/2013/01/3dtexture"/>`).join('');
  const entries = [
    { name: '[Content_Types].xml', data: Buffer.from(contentTypes) },
    { name: '_rels/.rels', data: Buffer.from(rels) },
    { name: '3D/3dmodel.model', data: Buffer.from(model) },
    ...(files.length > 0 ? [{ name: '3D/_rels/3dmodel.model.rels', data: Buffer.from(`<?xml version="1.0" encoding="UTF-8"?>\n<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">${textureRels}</Relationships>\n`) }] : []),
    ...files,
  ];
  return storedZip(entries);
}
