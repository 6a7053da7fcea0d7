import { Readable } from 'node:stream';
import type { DbHandle } from '../storage/db-handle.ts';
import type { AssetsRepo } from '../storage/repos/assets-repo.ts';
import type { AssetRefRow } from '../storage/schema.ts';
import type { AssetContext } from './asset-context.ts';
import { contentKey, hashOf } from './asset-hash.ts';
import { AssetIngest } from './asset-ingest.ts';
import { normalizeSubfolder, safeFileName } from './asset-names.ts';
import type { AssetJson } from './asset-json.ts';
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
  /**
   * Contents stored for records not yet written (nor given up), by hash, with how many wait on
   * each: dropping one output must not delete bytes another end is about to record.
   */
  private readonly waiting = new Map<string, number>();
  /** Deletions of bytes under way, by hash: an end storing the same bytes waits for it first. */
  private readonly deleting = new Map<string, Promise<void>>();

  private readonly ctx: AssetContext;

  constructor(ctx: AssetContext) {
    this.ctx = ctx;
    this.ingest = new AssetIngest(ctx);
  }

  /**
   * Stores a task output's bytes under their hash; recordOutput records them in the transaction
   * that ends the task, and then settleOutput (written) or dropOutput (not written) is called.
   */
  async storeOutput(source: Readable | Buffer): Promise<StoredOutputContent> {
    if (Buffer.isBuffer(source)) {
      // Bytes in memory are hashed first: content the store has is not written again.
      const hash = await hashOf(source);
      return this.holding(hash, async () => ({ hash, size: source.length, stored: await this.ingest.storeBytes(hash, source) }));
    }
    const ingested = await this.ingest.ingest(source);
    return this.holding(ingested.hash, async () => ({ hash: ingested.hash, size: ingested.size, stored: await this.ingest.store(ingested) }));
  }

  /** Registers stored output bytes as the user's asset, writing through `db` (the transaction that ends the task). */
  async recordOutput(db: DbHandle, content: StoredOutputContent, spec: OutputSpec): Promise<void> {
    await this.createRecord(this.ctx.repo.in(db), content, spec);
  }

  /** The record of stored output bytes was committed: it keeps them from now on. */
  settleOutput(content: StoredOutputContent): void {
    this.release(content.hash);
  }

  /** Removes output bytes that no record came to use (the task's end was not written). */
  async dropOutput(content: StoredOutputContent): Promise<void> {
    this.release(content.hash);
    if (content.stored && !this.waiting.has(content.hash) && !(await this.ctx.repo.hasContent(content.hash))) await this.deleteBytes(content.hash);
  }

  /**
   * An output reached the end of its retention: the records its task made of it go, and its
   * bytes with them unless another record (or an end about to record them) uses them.
   */
  async expireOutput(ownerId: string, jobId: string, hash: string): Promise<void> {
    await this.ctx.repo.deleteOutputRecords(ownerId, jobId, hash);
    if (!this.waiting.has(hash) && (await this.ctx.repo.deleteUnreferencedContent(hash))) await this.deleteBytes(hash);
  }

  /**
   * Deletes bytes found unused, unless an end began storing the same bytes while the store was
   * asked (it found them there and will record them); an end beginning during the deletion waits
   * for it, and so stores them again.
   */
  private async deleteBytes(hash: string): Promise<void> {
    if (this.waiting.has(hash)) return;
    const deletion = this.ctx.blobs.delete(contentKey(hash)).finally(() => {
      if (this.deleting.get(hash) === deletion) this.deleting.delete(hash);
    });
    this.deleting.set(hash, deletion);
    await deletion;
  }

  /** Runs `store` with the hash held, from before the store looks for the bytes; released when it fails. */
  private async holding(hash: string, store: () => Promise<StoredOutputContent>): Promise<StoredOutputContent> {
    this.waiting.set(hash, (this.waiting.get(hash) ?? 0) + 1);
    try {
      await this.deleting.get(hash)?.catch(() => undefined);
      return await store();
    } catch (err) {
      this.release(hash);
      throw err;
    }
  }

  private release(hash: string): void {
    const count = (this.waiting.get(hash) ?? 0) - 1;
    if (count > 0) this.waiting.set(hash, count);
    else this.waiting.delete(hash);
  }

  /** storeOutput and recordOutput in a transaction of their own, for an output that ends no task. */
  async registerOutput(spec: RegisterOutputSpec): Promise<AssetJson> {
    const content = await this.storeOutput(spec.source);
    let row: AssetRefRow;
    try {
      row = await this.ctx.repo.transaction((repo) => this.createRecord(repo, content, spec));
    } catch (err) {
      await this.dropOutput(content);
      throw err;
    }
    this.settleOutput(content);
    return new AssetRecords(this.ctx).json(spec.userId, row);
  }

  /** The content row and the record, written through `repo` (one bound to a transaction). */
  private async createRecord(repo: AssetsRepo, content: StoredOutputContent, spec: OutputSpec): Promise<AssetRefRow> {
    const fileName = safeFileName(spec.fileName, 'fileName');
    const subfolder = normalizeSubfolder(spec.subfolder);
    const ctx = { ...this.ctx, repo };
    const ingest = new AssetIngest(ctx);
    await ingest.markPresent(content, content.stored);
    const { row } = await new AssetRecords(ctx).createAtFreeLocation(spec.userId, {
      content: ingest.contentRow(content),
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
