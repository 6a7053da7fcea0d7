import type { Kysely, Transaction } from 'kysely';
import type { Database } from './schema.ts';

type Work<T> = (trx: Transaction<Database>) => Promise<T>;

interface Queued {
  work: Work<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

/** Works per transaction; keeps one transaction short enough not to stall readers. */
const MAX_BATCH = 200;
const MAX_ATTEMPTS = 3;
/** PostgreSQL deadlock_detected and serialization_failure. */
const RETRYABLE = new Set(['40P01', '40001']);

/**
 * Group commit: small writes queued during one turn of the event loop run one after another
 * in a single transaction, so a burst of task submits and status changes pays for one commit
 * instead of one each. Each work sees the writes of the works before it. A work that throws
 * fails its whole batch (every caller gets the error), so works must answer expected outcomes
 * (a lost compare-and-set) as values.
 */
export class TransactionBatcher {
  private queue: Queued[] = [];
  private scheduled = false;

  constructor(private readonly kysely: Kysely<Database>) {}

  run<T>(work: Work<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, resolve: resolve as (value: unknown) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  /**
   * Runs a work in a transaction of its own, with the same retries: for a work that may throw
   * (its failure must not fail other callers' writes) or that writes a lot.
   */
  runAlone<T>(work: Work<T>): Promise<T> {
    return this.withRetries(() => this.kysely.transaction().execute(work));
  }

  private async flush(): Promise<void> {
    const batch = this.queue.splice(0, MAX_BATCH);
    if (this.queue.length > 0) setImmediate(() => void this.flush());
    else this.scheduled = false;
    try {
      const results = await this.withRetries(() =>
        this.kysely.transaction().execute(async (trx) => {
          const results: unknown[] = [];
          for (const queued of batch) results.push(await queued.work(trx));
          return results;
        }),
      );
      batch.forEach((queued, i) => queued.resolve(results[i]));
    } catch (err) {
      for (const queued of batch) queued.reject(err);
    }
  }

  private async withRetries<T>(transaction: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await transaction();
      } catch (err) {
        // Transactions of two instances touching the same rows in another order may deadlock in
        // PostgreSQL; the loser was rolled back entirely and simply runs again.
        if (attempt < MAX_ATTEMPTS && RETRYABLE.has((err as { code?: string }).code ?? '')) continue;
        throw err;
      }
    }
  }
}
