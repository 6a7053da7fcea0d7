import { sql, type SelectQueryBuilder } from 'kysely';
import type { Db } from '../db.ts';
import type { DbHandle } from '../db-handle.ts';
import { TransactionBatcher, type StatementGroup, type TransactionTail } from '../transaction-batcher.ts';
import { anyCandidate } from './claim-candidates.ts';
import { insertsInto } from './inserts-into.ts';
import type { CallbackDeliveryRow, Database, TaskEventRow, TaskRow } from '../schema.ts';
import { isTerminal } from '../../core/task-state.ts';

/** Columns a status change writes; the version is checked and bumped by update(). */
export type TaskPatch = Partial<Pick<TaskRow, 'status' | 'progress' | 'message' | 'error_message' | 'result' | 'saved_state' | 'server' | 'started_at' | 'finished_at' | 'updated_at' | 'callback_url'>>;

const LIVE = ['submitted', 'started', 'process'] as const;

/** What a compare-and-set writes: the patch, and at an end the lease it gives back. */
type WrittenColumns = TaskPatch & Partial<Pick<TaskRow, 'lease_owner' | 'lease_until'>>;

/** One compare-and-set of a task: its columns applied only while the task is at `version`. */
interface VersionedChange {
  id: string;
  version: number;
  columns: WrittenColumns;
  /** Events the change adds: the task's counter moves by this many. */
  eventCount: number;
}

/** PostgreSQL types of the columns a compare-and-set writes, for the rows of its grouped statement. */
const PATCH_TYPES: Record<keyof WrittenColumns, string> = {
  status: 'text', progress: 'integer', message: 'text', error_message: 'text', result: 'text', saved_state: 'text', server: 'text', callback_url: 'text',
  started_at: 'bigint', finished_at: 'bigint', updated_at: 'bigint', lease_owner: 'text', lease_until: 'bigint',
};

/** An event to add to a task's stream; its sequence number is allocated as it is written. */
export interface NewTaskEvent {
  kind: string;
  /** JSON. */
  data: string;
}

const insertTasks = insertsInto('tasks');
const insertEvents = insertsInto('task_events');
const insertDeliveries = insertsInto('callback_deliveries');

/** Tasks, and the embedded queue kept in their lease columns. */
export class TasksRepo {
  /** Submits and status changes are committed in groups (see TransactionBatcher). */
  private readonly writes: TransactionBatcher;
  private pendingInserts: { row: TaskRow; delivery: CallbackDeliveryRow | undefined; events: TaskEventRow[] }[] = [];
  private insertFlush: Promise<void> | undefined;
  /** The compare-and-set statement of each set of columns written. */
  private readonly casGroups = new Map<string, StatementGroup<VersionedChange, number | undefined>>();

  private readonly db: Db;

  constructor(db: Db) {
    this.db = db;
    this.writes = new TransactionBatcher(db.kysely);
  }

  /**
   * Stores a new task with its first callback delivery and its first events (numbered from 1,
   * row.event_seq their count); submits of one moment share one multi-row insert.
   */
  async insert(row: TaskRow, delivery: CallbackDeliveryRow | undefined, events: readonly TaskEventRow[]): Promise<void> {
    this.pendingInserts.push({ row, delivery, events: [...events] });
    if (!this.insertFlush) {
      // Taken once, when the flush first runs (submits arriving until then join it): a run again
      // (a retried deadlock) writes the same submits.
      let batch: typeof this.pendingInserts | undefined;
      const flush = this.writes.run(async (trx, tail) => {
        if (!batch) {
          batch = this.pendingInserts.splice(0);
          this.insertFlush = undefined;
        }
        await insertTasks(trx, batch.map((b) => b.row));
        tail.append(insertDeliveries, batch.flatMap((b) => (b.delivery ? [b.delivery] : [])));
        tail.append(insertEvents, batch.flatMap((b) => b.events));
      });
      this.insertFlush = flush;
      // A flush that failed before taking its submits (no connection to the database) failed
      // every one of them: none may be written by a later flush, and the next submit starts anew.
      flush.catch(() => {
        if (this.insertFlush !== flush) return;
        this.insertFlush = undefined;
        this.pendingInserts = [];
      });
    }
    await this.insertFlush;
  }

