import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { contentKey, looksLikeAssetHash } from '../assets/asset-hash.ts';
import type { AssetService } from '../assets/asset-service.ts';
import { guessMimeType } from '../core/mime-type.ts';
import type { FileService } from '../files/file-service.ts';
import type { BlobStore } from '../storage/blobs/blob-store.ts';
import type { InputFile } from '../providers/spec.ts';

/** A reference in a request that cannot be read; the task fails with this message. */
export class InputUnavailableError extends Error {}

const DATA_URI = /^data:([^;,]*)(;base64)?,/i;

/**
 * Reads the media a request points at, for engines: the gateway's own file URLs and asset
 * hashes straight from the store (so the offline engine never needs the network), data URIs,
 * and remote http(s) URLs, every one bounded by the file size limit.
 */
export class InputReader {
  constructor(
    private readonly deps: { files: FileService; assets: AssetService; blobs: BlobStore; maxBytes: number; fetchTimeoutMs: number },
  ) {}

  async read(ownerId: string, ref: string): Promise<InputFile> {
    const file = await this.readRef(ownerId, ref.trim());
    if (file.data.length > this.deps.maxBytes) throw new InputUnavailableError(`input ${describe(ref)} is larger than ${this.deps.maxBytes} bytes`);
    return file;
  }

  private async readRef(ownerId: string, ref: string): Promise<InputFile> {
    const dataUri = DATA_URI.exec(ref);
    if (dataUri) {
      const body = ref.slice(dataUri[0].length);
      const data = dataUri[2] ? Buffer.from(body, 'base64') : Buffer.from(decodeURIComponent(body), 'utf8');
      const mimeType = dataUri[1] || guessMimeType(undefined, data);
      return { data, mimeType, fileName: 'input' };
    }
    if (looksLikeAssetHash(ref)) {
      if (!(await this.deps.assets.hashExists(ownerId, ref))) throw new InputUnavailableError(`no asset with content ${ref}`);
      const stream = await this.deps.blobs.open(contentKey(ref));
      if (!stream) throw new InputUnavailableError(`the content ${ref} is missing`);
      const data = await buffer(stream);
      return { data, mimeType: guessMimeType(undefined, data), fileName: ref.slice('blake3:'.length, 'blake3:'.length + 16) };
    }
    let url: URL;
    try {
      url = new URL(ref);
    } catch {
      throw new InputUnavailableError(`input ${describe(ref)} is neither a URL, a data URI nor an asset hash`);
    }
    const own = await this.ownFile(url);
    if (own) return own;
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InputUnavailableError(`input URL scheme ${url.protocol} is not supported`);
    return this.fetchRemote(url);
  }

  /** A URL of this gateway's file store (`…/files/<id>/<name>`), read without a request. */
  private async ownFile(url: URL): Promise<InputFile | undefined> {
    const probe = this.deps.files.urlOf('ID', 'NAME');
    const prefix = probe.slice(0, probe.indexOf('/files/ID/') + '/files/'.length);
    if (!url.href.startsWith(prefix)) return undefined;
    const [id, name] = url.href.slice(prefix.length).split('?')[0]!.split('/');
    if (!id || !name) return undefined;
    const opened = await this.deps.files.open(id, decodeURIComponent(name));
    if (!opened) throw new InputUnavailableError(`file ${url.href} does not exist or has expired`);
    return { data: await buffer(opened.stream), mimeType: opened.row.mime_type, fileName: opened.row.file_name };
  }

  private async fetchRemote(url: URL): Promise<InputFile> {
    let res: Response;
    try {
      res = await fetch(url, { signal: AbortSignal.timeout(this.deps.fetchTimeoutMs), redirect: 'follow' });
    } catch (err) {
      throw new InputUnavailableError(`cannot fetch ${url.href}: ${(err as Error).message}`);
    }
    if (!res.ok || !res.body) throw new InputUnavailableError(`fetching ${url.href} answered HTTP ${res.status}`);
    const declared = Number(res.headers.get('content-length') ?? 0);
    if (declared > this.deps.maxBytes) throw new InputUnavailableError(`input ${url.href} is larger than ${this.deps.maxBytes} bytes`);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of Readable.fromWeb(res.body as import('node:stream/web').ReadableStream<Uint8Array>) as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > this.deps.maxBytes) throw new InputUnavailableError(`input ${url.href} is larger than ${this.deps.maxBytes} bytes`);
      chunks.push(chunk);
    }
    const data = Buffer.concat(chunks);
    const fileName = decodeURIComponent(url.pathname.split('/').pop() || 'input');
    const header = res.headers.get('content-type')?.split(';')[0]?.trim();
    const mimeType = header && header !== 'application/octet-stream' ? header : guessMimeType(fileName, data);
    return { data, mimeType, fileName };
  }
}

function describe(ref: string): string {
  return ref.startsWith('data:') ? 'data URI' : ref.length > 120 ? `${ref.slice(0, 117)}…` : ref;
}
