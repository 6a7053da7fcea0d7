import type { Readable } from 'node:stream';
import { newSecret } from '../core/ids.ts';
import type { BlobStore, PresignOptions } from '../storage/blobs/blob-store.ts';
import type { DbHandle } from '../storage/db-handle.ts';
import type { FilesRepo } from '../storage/repos/files-repo.ts';
import type { FileRow } from '../storage/schema.ts';

export interface StoredFile {
  id: string;
  fileName: string;
  mimeType: string;
  size: number;
  url: string;
  expiresAt: number;
}

/** The expiry of an output kept forever (OUTPUT_RETENTION_DAYS unset): the last time a Date can hold. */
export const NEVER_EXPIRES = 8_640_000_000_000_000;

/** What ties a served file to the task whose output it is (see OutputRetention in tasks/output-retention.ts). */
export interface OutputFile {
  taskId: string;
  /** The asset content the file shares. */
  contentHash: string;
  /** Epoch ms; NEVER_EXPIRES when outputs are kept forever. */
  expiresAt: number;
}

export interface PendingFile {
  id: string;
  blobKey: string;
  size: number;
}

export interface OpenedFile {
  row: FileRow;
  stream: Readable;
}

/** Where a file's own bytes live; a file over shared bytes (FileService.share) points elsewhere. */
function ownBlobKey(id: string): string {
  return `files/${id}`;
}

/**
 * Temporary files served without a token under unguessable URLs: uploads
 * and generated outputs, deleted after the retention period.
 */
export class FileService {
  private readonly repo: FilesRepo;
  private readonly blobs: BlobStore;
  private readonly opts: { publicBaseUrl: () => string; retentionMs: number };

  constructor(
    repo: FilesRepo,
    blobs: BlobStore,
    opts: { publicBaseUrl: () => string; retentionMs: number },
  ) {
    this.repo = repo;
    this.blobs = blobs;
    this.opts = opts;
  }

  urlOf(id: string, fileName: string): string {
    return `${this.opts.publicBaseUrl()}/files/${id}/${encodeURIComponent(fileName)}`;
  }

  /** Writes bytes that are not yet registered (their name may only be known after them). */
  async write(source: Readable | Buffer): Promise<PendingFile> {
    const id = newSecret(18);
    const blobKey = ownBlobKey(id);
    const size = await this.blobs.put(blobKey, source);
    return { id, blobKey, size };
  }

  /**
   * A file to register over bytes already in the store under blobKey, kept there by their owner
   * (a task output's asset content): nothing is written, and expiry leaves the bytes alone. Not
   * for discard: the bytes are not the file's to delete.
   */
  share(blobKey: string, size: number): PendingFile {
    return { id: newSecret(18), blobKey, size };
  }

  /** The first bytes of written content, for sniffing its type. */
  async head(pending: PendingFile, bytes = 16): Promise<Buffer> {
    const stream = await this.blobs.open(pending.blobKey);
    if (!stream) return Buffer.alloc(0);
    const chunks: Buffer[] = [];
    let length = 0;
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      length += chunk.length;
      if (length >= bytes) break;
    }
    stream.destroy();
    return Buffer.concat(chunks).subarray(0, bytes);
  }

  /** Drops written content that will not be registered. */
  async discard(pending: PendingFile): Promise<void> {
    await this.blobs.delete(pending.blobKey);
  }

  /**
   * Makes written content a served file of the user, live for the retention period (a task
   * output: until its own expiry); with `db` (a transaction in progress) its row is written in
   * that transaction.
   */
  async register(userId: string, pending: PendingFile, fileName: string, mimeType: string, db?: DbHandle, output?: OutputFile): Promise<StoredFile> {
    const now = Date.now();
    const row: FileRow = {
      id: pending.id, user_id: userId, file_name: fileName, mime_type: mimeType, size: pending.size, blob_key: pending.blobKey, created_at: now,
      expires_at: output?.expiresAt ?? now + this.opts.retentionMs,
      task_id: output?.taskId ?? null,
      content_hash: output?.contentHash ?? null,
      expired_at: null,
      sweep_at: output ? output.expiresAt : null,
    };
    await (db ? this.repo.in(db) : this.repo).insert(row);
    return { id: row.id, fileName, mimeType, size: row.size, url: this.urlOf(row.id, fileName), expiresAt: row.expires_at };
  }

  /** Writes and registers in one step, for content whose name is known up front. */
  async store(userId: string, source: Readable | Buffer, fileName: string, mimeType: string): Promise<StoredFile> {
    return this.register(userId, await this.write(source), fileName, mimeType);
  }

  /**
   * The live file with that id and name, or undefined (unknown, expired or renamed). An output
   * past its expiry is still live while its content is also an asset of its owner's.
   */
  async find(id: string, fileName: string): Promise<FileRow | undefined> {
    const row = await this.repo.findLive(id, Date.now());
    return row && row.file_name === fileName ? row : undefined;
  }

  /** Whether that id and name were a task output that has expired (410 file_expired, where an expired upload is unknown). */
  async isExpiredOutput(id: string, fileName: string): Promise<boolean> {
    const row = await this.repo.findOutput(id);
    return row !== undefined && row.file_name === fileName && (row.expired_at !== null || row.expires_at <= Date.now());
  }

  /** The live file with that id and name and its bytes, or undefined. */
  async open(id: string, fileName: string): Promise<OpenedFile | undefined> {
    const row = await this.find(id, fileName);
    const stream = row && (await this.read(row));
    return row && stream ? { row, stream } : undefined;
  }

  /** The bytes of a file found with find, or undefined when they are gone. */
  read(row: FileRow): Promise<Readable | undefined> {
    return this.blobs.open(row.blob_key);
  }

  /** A URL of the blob store serving the file's bytes (FILES_DELIVERY=redirect); only stores with presign have one. */
  async presignedUrl(row: FileRow, opts: PresignOptions): Promise<string> {
    if (!this.blobs.presign) throw new Error('this blob store has no presigned URLs');
    return this.blobs.presign(row.blob_key, opts);
  }

  /** Up to `limit` task outputs the retention sweep is due to look at (tasks/output-retention.ts). */
  dueOutputs(now: number, limit: number): Promise<FileRow[]> {
    return this.repo.listDueOutputs(now, limit);
  }

  /** Whether an expired output's content is also a live asset of its owner (made by a user, not as a task output): it is kept then. */
  isHeldByAsset(id: string): Promise<boolean> {
    return this.repo.isHeldByAsset(id);
  }

  /** Looks at a kept output again at `at`. */
  sweepLater(id: string, at: number): Promise<void> {
    return this.repo.sweepLater(id, at);
  }

  /** Retires an expired output: its URL answers 410 from now on; false when another instance did it first. */
  retire(id: string, now = Date.now()): Promise<boolean> {
    return this.repo.retire(id, now);
  }

  /** Deletes expired files other than task outputs (their own bytes first, then the row); answers how many went. */
  async sweep(now = Date.now()): Promise<number> {
    let removed = 0;
    for (;;) {
      const batch = await this.repo.listExpiredUploads(now, 500);
      for (const row of batch) {
        if (row.blob_key === ownBlobKey(row.id)) await this.blobs.delete(row.blob_key);
        await this.repo.delete(row.id);
      }
      removed += batch.length;
      if (batch.length < 500) return removed;
    }
  }
}
