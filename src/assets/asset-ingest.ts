import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { AssetContentRow } from '../storage/schema.ts';
import type { AssetContext } from './asset-context.ts';
import { contentKey, createHashTap } from './asset-hash.ts';

/** Content written to a temporary blob and hashed, not yet filed under its hash. */
export interface IngestedContent {
  tempKey: string;
  /** `blake3:<64 hex>`. */
  hash: string;
  size: number;
  /** First bytes, for sniffing the type. */
  head: Buffer;
}

/**
 * Content coming in: streamed to a temporary blob while hashed, then filed once per hash under
 * `assets/<hex>`, or released again when the request that brought it is refused.
 */
export class AssetIngest {
  private readonly ctx: AssetContext;

  constructor(ctx: AssetContext) {
    this.ctx = ctx;
  }

  /** Streams content to a temporary blob while hashing it. */
  async ingest(source: Readable): Promise<IngestedContent> {
    const tap = await createHashTap(source);
    const tempKey = `assets/.incoming/${randomUUID()}`;
    try {
      await this.ctx.blobs.put(tempKey, tap.stream);
    } catch (err) {
      await this.ctx.blobs.delete(tempKey).catch(() => undefined);
      throw err;
    }
    return { tempKey, ...tap.result() };
  }

  /** Drops ingested content that will not be kept. */
  async discard(ingested: IngestedContent): Promise<void> {
    await this.ctx.blobs.delete(ingested.tempKey);
  }

  /** Moves ingested content to `assets/<hex>` unless the store has those bytes; answers whether they were new. */
  async store(ingested: IngestedContent): Promise<boolean> {
    const key = contentKey(ingested.hash);
    if (await this.has(key)) {
      await this.ctx.blobs.delete(ingested.tempKey);
      return false;
    }
    await this.ctx.blobs.move(ingested.tempKey, key);
    return true;
  }

  /** Writes bytes held in memory, whose hash is known, to `assets/<hex>` unless the store has them; answers whether they were new. */
  async storeBytes(hash: string, data: Buffer): Promise<boolean> {
    const key = contentKey(hash);
    if (await this.has(key)) return false;
    await this.ctx.blobs.put(key, data);
    return true;
  }

  private async has(key: string): Promise<boolean> {
    return (await this.ctx.blobs.size(key)) !== undefined;
  }

  /** Records stored bytes: their content row, and their records whole again. */
  async record(content: { hash: string; size: number }, stored: boolean): Promise<void> {
    await this.markPresent(content, stored);
    await this.ctx.repo.upsertContent(this.contentRow(content));
  }

  /** The bytes are back (`stored`, new to the store): records that were marked missing are whole again. */
  async markPresent(content: { hash: string }, stored: boolean): Promise<void> {
    if (stored) await this.ctx.repo.setMissing([content.hash], false, this.ctx.now());
  }

  /** The content row of stored bytes. */
  contentRow(content: { hash: string; size: number }): AssetContentRow {
    return { hash: content.hash, size: content.size, blob_key: contentKey(content.hash), created_at: this.ctx.now() };
  }

  /**
   * Files the content under its hash, runs fn, and removes the content again when fn fails and
   * no record refers to it, so a refused request leaves nothing behind.
   */
  async withCommitted<T>(ingested: IngestedContent, fn: () => Promise<T>): Promise<T> {
    const stored = await this.store(ingested);
    await this.record(ingested, stored);
    try {
      return await fn();
    } catch (err) {
      await this.releaseIfUnreferenced(ingested.hash, stored);
      throw err;
    }
  }

  private async releaseIfUnreferenced(hash: string, stored: boolean): Promise<void> {
    if (!stored) return;
    try {
      if (await this.ctx.repo.deleteUnreferencedContent(hash)) await this.ctx.blobs.delete(contentKey(hash));
    } catch (err) {
      this.ctx.logger?.warn({ err, hash }, 'could not remove unreferenced asset content');
    }
  }
}
