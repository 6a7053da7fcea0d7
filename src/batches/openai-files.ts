/**
 * OpenAI's Files API: a user's files in the blob store, their rows in the database. Uploads are
 * batch inputs (`purpose: "batch"`); batches write their output and error files here
 * (`batch_output`). Bytes are streamed in and out, never held whole.
 */
import type { Readable } from 'node:stream';
import { ApiError } from '../core/errors.ts';
import { newId } from '../core/ids.ts';
import type { BlobStore } from '../storage/blobs/blob-store.ts';
import type { OpenAiFilesRepo } from '../storage/repos/openai-files-repo.ts';
import type { OpenAiFileRow } from '../storage/schema.ts';

/** The largest upload, as OpenAI's Batch API takes. */
export const OPENAI_FILE_MAX_BYTES = 200 * 1024 * 1024;
/** Purposes a caller may upload with. */
export const UPLOAD_PURPOSES = ['batch'] as const;

/** OpenAI's `file` object. */
export interface OpenAiFileObject {
  id: string;
  object: 'file';
  bytes: number;
  created_at: number;
  filename: string;
  purpose: string;
  status: 'processed';
  status_details: null;
  expires_at: null;
}

export function toUnixSeconds(ms: number): number {
  return Math.floor(ms / 1000);
}

export function fileObject(row: OpenAiFileRow): OpenAiFileObject {
  return {
    id: row.id,
    object: 'file',
    bytes: Number(row.bytes),
    created_at: toUnixSeconds(Number(row.created_at)),
    filename: row.filename,
    purpose: row.purpose,
    status: 'processed',
    status_details: null,
    expires_at: null,
  };
}

/** Bytes written to the blob store under a new file id, not yet a row. */
export interface WrittenFile {
  id: string;
  blobKey: string;
  bytes: number;
}

const notFound = (id: string) => new ApiError('file_not_found', `No such File object: ${id}`, 'file_id');

export class OpenAiFileService {
  private readonly repo: OpenAiFilesRepo;
  private readonly blobs: BlobStore;

  constructor(
    repo: OpenAiFilesRepo,
    blobs: BlobStore,
  ) {
    this.repo = repo;
    this.blobs = blobs;
  }

  /** Streams bytes to the store under a new file id (`key` names it, for a batch's output that is written again after a crash). */
  async write(source: Readable | Buffer, key?: string): Promise<WrittenFile> {
    const id = key ?? newId('file');
    const blobKey = `openai-files/${id}`;
    return { id, blobKey, bytes: await this.blobs.put(blobKey, source) };
  }

  async discard(written: WrittenFile): Promise<void> {
    await this.blobs.delete(written.blobKey);
  }

  /** The row of written bytes as a file of the user. */
  rowOf(userId: string, written: WrittenFile, filename: string, purpose: string, now = Date.now()): OpenAiFileRow {
    return { id: written.id, user_id: userId, purpose, filename, bytes: written.bytes, blob_key: written.blobKey, created_at: now };
  }

  async register(userId: string, written: WrittenFile, filename: string, purpose: string): Promise<OpenAiFileObject> {
    const row = this.rowOf(userId, written, filename, purpose);
    await this.repo.insert(row);
    return fileObject(row);
  }

  objectOf(row: OpenAiFileRow): OpenAiFileObject {
    return fileObject(row);
  }

  /** The user's file, or 404 file_not_found (another user's files are not there for them). */
  async find(userId: string, id: string): Promise<OpenAiFileRow> {
    const row = await this.repo.find(userId, id);
    if (!row) throw notFound(id);
    return row;
  }

  async list(userId: string, query: { after?: string; limit?: number; purpose?: string }): Promise<{ object: 'list'; data: OpenAiFileObject[]; first_id: string | null; last_id: string | null; has_more: boolean }> {
    const limit = query.limit ?? 10_000;
    const after = query.after === undefined ? undefined : await this.find(userId, query.after);
    const rows = await this.repo.list(userId, { limit: limit + 1, ...(after ? { after } : {}), ...(query.purpose !== undefined ? { purpose: query.purpose } : {}) });
    const data = rows.slice(0, limit).map(fileObject);
    return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: rows.length > limit };
  }

  /** The bytes of the user's file (any user's without one: the admin's reads), streamed. */
  async content(userId: string | undefined, id: string): Promise<{ row: OpenAiFileRow; stream: Readable }> {
    const row = userId === undefined ? await this.repo.get(id) : await this.repo.find(userId, id);
    if (!row) throw notFound(id);
    const stream = await this.blobs.open(row.blob_key);
    if (!stream) throw notFound(id);
    return { row, stream };
  }

  /** Opens the bytes of a file found before (a batch's input); undefined when they are gone. */
  open(row: OpenAiFileRow): Promise<Readable | undefined> {
    return this.blobs.open(row.blob_key);
  }

  async delete(userId: string, id: string): Promise<{ id: string; object: 'file'; deleted: true }> {
    const row = await this.find(userId, id);
    if (!(await this.repo.delete(userId, id))) throw notFound(id);
    await this.blobs.delete(row.blob_key);
    return { id, object: 'file', deleted: true };
  }
}
