import type { Logger } from 'pino';
import type { BlobStore } from '../storage/blobs/blob-store.ts';
import type { AssetsRepo } from '../storage/repos/assets-repo.ts';

/** What every part of the asset registry works with. */
export interface AssetContext {
  repo: AssetsRepo;
  blobs: BlobStore;
  /** Milliseconds, strictly increasing within the process so creation order sorts stably. */
  now: () => number;
  logger?: Logger;
}

/** A clock for AssetContext.now: the wall clock, moved on by 1 ms when it has not advanced. */
export function increasingClock(): () => number {
  let last = 0;
  return () => {
    last = Math.max(Date.now(), last + 1);
    return last;
  };
}
