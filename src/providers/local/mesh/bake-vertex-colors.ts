import type { Document } from '@gltf-transform/core';
import sharp from 'sharp';
import { meshNodes, readArrays, writeArrays } from './mesh-common.ts';

/** COLOR_0 from the base colour factor times the base-colour texture at each vertex's UV. */
export async function bakeVertexColors(doc: Document): Promise<void> {
  for (const node of meshNodes(doc)) {
    for (const prim of node.getMesh()!.listPrimitives()) {
      const arrays = readArrays(prim);
      const material = prim.getMaterial();
      const factor = material?.getBaseColorFactor() ?? [1, 1, 1, 1];
      const image = material?.getBaseColorTexture()?.getImage();
      const pixels = image ? await sharp(Buffer.from(image)).removeAlpha().raw().toBuffer({ resolveWithObject: true }) : null;
      const colors = new Float32Array(arrays.positions.length);
      for (let v = 0; v < colors.length / 3; v++) {
        let rgb = [1, 1, 1];
        if (pixels && arrays.uvs) {
          const { width, height } = pixels.info;
          const x = Math.min(width - 1, Math.max(0, Math.floor((arrays.uvs[v * 2]! % 1) * width)));
          const y = Math.min(height - 1, Math.max(0, Math.floor((arrays.uvs[v * 2 + 1]! % 1) * height)));
          const o = (y * width + x) * 3;
          rgb = [pixels.data[o]! / 255, pixels.data[o + 1]! / 255, pixels.data[o + 2]! / 255];
        }
        for (let k = 0; k < 3; k++) colors[v * 3 + k] = rgb[k]! * factor[k]!;
      }
      writeArrays(doc, prim, { ...arrays, colors });
    }
  }
}