  /** Events numbered up to `last` (the task's counter after it was bumped by their count), appended to the transaction's tail. */
  private appendNumbered(tail: TransactionTail, taskId: string, last: number, events: readonly NewTaskEvent[], now: number): TaskEventRow[] {
    const rows = events.map((event, i) => ({ task_id: taskId, seq: last - events.length + 1 + i, kind: event.kind, data: event.data, created_at: now }));
    tail.append(insertEvents, rows);
    return rows;
  }

  async find(id: string): Promise<TaskRow | undefined> {
    return this.db.kysely.selectFrom('tasks').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Keeps what a run needs to resume; not a status change, so the version stays. */
  async saveState(id: string, state: string): Promise<void> {
    await this.writes.run((trx) => trx.updateTable('tasks').set({ saved_state: state }).where('id', '=', id).execute());
  }

  /**
   * Compare-and-set: writes the patch only when the task is still at `version`, together with
   * its callback delivery, its events (numbered as they are written) and `alsoWrite` (an end's
   * rows). Answers the events as written, or undefined, having written nothing, when another
   * writer got there first.
   */
  async update(id: string, version: number, patch: TaskPatch, delivery: CallbackDeliveryRow | undefined, events: readonly NewTaskEvent[], now: number, alsoWrite?: (db: DbHandle) => Promise<void>): Promise<TaskEventRow[] | undefined> {
    // An end gives the lease back with it: the worker need not release the task afterwards.
    const written: WrittenColumns = { ...patch, ...(patch.status !== undefined && isTerminal(patch.status) ? { lease_owner: null, lease_until: null } : {}) };
    // Kysely leaves out what is undefined; so does the grouped statement.
    const columns = (Object.keys(written) as (keyof WrittenColumns)[]).filter((column) => written[column] !== undefined).sort();
    const change: VersionedChange = { id, version, columns: Object.fromEntries(columns.map((column) => [column, written[column]])), eventCount: events.length };
    // Other writes may fail; isolated, they cannot fail the rest of the batch.
    return this.writes.runGrouped(this.compareAndSet(columns), change, async (eventSeq, trx, tail) => {
      if (eventSeq === undefined) return undefined;
      if (delivery) tail.append(insertDeliveries, [delivery]);
      const numbered = this.appendNumbered(tail, id, eventSeq, events, now);
      await alsoWrite?.({ kysely: trx, dialect: this.db.dialect, tail });
      return numbered;
    }, alsoWrite !== undefined);
  }

  /**
   * The compare-and-set of changes writing `columns`: each change applies only to its task still
   * at its version, bumps the version and the event counter (by its events), and answers the
   * counter, or undefined when another writer got there first. On PostgreSQL a batch's changes are
   * one statement; SQLite, in the process, runs them one by one.
   */
  private compareAndSet(columns: readonly (keyof WrittenColumns)[]): StatementGroup<VersionedChange, number | undefined> {
    const key = columns.join(',');
    let group = this.casGroups.get(key);
    if (group) return group;
    group = {
      key,
      write: this.db.dialect === 'postgres'
        ? async (trx, changes) => {
          const rows = changes.map((change, ord) => ({ ord, id: change.id, version: change.version, event_count: change.eventCount, ...change.columns }));
          // The ids again as an array: PostgreSQL guesses 100 rows for the function and would
          // otherwise join them to every task (a scan of the table); on the array it looks them up.
          const ids = changes.map((change) => change.id);
          const res = await sql<{ ord: number; event_seq: number }>`update tasks as t set ${sql.join(columns.map((column) => sql`${sql.ref(column)} = ${sql.ref(`v.${column}`)}`))}, version = t.version + 1, event_seq = t.event_seq + v.event_count
            from json_to_recordset(${JSON.stringify(rows)}::json) as v(ord integer, id text, version integer, event_count integer, ${sql.raw(columns.map((column) => `${column} ${PATCH_TYPES[column]}`).join(', '))})
            where t.id = any(${ids}::text[]) and t.id = v.id and t.version = v.version
            returning v.ord, t.event_seq`.execute(trx);
          // Two changes of one task at one version: one of them is written, and says so.
          const answers: (number | undefined)[] = new Array(changes.length).fill(undefined);
          for (const row of res.rows) answers[row.ord] = Number(row.event_seq);
          return answers;
        }
        : async (trx, changes) => {
          const answers: (number | undefined)[] = [];
          for (const change of changes) {
            const res = await trx
              .updateTable('tasks')
              .set({ ...change.columns, version: change.version + 1, event_seq: sql<number>`event_seq + ${change.eventCount}` })
              .where('id', '=', change.id)
              .where('version', '=', change.version)
              .returning('event_seq')
              .executeTakeFirst();
            answers.push(res ? Number(res.event_seq) : undefined);
          }
          return answers;
        },
    };
    this.casGroups.set(key, group);
    return group;
  }

  /**
   * Adds events to a task that is still live, numbered after its last one (the row's counter,
   * bumped in the same statement, orders concurrent writers). Answers them as written; none when
   * the task has ended, so nothing follows its terminal status.
   */
  async appendEvents(id: string, events: readonly NewTaskEvent[], now: number): Promise<TaskEventRow[]> {
    return this.writes.run(async (trx, tail) => {
      const res = await trx
        .updateTable('tasks')
        .set({ event_seq: sql<number>`event_seq + ${events.length}` })
        .where('id', '=', id)
        .where('status', 'in', [...LIVE])
        .returning('event_seq')
        .executeTakeFirst();
      return res ? this.appendNumbered(tail, id, Number(res.event_seq), events, now) : [];
    });
  }

  /** Up to `limit` events of the task after sequence number `after`, in order. */
  async eventsAfter(id: string, after: number, limit: number): Promise<TaskEventRow[]> {
    return this.db.kysely.selectFrom('task_events').selectAll().where('task_id', '=', id).where('seq', '>', after).orderBy('seq').limit(limit).execute();
  }

  /** How many live-but-unstarted tasks were submitted before this one. */
  async queuePosition(row: Pick<TaskRow, 'id' | 'model' | 'created_at'>): Promise<number> {
    // Counted on the index of 0028-task-model-queue.ts: the model's waiting tasks, in submit order.
    const res = await this.db.kysely
      .selectFrom('tasks')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('model', '=', row.model)
      .where('status', '=', 'submitted')
      .where((eb) => eb.or([eb('created_at', '<', row.created_at), eb.and([eb('created_at', '=', row.created_at), eb('id', '<', row.id)])]))
      .executeTakeFirstOrThrow();
    return Number(res.n);
  }

  /** Up to `limit` tasks still waiting at `now` past their deadline, soonest first (the partial index of 0027-task-deadline.ts). */
  async overdueWaiting(now: number, limit: number): Promise<string[]> {
    const rows = await this.db.kysely
      .selectFrom('tasks')
      .select('id')
      .where('status', '=', sql.lit('submitted'))
      .where('deadline_at', 'is not', null)
      .where('deadline_at', '<=', now)
      .orderBy('deadline_at')
      .limit(limit)
      .execute();
    return rows.map((row) => row.id);
  }

  /**
   * Claims up to `limit` submitted tasks nobody holds for `owner` until `leaseUntil`, oldest
   * first. The partial index of claimable tasks keeps this cheap however long the queue is.
   */
  async claimSubmitted(owner: string, limit: number, leaseUntil: number): Promise<TaskRow[]> {
    // A literal, not a parameter: only then can both databases prove the partial index applies.
    return this.claimWhere(owner, limit, leaseUntil, (q) => q.where('status', '=', sql.lit('submitted')).where('lease_until', 'is', null));
  }

  /**
   * Claims live tasks whose holder's lease ran out (it stalled or died) or that were handed
   * back unfinished (a shutdown).
   */
  async claimAbandoned(owner: string, limit: number, now: number, leaseUntil: number): Promise<TaskRow[]> {
    return this.claimWhere(owner, limit, leaseUntil, (q) =>
      q.where('status', 'in', [...LIVE]).where((eb) => eb.or([eb('lease_until', '<', now), eb.and([eb('status', '!=', 'submitted'), eb('lease_until', 'is', null)])])),
    );
  }

  private async claimWhere(
    owner: string,
    limit: number,
    leaseUntil: number,
    filter: (q: SelectQueryBuilder<Database, 'tasks', { id: string }>) => SelectQueryBuilder<Database, 'tasks', { id: string }>,
  ): Promise<TaskRow[]> {
    const k = this.db.kysely;
    let candidates = filter(k.selectFrom('tasks').select('id')).orderBy('created_at').orderBy('id').limit(limit);
    // PostgreSQL: concurrent claimers skip each other's rows instead of queueing on them.
    if (this.db.dialect === 'postgres') candidates = candidates.forUpdate().skipLocked();
    else if (!(await anyCandidate(candidates))) return [];
    return k
      .updateTable('tasks')
      .set({ lease_owner: owner, lease_until: leaseUntil, attempts: sql<number>`attempts + 1` })
      .where('id', 'in', candidates)
      // The claimed rows as they are now: the worker starts from them without reading them again.
      .returningAll()
      .execute();
  }

  /** Extends the leases `owner` still holds; answers the ids it no longer holds. */
  async renewLeases(owner: string, ids: readonly string[], leaseUntil: number): Promise<string[]> {
    if (ids.length === 0) return [];
    const kept = await this.db.kysely
      .updateTable('tasks')
      .set({ lease_until: leaseUntil })
      .where('id', 'in', [...ids])
      .where('lease_owner', '=', owner)
      .returning('id')
      .execute();
    const held = new Set(kept.map((r) => r.id));
    return ids.filter((id) => !held.has(id));
  }

  /** Gives a task back: another worker (or this one after a restart) may take it at once. */
  async release(owner: string, id: string): Promise<void> {
    await this.writes.run((trx) => trx.updateTable('tasks').set({ lease_owner: null, lease_until: null }).where('id', '=', id).where('lease_owner', '=', owner).execute());
  }

  /**
   * Gives back every lease of a live task. For a store one process uses alone: at its start the
   * leases are its earlier life's, and their tasks become claimable at once.
   */
  async releaseAllLeases(): Promise<number> {
    const res = await this.db.kysely
      .updateTable('tasks')
      .set({ lease_owner: null, lease_until: null })
      .where('status', 'in', [...LIVE])
      .where('lease_owner', 'is not', null)
      .executeTakeFirst();
    return Number(res.numUpdatedRows);
  }

  /** Records that `instance` is alive until `aliveUntil`. */
  async beat(instance: string, aliveUntil: number): Promise<void> {
    await this.db.kysely
      .insertInto('worker_heartbeats')
      .values({ instance_id: instance, alive_until: aliveUntil })
      .onConflict((oc) => oc.column('instance_id').doUpdateSet({ alive_until: aliveUntil }))
      .execute();
  }

  /**
   * Instances whose heartbeat lapsed before `now` are dead: the leases they held are given back
   * (their tasks are claimable at once) and their heartbeats removed. Answers the tasks freed.
   */
  async releaseSilentHolders(now: number): Promise<number> {
    return this.db.kysely.transaction().execute(async (trx) => {
      const dead = (await trx.selectFrom('worker_heartbeats').select('instance_id').where('alive_until', '<', now).execute()).map((r) => r.instance_id);
      if (dead.length === 0) return 0;
      const res = await trx
        .updateTable('tasks')
        .set({ lease_owner: null, lease_until: null })
        .where('status', 'in', [...LIVE])
        .where('lease_owner', 'in', dead)
        .executeTakeFirst();
      // One that beat again meanwhile keeps its row; its renewal finds its tasks gone.
      await trx.deleteFrom('worker_heartbeats').where('instance_id', 'in', dead).where('alive_until', '<', now).execute();
      return Number(res.numUpdatedRows);
    });
  }

  /** Removes an instance's heartbeat (it stopped and handed its tasks back). */
  async forgetHeartbeat(instance: string): Promise<void> {
    await this.db.kysely.deleteFrom('worker_heartbeats').where('instance_id', '=', instance).execute();
  }

  /** Live tasks submitted before `before` (for re-queueing after a crash between store and enqueue). */
  async liveIds(before: number, limit: number): Promise<string[]> {
    const rows = await this.db.kysely
      .selectFrom('tasks')
      .select('id')
      .where('status', 'in', [...LIVE])
      .where('created_at', '<', before)
      .orderBy('created_at')
      .limit(limit)
      .execute();
    return rows.map((r) => r.id);
  }
}
