import type { Logger } from 'pino';
import type { BlobStore } from '../storage/blobs/blob-store.ts';
import type { AssetsRepo } from '../storage/repos/assets-repo.ts';
import { increasingClock, type AssetContext } from './asset-context.ts';
import { AssetIngest } from './asset-ingest.ts';
import { AssetOutputs } from './asset-outputs.ts';
import { AssetRecords } from './asset-records.ts';
import { MissingContentSweeper, type SweeperOptions } from './asset-sweeper.ts';
import { AssetTagging } from './asset-tagging.ts';
import { AssetUploads } from './asset-uploads.ts';
import { AssetView } from './asset-view.ts';

/**
 * Largest accepted asset upload (2 GiB). The 20 MB limit of /v1 file uploads does not apply to
 * the registry: uploads are streamed to the blob store and hashed on the way, never held in memory.
 */
export const DEFAULT_MAX_ASSET_BYTES = 2 * 1024 ** 3;

export interface AssetServiceOptions {
  /** Largest accepted upload, in bytes (default DEFAULT_MAX_ASSET_BYTES). */
  maxUploadBytes?: number;
  /** The missing-content sweep (ASSET_SWEEP_INTERVAL_MS, ASSET_SWEEP_BATCH). */
  sweep: SweeperOptions;
  logger?: Logger;
}

/**
 * The asset registry: content stored once per blake3 hash in
 * the blob store, records owned by a user, soft delete, tags and metadata filtering. One part
 * per concern, sharing one repository, blob store and clock.
 */
export class AssetService {
  readonly maxUploadBytes: number;
  /** Content coming in: streamed, hashed and filed under its hash. */
  readonly ingest: AssetIngest;
  /** Reading, listing, changing and deleting records. */
  readonly records: AssetRecords;
  /** Records clients create: upload, create from hash, ComfyUI's /upload/image. */
  readonly uploads: AssetUploads;
  readonly tags: AssetTagging;
  /** The bytes of records (content and ComfyUI's /api/view). */
  readonly view: AssetView;
  /** Generated task outputs registered as assets. */
  readonly outputs: AssetOutputs;
  /** Tags records whose content has gone as `missing` (and untags them when it is back). */
  readonly sweeper: MissingContentSweeper;

  constructor(repo: AssetsRepo, blobs: BlobStore, opts: AssetServiceOptions) {
    const ctx: AssetContext = { repo, blobs, now: increasingClock(), logger: opts.logger };
    this.maxUploadBytes = opts.maxUploadBytes ?? DEFAULT_MAX_ASSET_BYTES;
    this.ingest = new AssetIngest(ctx);
    this.records = new AssetRecords(ctx);
    this.uploads = new AssetUploads(ctx, this.ingest, this.records);
    this.tags = new AssetTagging(ctx, this.records);
    this.sweeper = new MissingContentSweeper(ctx, opts.sweep);
    this.view = new AssetView(ctx, this.records, this.sweeper);
    this.outputs = new AssetOutputs(ctx);
  }
}
