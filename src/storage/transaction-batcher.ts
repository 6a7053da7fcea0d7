import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from './schema.ts';

type Work<T> = (trx: Transaction<Database>) => Promise<T>;

interface Queued {
  work: Work<unknown>;
  /** Runs inside a savepoint: its failure rolls back its own writes and fails it alone. */
  isolated: boolean;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

/** Works per transaction; keeps one transaction short enough not to stall readers. */
const MAX_BATCH = 200;
const MAX_ATTEMPTS = 3;
/** PostgreSQL deadlock_detected and serialization_failure. */
const RETRYABLE = new Set(['40P01', '40001']);

/**
 * Group commit: small writes queued during one turn of the event loop, or while the previous
 * group was being committed, run one after another in a single transaction, so a burst of task
 * submits and status changes pays for one commit instead of one each. Each work sees the writes
 * of the works before it. A plain work that throws fails its whole batch (every caller gets the
 * error), so plain works must answer expected outcomes (a lost compare-and-set) as values; a work
 * that may fail runs isolated, in a savepoint of the batch's transaction.
 */
export class TransactionBatcher {
  private queue: Queued[] = [];
  private scheduled = false;
  private flushing = false;

  private readonly kysely: Kysely<Database>;

  constructor(kysely: Kysely<Database>) {
    this.kysely = kysely;
  }

  run<T>(work: Work<T>): Promise<T> {
    return this.enqueue(work, false);
  }

  /** Like run, for a work that may throw: its failure undoes its writes and reaches its caller only. */
  runIsolated<T>(work: Work<T>): Promise<T> {
    return this.enqueue(work, true);
  }

  private enqueue<T>(work: Work<T>, isolated: boolean): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, isolated, resolve: resolve as (value: unknown) => void, reject });
      if (!this.scheduled && !this.flushing) {
        this.scheduled = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  /**
   * Writes the queued works, and then those queued meanwhile, one transaction at a time: while a
   * commit is under way the next works gather, so a busy store gets fewer, larger transactions.
   */
  private async flush(): Promise<void> {
    this.scheduled = false;
    this.flushing = true;
    try {
      while (this.queue.length > 0) await this.write(this.queue.splice(0, MAX_BATCH));
    } finally {
      this.flushing = false;
    }
  }

  private async write(batch: Queued[]): Promise<void> {
    try {
      const results = await this.withRetries(() =>
        this.kysely.transaction().execute(async (trx) => {
          const results: Outcome[] = [];
          // A work alone needs no savepoint: its failure rolls back the transaction, which holds only it.
          const apart = batch.length > 1;
          for (const queued of batch) results.push(queued.isolated && apart ? await isolated(trx, queued.work) : { ok: true, value: await queued.work(trx) });
          return results;
        }),
      );
      batch.forEach((queued, i) => {
        const outcome = results[i]!;
        if (outcome.ok) queued.resolve(outcome.value);
        else queued.reject(outcome.error);
      });
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

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/**
 * Runs a work in a savepoint: a failure rolls back to it and is the work's outcome. A deadlock or
 * serialization failure is thrown on: it has rolled back the whole transaction, which is retried.
 */
async function isolated(trx: Transaction<Database>, work: Work<unknown>): Promise<Outcome> {
  await sql`savepoint isolated_work`.execute(trx);
  try {
    const value = await work(trx);
    await sql`release savepoint isolated_work`.execute(trx);
    return { ok: true, value };
  } catch (error) {
    if (RETRYABLE.has((error as { code?: string }).code ?? '')) throw error;
    await sql`rollback to savepoint isolated_work`.execute(trx);
    await sql`release savepoint isolated_work`.execute(trx);
    return { ok: false, error };
  }
}
