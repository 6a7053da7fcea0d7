import type { Kysely, Transaction } from 'kysely';
import { isDatabaseUnavailable } from './database-unavailable.ts';
import type { Database } from './schema.ts';

/** Writes a group of rows that works of one transaction appended (TransactionTail.append). */
export type TailWrite<R> = (trx: Transaction<Database>, rows: R[]) => Promise<void>;

/**
 * Rows the works of one transaction append to tables nobody in it reads back (task events, the
 * usage ledger): each group is written by its writer, all its works' rows at once, after the last
 * work and before the commit, so a batch of works pays one statement per table instead of one each.
 */
export class TransactionTail {
  private readonly groups = new Map<TailWrite<never>, unknown[]>();

  /** Adds rows for `write`, the same function for every row of its group. */
  append<R>(write: TailWrite<R>, rows: readonly R[]): void {
    if (rows.length === 0) return;
    const group = this.groups.get(write as TailWrite<never>);
    if (group) group.push(...rows);
    else this.groups.set(write as TailWrite<never>, [...rows]);
  }

  /** Writes every group; called by the batcher once its works have run. */
  async write(trx: Transaction<Database>): Promise<void> {
    for (const [write, rows] of this.groups) await (write as TailWrite<unknown>)(trx, rows);
  }
}

type Work<T> = (trx: Transaction<Database>, tail: TransactionTail) => Promise<T>;

/**
 * One statement for a row of each of many works of a transaction, answering one value per row in
 * their order: works that each write one row and need its outcome (a compare-and-set) pay one
 * statement per batch instead of one each.
 */
export interface StatementGroup<R, A> {
  /** Works whose groups have the same key share one statement. */
  readonly key: string;
  write(trx: Transaction<Database>, rows: readonly R[]): Promise<A[]>;
}

interface Queued {
  work: (trx: Transaction<Database>, tail: TransactionTail, answer: unknown) => Promise<unknown>;
  /** A row of a grouped statement, answered before the work runs. */
  grouped?: { statement: StatementGroup<unknown, unknown>; row: unknown };
  /** Its failure fails it alone: a batch it fails runs again without it (see write). */
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
 * submits and status changes pays for one commit instead of one each. The grouped statements of
 * the batch run first (see runGrouped); then each work sees the writes of the works before it
 * (not the rows they append to the tail, written at its end). A plain work
 * that throws fails its whole batch (every caller gets the error), so plain works must answer
 * expected outcomes (a lost compare-and-set) as values; a work that may fail runs isolated: a batch
 * it fails runs again with each isolated work in a transaction of its own, so the failure reaches
 * its caller only. A work may run more than once (a retried deadlock, a batch run again) and must
 * depend on nothing but its transaction.
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
    return this.enqueue({ work, isolated: false });
  }

  /** Like run, for a work that may throw: its failure undoes its writes and reaches its caller only. */
  runIsolated<T>(work: Work<T>): Promise<T> {
    return this.enqueue({ work, isolated: true });
  }

  /**
   * Writes `row` with the rows of the batch's other works of the same statement group, before the
   * batch's works run, and then runs `work` in its place with the row's answer. Isolated as
   * runIsolated when `isolated`.
   */
  runGrouped<R, A, T>(statement: StatementGroup<R, A>, row: R, work: (answer: A, trx: Transaction<Database>, tail: TransactionTail) => Promise<T>, isolated: boolean): Promise<T> {
    return this.enqueue({
      work: (trx, tail, answer) => work(answer as A, trx, tail),
      grouped: { statement: statement as StatementGroup<unknown, unknown>, row },
      isolated,
    });
  }

  private enqueue<T>(queued: Pick<Queued, 'work' | 'grouped' | 'isolated'>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ ...queued, resolve: resolve as (value: unknown) => void, reject });
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
    let values: unknown[];
    try {
      values = await this.withRetries(() =>
        this.kysely.transaction().execute(async (trx) => {
          const answers = await groupedAnswers(trx, batch);
          const tail = new TransactionTail();
          const results: unknown[] = [];
          for (const [i, queued] of batch.entries()) results.push(await queued.work(trx, tail, answers[i]));
          await tail.write(trx);
          return results;
        }),
      );
    } catch (err) {
      // Savepoints would cost two statements per isolated work in every batch; a batch that fails
      // is rare, and is written again apart instead: the plain works together (as they would have
      // failed together), each isolated work alone. An unreachable database fails every caller.
      if (batch.length > 1 && batch.some((queued) => queued.isolated) && !isDatabaseUnavailable(err)) {
        const plain = batch.filter((queued) => !queued.isolated);
        if (plain.length > 0) await this.write(plain);
        for (const queued of batch) if (queued.isolated) await this.write([queued]);
        return;
      }
      for (const queued of batch) queued.reject(err);
      return;
    }
    batch.forEach((queued, i) => queued.resolve(values[i]));
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

/** Runs each statement group of the batch once, for its works' rows in batch order; answers each work's answer at its index. */
async function groupedAnswers(trx: Transaction<Database>, batch: readonly Queued[]): Promise<unknown[]> {
  const groups = new Map<string, { statement: StatementGroup<unknown, unknown>; at: number[]; rows: unknown[] }>();
  batch.forEach((queued, i) => {
    if (!queued.grouped) return;
    const { statement, row } = queued.grouped;
    const group = groups.get(statement.key);
    if (group) {
      group.at.push(i);
      group.rows.push(row);
    } else groups.set(statement.key, { statement, at: [i], rows: [row] });
  });
  const answers: unknown[] = new Array(batch.length);
  for (const { statement, at, rows } of groups.values()) {
    const answered = await statement.write(trx, rows);
    at.forEach((index, j) => (answers[index] = answered[j]));
  }
  return answers;
}
