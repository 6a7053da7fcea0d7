import { sql, type SelectQueryBuilder } from 'kysely';
import type { Db } from '../db.ts';
import { TransactionBatcher } from '../transaction-batcher.ts';
import type { CallbackDeliveryRow, Database, TaskRow } from '../schema.ts';

/** Columns a status change writes; the version is checked and bumped by update(). */
export type TaskPatch = Partial<Pick<TaskRow, 'status' | 'progress' | 'message' | 'error_message' | 'result' | 'server' | 'started_at' | 'finished_at' | 'updated_at' | 'callback_url'>>;

const LIVE = ['submitted', 'started', 'process'] as const;
/** Rows per INSERT statement, well under both databases' limits on bound parameters. */
const INSERT_CHUNK = 500;

/** Tasks, and the embedded queue kept in their lease columns. */
export class TasksRepo {
  /** Submits and status changes are committed in groups (see TransactionBatcher). */
  private readonly writes: TransactionBatcher;
  private pendingInserts: { row: TaskRow; delivery: CallbackDeliveryRow | undefined }[] = [];
  private insertFlush: Promise<void> | undefined;

  constructor(private readonly db: Db) {
    this.writes = new TransactionBatcher(db.kysely);
  }

  /** Stores a new task with its first callback delivery; submits of one moment share one multi-row insert. */
  async insert(row: TaskRow, delivery?: CallbackDeliveryRow): Promise<void> {
    this.pendingInserts.push({ row, delivery });
    this.insertFlush ??= this.writes.run(async (trx) => {
      // Submits arriving from here on go into the next flush.
      const batch = this.pendingInserts.splice(0);
      this.insertFlush = undefined;
      for (let i = 0; i < batch.length; i += INSERT_CHUNK) {
        const chunk = batch.slice(i, i + INSERT_CHUNK);
        await trx.insertInto('tasks').values(chunk.map((b) => b.row)).execute();
        const deliveries = chunk.flatMap((b) => (b.delivery ? [b.delivery] : []));
        if (deliveries.length > 0) await trx.insertInto('callback_deliveries').values(deliveries).execute();
      }
    });
    await this.insertFlush;
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
   * its callback delivery. Answers false when another writer got there first.
   */
  async update(id: string, version: number, patch: TaskPatch, delivery?: CallbackDeliveryRow): Promise<boolean> {
    return this.writes.run(async (trx) => {
      const res = await trx
        .updateTable('tasks')
        .set({ ...patch, version: version + 1 })
        .where('id', '=', id)
        .where('version', '=', version)
        .executeTakeFirst();
      if (Number(res.numUpdatedRows) !== 1) return false;
      if (delivery) await trx.insertInto('callback_deliveries').values(delivery).execute();
      return true;
    });
  }

  /** How many live-but-unstarted tasks were submitted before this one. */
  async queuePosition(row: Pick<TaskRow, 'id' | 'created_at'>): Promise<number> {
    const res = await this.db.kysely
      .selectFrom('tasks')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('status', '=', 'submitted')
      .where((eb) => eb.or([eb('created_at', '<', row.created_at), eb.and([eb('created_at', '=', row.created_at), eb('id', '<', row.id)])]))
      .executeTakeFirstOrThrow();
    return Number(res.n);
  }

  /**
   * Claims up to `limit` submitted tasks nobody holds for `owner` until `leaseUntil`, oldest
   * first. The partial index of claimable tasks keeps this cheap however long the queue is.
   */
  async claimSubmitted(owner: string, limit: number, leaseUntil: number): Promise<{ id: string; attempts: number }[]> {
    // A literal, not a parameter: only then can both databases prove the partial index applies.
    return this.claimWhere(owner, limit, leaseUntil, (q) => q.where('status', '=', sql.lit('submitted')).where('lease_until', 'is', null));
  }

  /**
   * Claims live tasks whose holder's lease ran out (it stalled or died) or that were handed
   * back unfinished (a shutdown).
   */
  async claimAbandoned(owner: string, limit: number, now: number, leaseUntil: number): Promise<{ id: string; attempts: number }[]> {
    return this.claimWhere(owner, limit, leaseUntil, (q) =>
      q.where('status', 'in', [...LIVE]).where((eb) => eb.or([eb('lease_until', '<', now), eb.and([eb('status', '!=', 'submitted'), eb('lease_until', 'is', null)])])),
    );
  }

  private async claimWhere(
    owner: string,
    limit: number,
    leaseUntil: number,
    filter: (q: SelectQueryBuilder<Database, 'tasks', { id: string }>) => SelectQueryBuilder<Database, 'tasks', { id: string }>,
  ): Promise<{ id: string; attempts: number }[]> {
    const k = this.db.kysely;
    let candidates = filter(k.selectFrom('tasks').select('id')).orderBy('created_at').orderBy('id').limit(limit);
    // PostgreSQL: concurrent claimers skip each other's rows instead of queueing on them.
    if (this.db.dialect === 'postgres') candidates = candidates.forUpdate().skipLocked();
    return k
      .updateTable('tasks')
      .set({ lease_owner: owner, lease_until: leaseUntil, attempts: sql<number>`attempts + 1` })
      .where('id', 'in', candidates)
      .returning(['id', 'attempts'])
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
    await this.db.kysely.updateTable('tasks').set({ lease_owner: null, lease_until: null }).where('id', '=', id).where('lease_owner', '=', owner).execute();
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
