import { buffer } from 'node:stream/consumers';
import { contentKey, looksLikeAssetHash } from '../assets/asset-hash.ts';
import type { AssetService } from '../assets/asset-service.ts';
import { guessMimeType } from '../core/mime-type.ts';
import type { FileService } from '../files/file-service.ts';
import type { BlobStore } from '../storage/blobs/blob-store.ts';
import type { InputFile } from '../providers/spec.ts';
import { UrlNotAllowedError, type FetchedFile, type OutboundFetcher } from './outbound-fetch.ts';

/** A reference in a request that cannot be read; the task fails with this message. */
export class InputUnavailableError extends Error {}

const DATA_URI = /^data:([^;,]*)(;base64)?,/i;

/**
 * Reads the media a request points at, for engines: the gateway's own file URLs and asset
 * hashes straight from the store (so the offline engine never needs the network), data URIs,
 * and remote http(s) URLs through the outbound URL policy, every one bounded by the file size limit.
 */
export class InputReader {
  private readonly deps: { files: FileService; assets: AssetService; blobs: BlobStore; maxBytes: number; fetcher: OutboundFetcher };

  constructor(
    deps: { files: FileService; assets: AssetService; blobs: BlobStore; maxBytes: number; fetcher: OutboundFetcher },
  ) {
    this.deps = deps;
  }

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
      if (!(await this.deps.assets.records.hashExists(ownerId, ref))) throw new InputUnavailableError(`no asset with content ${ref}`);
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

  /** A URL of this gateway's file store, read without a request. */
  private async ownFile(url: URL): Promise<InputFile | undefined> {
    const ref = ownFileRef(this.deps.files, url);
    if (!ref) return undefined;
    const opened = await this.deps.files.open(ref.id, ref.name);
    if (!opened) throw new InputUnavailableError(`file ${url.href} does not exist or has expired`);
    return { data: await buffer(opened.stream), mimeType: opened.row.mime_type, fileName: opened.row.file_name };
  }

  private async fetchRemote(url: URL): Promise<InputFile> {
    let fetched: FetchedFile;
    try {
      fetched = await this.deps.fetcher.get(url);
    } catch (err) {
      throw err instanceof UrlNotAllowedError ? err : new InputUnavailableError((err as Error).message);
    }
    const { data, contentType } = fetched;
    const fileName = decodeURIComponent(url.pathname.split('/').pop() || 'input');
    const mimeType = contentType && contentType !== 'application/octet-stream' ? contentType : guessMimeType(fileName, data);
    return { data, mimeType, fileName };
  }
}

/** The id and name of a URL of this gateway's file store (`…/files/<id>/<name>`), else undefined. */
export function ownFileRef(files: FileService, url: URL): { id: string; name: string } | undefined {
  const probe = files.urlOf('ID', 'NAME');
  const prefix = probe.slice(0, probe.indexOf('/files/ID/') + '/files/'.length);
  if (!url.href.startsWith(prefix)) return undefined;
  const [id, name] = url.href.slice(prefix.length).split('?')[0]!.split('/');
  return id && name ? { id, name: decodeURIComponent(name) } : undefined;
}

function describe(ref: string): string {
  return ref.startsWith('data:') ? 'data URI' : ref.length > 120 ? `${ref.slice(0, 117)}…` : ref;
}
