import { pipeline, Transform, type Readable } from 'node:stream';
import { blake3, createBLAKE3 } from 'hash-wasm';
import { ApiError } from '../core/errors.ts';

const HASH = /^blake3:[0-9a-f]{64}$/;

/** `blake3:<64 hex>` (case-insensitive on input), lower-cased; throws 400 INVALID_HASH otherwise. */
export function parseAssetHash(value: string, param = 'hash'): string {
  const hash = value.trim().toLowerCase();
  if (!HASH.test(hash)) throw new ApiError('INVALID_HASH', `${param} must be blake3:<64 hex digits>`, param, {}, {}, { hash: value });
  return hash;
}

/** True for a string that looks like a content hash (used by /api/view to tell hashes from file names). */
export function looksLikeAssetHash(value: string): boolean {
  return value.trim().toLowerCase().startsWith('blake3:');
}

/** The blob key of content: `assets/<hex>`. */
export function contentKey(hash: string): string {
  return `assets/${hash.slice('blake3:'.length)}`;
}

/** The content hash of bytes held in memory. */
export async function hashOf(data: Buffer): Promise<string> {
  return `blake3:${await blake3(data)}`;
}

export interface HashTap {
  /** Pass-through stream that hashes and counts what flows through it. */
  stream: Transform;
  /** After the stream ended: `blake3:<hex>`, byte count and the first bytes (for type sniffing). */
  result(): { hash: string; size: number; head: Buffer };
}

const HEAD_BYTES = 16;

/** Streams content through blake3 (hash-wasm) without holding it in memory. */
export async function createHashTap(source: Readable): Promise<HashTap> {
  const hasher = await createBLAKE3();
  hasher.init();
  let size = 0;
  let head = Buffer.alloc(0);
  const stream = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      hasher.update(chunk);
      size += chunk.length;
      if (head.length < HEAD_BYTES) head = Buffer.concat([head, chunk.subarray(0, HEAD_BYTES - head.length)]);
      callback(null, chunk);
    },
  });
  // pipeline() (unlike pipe()) also sees a source that closes without ending, as a body cut off
  // mid-part does; the tap then fails and so does the write behind it, instead of hanging.
  pipeline(source, stream, (err) => {
    if (err) stream.destroy(err);
  });
  return { stream, result: () => ({ hash: `blake3:${hasher.digest('hex')}`, size, head }) };
}
