import { sql, type Compilable, type ExpressionBuilder, type InsertQueryBuilder, type InsertResult, type Kysely, type SelectQueryBuilder, type Transaction } from 'kysely';
import type { RepeatedStatement } from '../background-writer.ts';
import type { Db } from '../db.ts';
import type { DbHandle } from '../db-handle.ts';
import { TransactionBatcher } from '../transaction-batcher.ts';
import { insertsInto, ROWS_PER_INSERT } from './inserts-into.ts';
import type { Database, TaskRow, UsageDailyRow, UsageLedgerRow } from '../schema.ts';

export type UsageGroup = 'day' | 'model' | 'user' | 'token' | 'provider' | 'team';

/** Rows a non-administrator reads: of the given teams, or the user's own (auth/operator.ts ReadScope). */
export interface RowScope {
  teamIds: readonly string[];
  userId?: string;
  /** Of these, only the rows of this team. */
  teamId?: string;
}

/** One group of usage: sums in micro-credits. */
export interface UsageSums {
  key: string;
  requests: number;
  tasks: number;
  input_tokens: number;
  cached_input_tokens: number;
  cache_write_tokens: number;
  output_tokens: number;
  cost: number;
  errors: number;
}

/** The sums of a usage group, added up alike in the daily aggregate, its merge and the answer. */
const SUMMED = ['requests', 'tasks', 'input_tokens', 'cached_input_tokens', 'cache_write_tokens', 'output_tokens', 'cost', 'errors'] as const;
/** The token and cost sums a ledger row adds to its group as they are. */
const TOKEN_SUMS = ['input_tokens', 'cached_input_tokens', 'cache_write_tokens', 'output_tokens', 'cost'] as const;

export interface UsageQuery {
  /** Milliseconds, from inclusive, to exclusive. */
  from: number;
  to: number;
  groupBy: UsageGroup;
  userId?: string;
  /** Only rows within this scope (read from the rows: the daily aggregate has no team). */
  scope?: RowScope;
}

export interface LedgerFilter {
  userId?: string;
  tokenId?: string;
  teamId?: string;
  model?: string;
  status?: string;
  batchId?: string;
  from?: number;
  to?: number;
  scope?: RowScope;
}

export interface TaskFilter {
  ownerId?: string;
  teamId?: string;
  status?: string;
  model?: string;
  from?: number;
  to?: number;
  scope?: RowScope;
}

/** A place in a newest-first listing: the last row's time and id. */
export interface Cursor {
  at: number;
  id: string;
}

/** Ledger statuses that count as errors: in the usage aggregate and the console's overview. */
export const ERROR_STATUSES = ['failed', 'rejected', 'error', 'refused'];
const DAY_MS = 86_400_000;
/** Rows a retention pass deletes per statement: short transactions that never stall writers. */
const RETENTION_BATCH = 5000;

const insertLedgerRows = insertsInto('usage_ledger');

const GROUP_COLUMNS = { day: 'day', model: 'model', user: 'user_id', token: 'token_id', provider: 'provider', team: 'team_id' } as const;

/** The UTC day of the last time dayOf was asked, which the rows of a batch nearly always share. */
let lastDay = { from: 0, to: 0, day: '' };

function dayOf(at: number): string {
  if (at >= lastDay.from && at < lastDay.to) return lastDay.day;
  const from = at - (((at % DAY_MS) + DAY_MS) % DAY_MS);
  lastDay = { from, to: from + DAY_MS, day: new Date(at).toISOString().slice(0, 10) };
  return lastDay.day;
}

/** The ledger row's contribution to its daily aggregate. */
function dailyOf(row: UsageLedgerRow): UsageDailyRow {
  return {
    day: dayOf(row.created_at),
    user_id: row.user_id,
    token_id: row.token_id ?? '',
    model: row.model ?? '',
    provider: row.provider ?? '',
    requests: 1,
    tasks: row.kind === 'task' ? 1 : 0,
    input_tokens: row.input_tokens,
    cached_input_tokens: row.cached_input_tokens,
    cache_write_tokens: row.cache_write_tokens,
    output_tokens: row.output_tokens,
    cost: row.cost,
    errors: ERROR_STATUSES.includes(row.status) ? 1 : 0,
  };
}

