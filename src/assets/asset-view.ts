import type { Readable } from 'node:stream';
import { ApiError } from '../core/errors.ts';
import type { AssetRefRow } from '../storage/schema.ts';
import type { AssetContext } from './asset-context.ts';
import { contentKey } from './asset-hash.ts';
import type { AssetJson } from './asset-json.ts';
import type { AssetRecords } from './asset-records.ts';
import { MISSING_TAG, type RootTag } from './asset-tags.ts';
import type { MissingContentSweeper } from './asset-sweeper.ts';

export interface OpenedAsset {
  asset: AssetJson;
  mimeType: string;
  size: number;
  fileName: string;
  stream: Readable;
}

/** The bytes of records: GET /api/assets/{id}/content and ComfyUI's GET /api/view. */
export class AssetView {
  private readonly ctx: AssetContext;
  private readonly records: AssetRecords;
  private readonly sweeper: MissingContentSweeper;

  constructor(
    ctx: AssetContext,
    records: AssetRecords,
    sweeper: MissingContentSweeper,
  ) {
    this.ctx = ctx;
    this.records = records;
    this.sweeper = sweeper;
  }

  /** The bytes of the owner's record. */
  async openContent(ownerId: string, id: string): Promise<OpenedAsset> {
    return this.open(ownerId, await this.records.liveRow(ownerId, id));
  }

  /**
   * `filename=blake3:<hex>` resolves to the owner's newest live record of that content that is
   * neither temporary nor missing; otherwise file name + subfolder + type (a tag of the record).
   */
  async openView(ownerId: string, q: { hash?: string; filename: string; subfolder: string; type: RootTag }): Promise<OpenedAsset> {
    const row = q.hash
      ? await this.ctx.repo.findNewestByHash(ownerId, q.hash, ['temp', MISSING_TAG])
      : await this.ctx.repo.findAtLocation(ownerId, q.filename, q.subfolder, q.type);
    if (!row) throw new ApiError('FILE_NOT_FOUND', `file ${q.filename} not found`, null, {}, {}, { filename: q.filename });
    return this.open(ownerId, row);
  }

  /**
   * A record whose bytes are gone answers 404 FILE_NOT_FOUND, also before the sweeper noticed;
   * its content is then checked at once so the record leaves listings without waiting.
   */
  private async open(ownerId: string, row: AssetRefRow): Promise<OpenedAsset> {
    const stream = await this.ctx.blobs.open(contentKey(row.asset_hash));
    if (!stream) {
      await this.sweeper.check([row.asset_hash]).catch((err: unknown) => this.ctx.logger?.warn({ err, hash: row.asset_hash }, 'asset content check failed'));
      throw new ApiError('FILE_NOT_FOUND', `the content of asset ${row.id} is missing`, null, {}, {}, { id: row.id });
    }
    return { asset: await this.records.json(ownerId, row), mimeType: row.mime_type ?? 'application/octet-stream', size: Number(row.size), fileName: row.file_name, stream };
  }
}
