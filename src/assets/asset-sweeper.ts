import type { AssetContext } from './asset-context.ts';
import { contentKey } from './asset-hash.ts';

export interface SweeperOptions {
  /** Time between two batches; 0 runs no timer (sweeps happen only when asked for). */
  intervalMs: number;
  /** Contents checked per batch, so one batch costs a bounded number of blob-store lookups. */
  batchSize: number;
}

/** Blob-store lookups in flight at once while a batch is checked. */
const LOOKUPS_AT_ONCE = 16;

/**
 * Keeps the automatic `missing` tag true: records whose content has gone from the blob store are
 * tagged, and untagged when the bytes are back. It walks every content in hash order, one batch
 * per interval, starting over after the last, so reads never look at the blob store themselves.
 */
export class MissingContentSweeper {
  private cursor: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private roundWaiters: (() => void)[] = [];

  private readonly ctx: AssetContext;
  private readonly opts: SweeperOptions;

  constructor(
    ctx: AssetContext,
    opts: SweeperOptions,
  ) {
    this.ctx = ctx;
    this.opts = opts;
  }

  /** Starts the periodic batches (none when intervalMs is 0). */
  start(): void {
    if (this.opts.intervalMs <= 0 || this.timer) return;
    this.timer = setInterval(() => {
      // A batch still running (slow store) is not overtaken by the next.
      if (this.running) return;
      this.running = this.sweepBatch()
        .catch((err: unknown) => this.ctx.logger?.error({ err }, 'asset content sweep failed'))
        .finally(() => (this.running = undefined));
    }, this.opts.intervalMs);
    this.timer.unref();
  }

  /** Stops the batches and waits for the one running. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** Checks the next batch of contents; after the last one the walk starts over. Answers how many records changed. */
  async sweepBatch(): Promise<number> {
    const hashes = await this.ctx.repo.contentHashesAfter(this.cursor, this.opts.batchSize);
    const changed = await this.check(hashes);
    const roundDone = hashes.length < this.opts.batchSize;
    this.cursor = roundDone ? undefined : hashes[hashes.length - 1];
    if (roundDone) for (const resolve of this.roundWaiters.splice(0)) resolve();
    return changed;
  }

  /** Resolves when the periodic walk next reaches its end (tests wait on it instead of on time). */
  nextRound(): Promise<void> {
    return new Promise((resolve) => this.roundWaiters.push(resolve));
  }

  /** Checks every content now, batch by batch, apart from the periodic walk. Answers how many records changed. */
  async sweepAll(): Promise<number> {
    let changed = 0;
    let after: string | undefined;
    for (;;) {
      const hashes = await this.ctx.repo.contentHashesAfter(after, this.opts.batchSize);
      changed += await this.check(hashes);
      if (hashes.length < this.opts.batchSize) return changed;
      after = hashes[hashes.length - 1];
    }
  }

  /**
   * Brings the `missing` tag of the records of these contents in line with the blob store.
   * Answers how many records changed.
   */
  async check(hashes: readonly string[]): Promise<number> {
    const list = [...new Set(hashes)];
    if (list.length === 0) return 0;
    const absent: string[] = [];
    const present: string[] = [];
    for (let i = 0; i < list.length; i += LOOKUPS_AT_ONCE) {
      await Promise.all(list.slice(i, i + LOOKUPS_AT_ONCE).map(async (hash) => ((await this.ctx.blobs.size(contentKey(hash))) === undefined ? absent : present).push(hash)));
    }
    const marked = present.length > 0 ? await this.ctx.repo.hashesMarkedMissing(present) : new Set<string>();
    const restored = present.filter((h) => marked.has(h));
    const now = this.ctx.now();
    let changed = 0;
    if (absent.length > 0) changed += await this.ctx.repo.setMissing(absent, true, now);
    if (restored.length > 0) changed += await this.ctx.repo.setMissing(restored, false, now);
    if (changed > 0) this.ctx.logger?.warn({ missing: absent.length, restored: restored.length, changed }, 'asset content sweep changed records');
    return changed;
  }
}
