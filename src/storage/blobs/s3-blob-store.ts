import { PassThrough, pipeline, type Readable } from 'node:stream';
import { CopyObjectCommand, DeleteObjectCommand, GetObjectCommand, HeadBucketCommand, HeadObjectCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
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

/** Size of one part of a multipart upload (the S3 minimum); at most PART_QUEUE parts are in memory per upload. */
const PART_BYTES = 8 * 1024 * 1024;
const PART_QUEUE = 2;
/** Streams served through the gateway hold a connection each while they last. */
const MAX_SOCKETS = 256;

function isNotFound(err: unknown): boolean {
  return err instanceof S3ServiceException && (err.name === 'NoSuchKey' || err.name === 'NotFound' || err.$metadata.httpStatusCode === 404);
}

/**
 * Blob store in an S3 bucket. Writes go through lib-storage's Upload: small values as one
 * PutObject, larger ones as a multipart upload streamed part by part. Neither is visible under
 * its key before it completes, so a process killed mid-write leaves no half value behind (only
 * an unfinished multipart upload, which the bucket's AbortIncompleteMultipartUpload rule removes).
 */
export class S3BlobStore implements BlobStore {
  private readonly client: S3Client;

  constructor(private readonly opts: S3BlobStoreOptions) {
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

  async put(key: string, source: Readable | Buffer): Promise<number> {
    let size = 0;
    let body: Buffer | PassThrough;
    let sourceError: unknown;
    if (Buffer.isBuffer(source)) {
      size = source.length;
      body = source;
    } else {
      const counted = new PassThrough();
      counted.on('data', (chunk: Buffer) => (size += chunk.length));
      // A failing source fails the upload through the counted stream (and aborts a multipart upload).
      pipeline(source, counted, (err) => (sourceError = err));
      body = counted;
    }
    const upload = new Upload({ client: this.client, params: { Bucket: this.opts.bucket, Key: key, Body: body }, partSize: PART_BYTES, queueSize: PART_QUEUE });
    try {
      await upload.done();
    } catch (err) {
      // The source's own error (e.g. a size limit) says more than a failed abort of the multipart upload.
      throw sourceError ?? err;
    }
    return size;
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
