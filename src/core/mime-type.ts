import mime from 'mime-types';

/** Content type from the file name, else from the leading bytes for the common image kinds. */
export function guessMimeType(fileName: string | undefined, head?: Buffer): string {
  const byName = fileName ? mime.lookup(fileName) : false;
  if (byName) return byName;
  if (head) {
    if (head.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'image/png';
    if (head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return 'image/jpeg';
    if (head.subarray(0, 4).toString('latin1') === 'RIFF' && head.subarray(8, 12).toString('latin1') === 'WEBP') return 'image/webp';
    if (head.subarray(0, 4).toString('latin1') === 'GIF8') return 'image/gif';
  }
  return 'application/octet-stream';
}