/** Adds a day's sums to its aggregate row when that row exists. */
function dailyUpsert<Q extends InsertQueryBuilder<Database, 'usage_daily', InsertResult>>(insert: Q): Q {
  return insert.onConflict((oc) =>
    oc.columns(['day', 'user_id', 'token_id', 'model', 'provider']).doUpdateSet((eb) =>
      Object.fromEntries(SUMMED.map((field) => [field, eb(`usage_daily.${field}`, '+', eb.ref(`excluded.${field}`))])),
    ),
  ) as Q;
}

/**
 * An insert of one row, run for each of `rows` (rows of one shape, every field set): their values
 * in the order of the columns Kysely compiled, which is the first row's own. Its SQL is compiled
 * once per table, finish and columns and kept in `compiled` (Kysely's compile is 0.1 ms or more of
 * the event loop per statement, at every batch).
 */
function repeatedInsert<T extends keyof Database, R extends object>(
  compiled: Map<string, string>,
  kysely: Kysely<Database>,
  table: T,
  rows: readonly R[],
  finish?: (q: InsertQueryBuilder<Database, T, InsertResult>) => Compilable,
): RepeatedStatement {
  // Kysely leaves out the columns whose value is undefined.
  const columns = (Object.keys(rows[0]!) as (keyof R & string)[]).filter((column) => rows[0]![column] !== undefined);
  const key = `${table} ${finish?.name ?? ''} ${columns.join(',')}`;
  let sql = compiled.get(key);
  if (sql === undefined) {
    const insert = kysely.insertInto(table).values(rows[0] as never);
    sql = (finish ? finish(insert) : insert).compile().sql;
    compiled.set(key, sql);
  }
  return { sql, rows: rows.map((row) => columns.map((column) => row[column] ?? null)) };
}

/** The aggregates of many rows: one per day, user, token, model and provider. */
function mergedDaily(rows: UsageLedgerRow[]): UsageDailyRow[] {
  const merged = new Map<string, UsageDailyRow>();
  for (const row of rows) {
    const daily = dailyOf(row);
    const key = JSON.stringify([daily.day, daily.user_id, daily.token_id, daily.model, daily.provider]);
    const sum = merged.get(key);
    if (!sum) merged.set(key, daily);
    else for (const field of SUMMED) sum[field] += daily[field];
  }
  return [...merged.values()];
}

/**
 * How long call rows gather before they are written together. A write's cost is mostly per
 * transaction (in SQLite each B-tree's last page is rewritten whole, about 20 pages for one row or
 * a hundred), so a busy gateway writes a few large batches rather than many small ones; rows are
 * small and few are held this long.
 */
const CALL_ROWS_GATHER_MS = 50;

interface PendingWrite {
  done: Promise<void>;
  resolve: () => void;
  reject: (err: unknown) => void;
  timer: NodeJS.Timeout;
}

/** A write of waiting rows, started by `flush` after CALL_ROWS_GATHER_MS unless started sooner. */
function pendingWrite(flush: () => void): PendingWrite {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const done = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { done, resolve, reject, timer: setTimeout(flush, CALL_ROWS_GATHER_MS) };
}

/**
 * The usage ledger (one row per call or task) and its daily aggregate, which is kept in the same
 * transaction as each row: usage queries read whole days from the aggregate and only the partial
 * days at the ends of a range from the rows, so they stay fast at millions of rows.
 */
export class UsageRepo {
  private readonly writes: TransactionBatcher;
  /** Call rows waiting to be written together, and their write. */
  private pendingCalls: UsageLedgerRow[] = [];
  private pendingWrite: PendingWrite | undefined;
  /** Settles once every call row sent to be written so far is written (or failed). */
  private callsWritten: Promise<void> = Promise.resolve();

