import type { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
  UploadPartCommand,
  type CompletedPart,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { BlobStore, PresignOptions } from './blob-store.ts';

export interface S3BlobStoreOptions {
  bucket: string;
  /** Any S3-compatible server (Garage, SeaweedFS, MinIO, R2…); unset means AWS S3 itself. */
  endpoint: string | undefined;
  region: string;
  /** `http://host/bucket/key` instead of `http://bucket.host/key`; most self-hosted servers need it. */
  forcePathStyle: boolean;
}

/** Size of the parts of a multipart upload (S3 wants at least 5 MiB for all but the last). */
const PART_BYTES = 8 * 1024 * 1024;
/** Streams served through the gateway hold a connection each while they last. */
const MAX_SOCKETS = 256;

/** The source cut into PART_BYTES buffers (the last one shorter), each filled in place; nothing for an empty source. */
async function* partsOf(source: AsyncIterable<Buffer> | Iterable<Buffer>): AsyncGenerator<Buffer> {
  let part = Buffer.allocUnsafe(PART_BYTES);
  let filled = 0;
  for await (const chunk of source) {
    for (let offset = 0; offset < chunk.length;) {
      const copied = chunk.copy(part, filled, offset);
      filled += copied;
      offset += copied;
      if (filled === PART_BYTES) {
        yield part;
        part = Buffer.allocUnsafe(PART_BYTES);
        filled = 0;
      }
    }
  }
  if (filled > 0) yield part.subarray(0, filled);
}

function isNotFound(err: unknown): boolean {
  return err instanceof S3ServiceException && (err.name === 'NoSuchKey' || err.name === 'NotFound' || err.$metadata.httpStatusCode === 404);
}

/**
 * Blob store in an S3 bucket. Values are written as multipart uploads streamed part by part,
 * invisible under their key until completed: a process killed mid-write leaves no half value
 * behind, only an unfinished upload, which the bucket's AbortIncompleteMultipartUpload rule removes.
 */
export class S3BlobStore implements BlobStore {
  private readonly client: S3Client;

  private readonly opts: S3BlobStoreOptions;

  constructor(opts: S3BlobStoreOptions) {
    this.opts = opts;
    this.client = new S3Client({
      region: opts.region,
      endpoint: opts.endpoint,
      forcePathStyle: opts.forcePathStyle,
      // The SDK's default streamed uploads use aws-chunked framing with trailing checksums, which
      // several S3-compatible servers store verbatim or refuse; plain bodies work everywhere.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      requestHandler: { httpAgent: { keepAlive: true, maxSockets: MAX_SOCKETS }, httpsAgent: { keepAlive: true, maxSockets: MAX_SOCKETS } },
    });
  }

  /** Fails when the bucket cannot be reached with the configured endpoint and credentials. */
  async check(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.opts.bucket }));
    } catch (err) {
      const status = err instanceof S3ServiceException ? ` (HTTP ${err.$metadata.httpStatusCode ?? '?'} ${err.name})` : '';
      throw new Error(`S3 bucket ${this.opts.bucket} at ${this.opts.endpoint ?? 'AWS S3'} is not usable${status}: ${(err as Error).message}`, { cause: err });
    }
  }

  /**
   * Always a multipart upload, even for a single small part: the object appears only at
   * CompleteMultipartUpload. A plain PutObject cut off mid-body is refused by AWS S3, but some
   * S3-compatible servers store the bytes that arrived, so a killed writer would leave half an
   * object under the key. One part is uploaded while the next is read, so at most two are in memory.
   */
  async put(key: string, source: Readable | Buffer): Promise<number> {
    const target = { Bucket: this.opts.bucket, Key: key };
    const parts = partsOf(Buffer.isBuffer(source) ? [source] : source);
    const first = await parts.next();
    // No bytes: there is no half of nothing, and multipart uploads need a part with bytes.
    if (first.done) {
      await this.client.send(new PutObjectCommand({ ...target, Body: Buffer.alloc(0) }));
      return 0;
    }
    const { UploadId } = await this.client.send(new CreateMultipartUploadCommand(target));
    const uploaded: CompletedPart[] = [];
    let size = 0;
    let inFlight: Promise<void> = Promise.resolve();
    const send = (PartNumber: number, Body: Buffer) => {
      const sending = this.client.send(new UploadPartCommand({ ...target, UploadId, PartNumber, Body })).then((res) => {
        uploaded.push({ PartNumber, ETag: res.ETag });
      });
      // Awaited before the next part or the end; marked handled so reading meanwhile is safe.
      sending.catch(() => undefined);
      return sending;
    };
    try {
      let part: IteratorResult<Buffer> = first;
      for (let number = 1; !part.done; number++) {
        await inFlight;
        size += part.value.length;
        inFlight = send(number, part.value);
        part = await parts.next();
      }
      await inFlight;
      uploaded.sort((a, b) => a.PartNumber! - b.PartNumber!);
      await this.client.send(new CompleteMultipartUploadCommand({ ...target, UploadId, MultipartUpload: { Parts: uploaded } }));
      return size;
    } catch (err) {
      // Stops reading a source that is still open (a part failed to upload).
      await parts.return(undefined);
      // Best effort: the bucket's AbortIncompleteMultipartUpload rule removes what is left.
      await this.client.send(new AbortMultipartUploadCommand({ ...target, UploadId })).catch(() => undefined);
      throw err;
    }
  }

  async open(key: string): Promise<Readable | undefined> {
    try {
      const res = await this.client.send(new GetObjectCommand({ Bucket: this.opts.bucket, Key: key }));
      return res.Body as Readable;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async size(key: string): Promise<number | undefined> {
    try {
      return (await this.client.send(new HeadObjectCommand({ Bucket: this.opts.bucket, Key: key }))).ContentLength;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** A server-side copy, then the delete (values here stay under CopyObject's 5 GB limit). */
  async move(from: string, to: string): Promise<void> {
    const source = `${this.opts.bucket}/${from.split('/').map(encodeURIComponent).join('/')}`;
    await this.client.send(new CopyObjectCommand({ Bucket: this.opts.bucket, Key: to, CopySource: source }));
    await this.delete(from);
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.opts.bucket, Key: key }));
  }

  presign(key: string, opts: PresignOptions): Promise<string> {
    const command = new GetObjectCommand({
      Bucket: this.opts.bucket,
      Key: key,
      ResponseContentType: opts.contentType,
      ResponseContentDisposition: opts.contentDisposition,
      ResponseCacheControl: opts.cacheControl,
    });
    return getSignedUrl(this.client, command, { expiresIn: opts.ttlSeconds });
  }

  close(): void {
    this.client.destroy();
  }
}
