import { sql } from 'kysely';
import type { Db } from '../db.ts';
import { ERROR_STATUSES } from './usage-repo.ts';

/** Sums of the usage ledger over a time window; cost in micro-credits. */
export interface WindowSums {
  requests: number;
  errors: number;
  cost: number;
  /** Mean latency of the window's rows; null when it had none or it is not kept for the window. */
  latency_ms_avg: number | null;
}

/** The console's overview: ledger sums over recent windows and tasks by status, each one bounded query. */
export class OverviewRepo {
  private readonly db: Db;
  /** Waits for the ledger rows of calls that ended but are still being written (UsageRepo.writtenCalls). */
  private readonly ledgerWritten: () => Promise<void>;

  constructor(db: Db, ledgerWritten: () => Promise<void>) {
    this.db = db;
    this.ledgerWritten = ledgerWritten;
  }

  /**
   * Sums of the raw ledger rows begun since each of `sinces` (ascending), read in one range scan
   * from the oldest; for windows of hours, where the rows are few enough to read.
   */
  async recentSums(sinces: readonly number[], userId: string | undefined): Promise<WindowSums[]> {
    await this.ledgerWritten();
    const oldest = Math.min(...sinces);
    const isError = sql<number>`case when status in (${sql.join(ERROR_STATUSES)}) then 1 else 0 end`;
    let q = this.db.kysely.selectFrom('usage_ledger').where('created_at', '>=', oldest);
    if (userId !== undefined) q = q.where('user_id', '=', userId);
    const row = await q
      .select(
        sinces.flatMap((since, i) => {
          const inWindow = sql`created_at >= ${since}`;
          return [
            sql<number>`sum(case when ${inWindow} then 1 else 0 end)`.as(`r${i}`),
            sql<number>`sum(case when ${inWindow} then ${isError} else 0 end)`.as(`e${i}`),
            sql<number>`sum(case when ${inWindow} then cost else 0 end)`.as(`c${i}`),
            sql<number>`sum(case when ${inWindow} then latency_ms else 0 end)`.as(`l${i}`),
          ];
        }),
      )
      .executeTakeFirstOrThrow();
    const values = row as Record<string, unknown>;
    return sinces.map((_, i) => {
      const requests = Number(values[`r${i}`] ?? 0);
      return {
        requests,
        errors: Number(values[`e${i}`] ?? 0),
        cost: Number(values[`c${i}`] ?? 0),
        latency_ms_avg: requests > 0 ? Math.round(Number(values[`l${i}`]) / requests) : null,
      };
    });
  }

  /** Sums of the daily aggregate from the UTC day `fromDay` (YYYY-MM-DD) on: days of calls, never the raw rows. */
  async dailySums(fromDay: string, userId: string | undefined): Promise<WindowSums> {
    await this.ledgerWritten();
    let q = this.db.kysely.selectFrom('usage_daily').where('day', '>=', fromDay);
    if (userId !== undefined) q = q.where('user_id', '=', userId);
    const row = await q
      .select((eb) => [eb.fn.sum<number>('requests').as('requests'), eb.fn.sum<number>('errors').as('errors'), eb.fn.sum<number>('cost').as('cost')])
      .executeTakeFirstOrThrow();
    return { requests: Number(row.requests ?? 0), errors: Number(row.errors ?? 0), cost: Number(row.cost ?? 0), latency_ms_avg: null };
  }

  /** Tasks submitted since `since`, counted by status (an index-only scan of status and time). */
  async tasksByStatus(since: number, ownerId: string | undefined): Promise<Record<string, number>> {
    let q = this.db.kysely.selectFrom('tasks').where('created_at', '>=', since);
    if (ownerId !== undefined) q = q.where('owner_id', '=', ownerId);
    const rows = await q.select((eb) => ['status', eb.fn.countAll<number>().as('n')]).groupBy('status').execute();
    return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
  }
}