  /** The SQL of the background writer's inserts (repeatedInsert). */
  private readonly compiledInserts = new Map<string, string>();

  private readonly db: Db;

  constructor(db: Db) {
    this.db = db;
    this.writes = new TransactionBatcher(db.kysely);
  }

  /**
   * Writes a settled row with its aggregate through `db` (a transaction in progress); in a batched
   * transaction at its end, with the rows of the other works (one insert, one aggregate update per day and subject).
   */
  async record(db: DbHandle, row: UsageLedgerRow): Promise<void> {
    if (db.tail) db.tail.append(this.writeTail, [row]);
    else await this.insertRows(db, [row], [dailyOf(row)]);
  }

  private readonly writeTail = (trx: Transaction<Database>, rows: UsageLedgerRow[]): Promise<void> => this.insertRows({ kysely: trx, dialect: this.db.dialect }, rows, mergedDaily(rows));

  /**
   * Writes a call's row. The rows of calls ending within CALL_ROWS_GATHER_MS (up to one insert's
   * worth) go in one transaction, as one insert, with one aggregate update per day, user, token,
   * model and provider. Reads of the ledger write waiting rows first. Answers the write of the
   * batch when this row opens one, else undefined: one promise per batch, not per call.
   */
  recordCall(row: UsageLedgerRow): Promise<void> | undefined {
    this.pendingCalls.push(row);
    const opened = this.pendingWrite === undefined;
    const pending = (this.pendingWrite ??= pendingWrite(() => void this.flushCalls()));
    if (this.pendingCalls.length >= ROWS_PER_INSERT) void this.flushCalls();
    return opened ? pending.done : undefined;
  }

  /** Writes the call rows waiting now; settles once they are stored. */
  flushCalls(): Promise<void> {
    const pending = this.pendingWrite;
    if (!pending) return Promise.resolve();
    this.pendingWrite = undefined;
    clearTimeout(pending.timer);
    const rows = this.pendingCalls;
    this.pendingCalls = [];
    const background = this.db.background;
    const written = background
      ? background.write([repeatedInsert(this.compiledInserts, this.db.kysely, 'usage_ledger', rows), repeatedInsert(this.compiledInserts, this.db.kysely, 'usage_daily', mergedDaily(rows), dailyUpsert)])
      : this.writes.run((trx) => this.insertRows({ kysely: trx, dialect: this.db.dialect }, rows, mergedDaily(rows)));
    written.then(pending.resolve, pending.reject);
    this.callsWritten = Promise.allSettled([this.callsWritten, written]).then(() => undefined);
    return pending.done;
  }

  /** Waits for every call row recorded so far to be stored; a failed write was reported to its callers. */
  async writtenCalls(): Promise<void> {
    await this.flushCalls().catch(() => undefined);
    await this.callsWritten;
  }

  private async insertRows(db: DbHandle, rows: UsageLedgerRow[], daily: UsageDailyRow[]): Promise<void> {
    await insertLedgerRows(db.kysely, rows);
    for (const day of daily) await dailyUpsert(db.kysely.insertInto('usage_daily').values(day)).execute();
  }

  /** Marks rows whose settlement the shared counters have taken in. */
  async markApplied(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.writes.run((trx) => trx.updateTable('usage_ledger').set({ counters_applied: 1 }).where('id', 'in', [...ids]).execute());
  }

  /** Rows ended before `before` whose settlement the shared counters have not taken in. */
  async unapplied(before: number, limit: number): Promise<UsageLedgerRow[]> {
    await this.writtenCalls();
    return this.db.kysely.selectFrom('usage_ledger').selectAll().where('counters_applied', '=', 0).where('finished_at', '<', before).orderBy('finished_at').limit(limit).execute();
  }

  /** Names the batch a task's row ran for (the task wrote its row at its end, knowing nothing of batches). */
  async tagBatch(id: string, batchId: string): Promise<void> {
    await this.db.kysely.updateTable('usage_ledger').set({ batch_id: batchId }).where('id', '=', id).execute();
  }

