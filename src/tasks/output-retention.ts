import type { Logger } from 'pino';
import type { AssetService } from '../assets/asset-service.ts';
import type { FileService } from '../files/file-service.ts';

/** Outputs looked at per read of the store. */
const BATCH = 100;
/** An output an asset keeps is looked at again this much later (its URL follows the asset at once; only its bytes wait). */
const KEPT_RECHECK_MS = 60 * 60 * 1000;

/**
 * OUTPUT_RETENTION_DAYS: retires task outputs at their expiry. The URL answers 410 from then on,
 * the output records the task made in the asset registry go, and the bytes go once no record
 * uses them. An output whose content is also an asset a user made (upload, from-hash) is kept
 * as long as that asset is live. Every instance sweeps; the store's retire is the one that counts.
 */
export class OutputRetention {
  private readonly deps: { files: FileService; assets: AssetService; logger: Logger };

  constructor(deps: { files: FileService; assets: AssetService; logger: Logger }) {
    this.deps = deps;
  }

  /** Retires the outputs due at `now`, batch by batch; answers how many were retired. */
  async sweep(now = Date.now()): Promise<number> {
    let retired = 0;
    for (;;) {
      const due = await this.deps.files.dueOutputs(now, BATCH);
      for (const row of due) {
        if (await this.deps.files.isHeldByAsset(row.id)) {
          await this.deps.files.sweepLater(row.id, now + KEPT_RECHECK_MS);
          continue;
        }
        // Records first: a sweep stopped halfway is done again by the next, which finds the file still unretired.
        if (row.content_hash && row.task_id) await this.deps.assets.outputs.expireOutput(row.user_id, row.task_id, row.content_hash);
        if (await this.deps.files.retire(row.id, now)) retired++;
      }
      if (due.length < BATCH) return retired;
    }
  }
}
