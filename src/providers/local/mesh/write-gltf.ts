import { Format, type Document } from '@gltf-transform/core';
import { meshIO } from './mesh-common.ts';

/** A self-contained .gltf: the JSON with its buffers and images inlined as base64 data URIs. */
export async function writeGltf(doc: Document): Promise<Buffer> {
  const io = await meshIO();
  const { json, resources } = await io.writeJSON(doc, { format: Format.GLTF });
  const dataURI = (uri: string | undefined, mimeType: string) => {
    const data = uri === undefined ? undefined : resources[uri];
    return data ? `data:${mimeType};base64,${Buffer.from(data).toString('base64')}` : uri;
  };
  for (const buffer of json.buffers ?? []) buffer.uri = dataURI(buffer.uri, 'application/octet-stream');
  for (const image of json.images ?? []) if (image.uri) image.uri = dataURI(image.uri, image.mimeType ?? 'image/png');
  return Buffer.from(JSON.stringify(json), 'utf8');
}