  async find(id: string): Promise<UsageLedgerRow | undefined> {
    await this.writtenCalls();
    return this.db.kysely.selectFrom('usage_ledger').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Usage between two times, grouped: whole UTC days from the aggregate, the partial days at the ends from the rows. */
  async sums(query: UsageQuery): Promise<UsageSums[]> {
    await this.writtenCalls();
    const firstWhole = Math.ceil(query.from / DAY_MS) * DAY_MS;
    const lastWhole = Math.floor(query.to / DAY_MS) * DAY_MS;
    const parts: Promise<UsageSums[]>[] = [];
    // Teams are on the rows only.
    if (firstWhole >= lastWhole || query.groupBy === 'team' || query.scope) parts.push(this.rawSums(query, query.from, query.to));
    else {
      parts.push(this.dailySums(query, dayOf(firstWhole), dayOf(lastWhole)));
      if (query.from < firstWhole) parts.push(this.rawSums(query, query.from, firstWhole));
      if (lastWhole < query.to) parts.push(this.rawSums(query, lastWhole, query.to));
    }
    const merged = new Map<string, UsageSums>();
    for (const rows of await Promise.all(parts)) {
      for (const row of rows) {
        const sum = merged.get(row.key);
        if (!sum) merged.set(row.key, row);
        else for (const field of SUMMED) sum[field] += row[field];
      }
    }
    return [...merged.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  private async dailySums(query: UsageQuery, fromDay: string, toDay: string): Promise<UsageSums[]> {
    const column = GROUP_COLUMNS[query.groupBy as Exclude<UsageGroup, 'team'>];
    let q = this.db.kysely
      .selectFrom('usage_daily')
      .select((eb) => [
        eb.ref(column).as('key'),
        ...SUMMED.map((field) => eb.fn.sum<number>(field).as(field)),
      ])
      .where('day', '>=', fromDay)
      .where('day', '<', toDay)
      .groupBy(column);
    if (query.userId !== undefined) q = q.where('user_id', '=', query.userId);
    return (await q.execute()).map(numericSums);
  }

  private async rawSums(query: UsageQuery, from: number, to: number): Promise<UsageSums[]> {
    // A raw range within one UTC day groups by that day; a longer one (of a team, a scope) by each row's.
    const key = query.groupBy !== 'day'
      ? sql<string>`coalesce(${sql.ref(GROUP_COLUMNS[query.groupBy])}, '')`
      : dayOf(from) === dayOf(to - 1) ? sql<string>`${dayOf(from)}` : this.rowDay();
    const isError = (eb: ExpressionBuilder<Database, 'usage_ledger'>) => eb.case().when('status', 'in', ERROR_STATUSES).then(1).else(0).end();
    let q = this.db.kysely
      .selectFrom('usage_ledger')
      .select((eb) => [
        key.as('key'),
        eb.fn.countAll<number>().as('requests'),
        eb.fn.sum<number>(eb.case().when('kind', '=', 'task').then(1).else(0).end()).as('tasks'),
        ...TOKEN_SUMS.map((field) => eb.fn.sum<number>(field).as(field)),
        eb.fn.sum<number>(isError(eb)).as('errors'),
      ])
      .where('created_at', '>=', from)
      .where('created_at', '<', to)
      .groupBy('key');
    if (query.userId !== undefined) q = q.where('user_id', '=', query.userId);
    if (query.scope) q = q.where(inScope(query.scope));
    return (await q.execute()).map(numericSums);
  }

  /** The UTC day (YYYY-MM-DD) of a row's created_at, in SQL. */
  private rowDay() {
    return this.db.dialect === 'postgres'
      ? sql<string>`to_char(to_timestamp(created_at / 1000.0) at time zone 'UTC', 'YYYY-MM-DD')`
      : sql<string>`strftime('%Y-%m-%d', created_at / 1000, 'unixepoch')`;
  }

  /** Ledger rows, newest first, after the cursor. */
  async list(filter: LedgerFilter, limit: number, after: Cursor | undefined): Promise<UsageLedgerRow[]> {
    await this.writtenCalls();
    let q = this.db.kysely.selectFrom('usage_ledger').selectAll();
    if (filter.userId !== undefined) q = q.where('user_id', '=', filter.userId);
    if (filter.tokenId !== undefined) q = q.where('token_id', '=', filter.tokenId);
    if (filter.teamId !== undefined) q = q.where('team_id', '=', filter.teamId);
    if (filter.scope) q = q.where(inScope(filter.scope));
    if (filter.model !== undefined) q = q.where('model', '=', filter.model);
    if (filter.status !== undefined) q = q.where('status', '=', filter.status);
    if (filter.batchId !== undefined) q = q.where('batch_id', '=', filter.batchId);
    q = newestFirst(q, filter.from, filter.to, after);
    return q.limit(limit).execute();
  }

  /** Tasks, newest first, after the cursor. */
  async tasks(filter: TaskFilter, limit: number, after: Cursor | undefined): Promise<TaskRow[]> {
    await this.writtenCalls();
    let q = this.db.kysely.selectFrom('tasks').selectAll();
    if (filter.ownerId !== undefined) q = q.where('owner_id', '=', filter.ownerId);
    if (filter.teamId !== undefined) q = q.where('team_id', '=', filter.teamId);
    if (filter.scope) q = q.where(inScope(filter.scope, 'owner_id'));
    if (filter.status !== undefined) q = q.where('status', '=', filter.status);
    if (filter.model !== undefined) q = q.where('model', '=', filter.model);
    q = newestFirst(q, filter.from, filter.to, after);
    return q.limit(limit).execute();
  }

  /** Deletes ledger rows that began before `before`, a batch per statement; the aggregate stays. */
  async deleteBefore(before: number): Promise<number> {
    let deleted = 0;
    for (;;) {
      const batch = this.db.kysely.selectFrom('usage_ledger').select('id').where('created_at', '<', before).orderBy('created_at').limit(RETENTION_BATCH);
      const res = await this.db.kysely.deleteFrom('usage_ledger').where('id', 'in', batch).executeTakeFirst();
      const n = Number(res.numDeletedRows);
      deleted += n;
      if (n < RETENTION_BATCH) return deleted;
      // Between batches other writers get their turn.
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
}

/** Rows of the scope's teams, or its user's own. */
function inScope(scope: RowScope, userColumn: 'user_id' | 'owner_id' = 'user_id') {
  const teamIds = [...scope.teamIds];
  const within = sql<boolean>`(${teamIds.length > 0 ? sql`team_id in (${sql.join(teamIds)})` : sql`false`} or ${scope.userId !== undefined ? sql`${sql.ref(userColumn)} = ${scope.userId}` : sql`false`})`;
  return scope.teamId === undefined ? within : sql<boolean>`(${within} and team_id = ${scope.teamId})`;
}

function numericSums(row: Record<string, unknown>): UsageSums {
  const sums = { key: String(row.key ?? '') } as UsageSums;
  for (const field of SUMMED) sums[field] = Number(row[field] ?? 0);
  return sums;
}

/** Time range and cursor over a table with created_at and id, newest first (the (…, created_at, id) indexes). */
function newestFirst<T extends 'tasks' | 'usage_ledger', O>(q: SelectQueryBuilder<Database, T, O>, from: number | undefined, to: number | undefined, after: Cursor | undefined): SelectQueryBuilder<Database, T, O> {
  const created = sql.ref<number>('created_at');
  const id = sql.ref<string>('id');
  let out = q;
  if (from !== undefined) out = out.where(sql<boolean>`${created} >= ${from}`);
  if (to !== undefined) out = out.where(sql<boolean>`${created} < ${to}`);
  if (after) out = out.where(sql<boolean>`(${created} < ${after.at} or (${created} = ${after.at} and ${id} < ${after.id}))`);
  return out.orderBy(sql`created_at desc`).orderBy(sql`id desc`);
}
