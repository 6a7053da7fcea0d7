import { Readable } from 'node:stream';
import type { DbHandle } from '../storage/db-handle.ts';
import type { AssetsRepo } from '../storage/repos/assets-repo.ts';
import type { AssetRefRow } from '../storage/schema.ts';
import type { AssetContext } from './asset-context.ts';
import { contentKey } from './asset-hash.ts';
import { AssetIngest } from './asset-ingest.ts';
import { normalizeSubfolder, safeFileName } from './asset-names.ts';
import type { AssetJson } from './asset-record.ts';
import { AssetRecords } from './asset-records.ts';

export interface OutputSpec {
  userId: string;
  /** The task id; shown as job_id (and prompt_id). */
  jobId: string;
  fileName: string;
  mimeType: string;
  subfolder?: string;
}

export interface RegisterOutputSpec extends OutputSpec {
  source: Readable | Buffer;
}

/** A task output's bytes, stored under their hash before the transaction that records them (storeOutput). */
export interface StoredOutputContent {
  hash: string;
  size: number;
  /** The bytes were new to the store (dropOutput removes them when no record came to use them). */
  stored: boolean;
}

/**
 * Generated task outputs as the owner's assets: tag `output`, job_id = the task id, a file name
 * already taken under output/subfolder numbered (`a (1).png`).
 */
export class AssetOutputs {
  private readonly ingest: AssetIngest;

  constructor(private readonly ctx: AssetContext) {
    this.ingest = new AssetIngest(ctx);
  }

  /** Stores a task output's bytes under their hash; recordOutput records them in the transaction that ends the task. */
  async storeOutput(source: Readable | Buffer): Promise<StoredOutputContent> {
    const ingested = await this.ingest.ingest(Buffer.isBuffer(source) ? Readable.from([source]) : source);
    return { hash: ingested.hash, size: ingested.size, stored: await this.ingest.store(ingested) };
  }

  /** Registers stored output bytes as the user's asset, writing through `db` (the transaction that ends the task). */
  async recordOutput(db: DbHandle, content: StoredOutputContent, spec: OutputSpec): Promise<void> {
    await this.createRecord(this.ctx.repo.in(db), content, spec);
  }

  /** Removes output bytes that no record came to use (the task's end was not written). */
  async dropOutput(content: StoredOutputContent): Promise<void> {
    if (content.stored && !(await this.ctx.repo.hasContent(content.hash))) await this.ctx.blobs.delete(contentKey(content.hash));
  }

  /** storeOutput and recordOutput in a transaction of their own, for an output that ends no task. */
  async registerOutput(spec: RegisterOutputSpec): Promise<AssetJson> {
    const content = await this.storeOutput(spec.source);
    try {
      const row = await this.ctx.repo.transaction((repo) => this.createRecord(repo, content, spec));
      return await new AssetRecords(this.ctx).json(spec.userId, row);
    } catch (err) {
      await this.dropOutput(content);
      throw err;
    }
  }

  /** The content row and the record, written through `repo` (one bound to a transaction). */
  private async createRecord(repo: AssetsRepo, content: StoredOutputContent, spec: OutputSpec): Promise<AssetRefRow> {
    const fileName = safeFileName(spec.fileName, 'fileName');
    const subfolder = normalizeSubfolder(spec.subfolder);
    const ctx = { ...this.ctx, repo };
    await new AssetIngest(ctx).record(content, content.stored);
    const { row } = await new AssetRecords(ctx).createAtFreeLocation(spec.userId, {
      hash: content.hash,
      size: content.size,
      fileName,
      subfolder,
      root: 'output',
      mimeType: spec.mimeType || null,
      tags: ['output'],
      userMetadata: {},
      systemMetadata: { source: 'output', filename: fileName, ...(subfolder ? { subfolder } : {}) },
      jobId: spec.jobId,
    });
    return row;
  }
}
