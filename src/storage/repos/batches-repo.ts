import type { Db } from '../db.ts';
import type { BatchLineRow, BatchRow, OpenAiFileRow } from '../schema.ts';

/** Statuses of a batch some instance still has to drive. */
export const LIVE_BATCH = ['validating', 'in_progress', 'finalizing', 'cancelling'] as const;
/** Rows per insert statement: well under SQLite's and PostgreSQL's limits on bound values. */
const LINES_PER_INSERT = 200;

/** A batch's lines by state; done ones split by the file they go to. */
export interface LineCounts {
  pending: number;
  running: number;
  done: number;
  failed: number;
}

/** What a batch's end writes: its terminal fields, and the output and error files it names. */
export interface BatchEnd {
  patch: Partial<BatchRow>;
  files: OpenAiFileRow[];
}

/** SQL for batches (/openai/v1/batches), their leases and their lines. */
export class BatchesRepo {
  private readonly db: Db;

  constructor(db: Db) {
    this.db = db;
  }

  async insert(row: BatchRow): Promise<void> {
    await this.db.kysely.insertInto('batches').values(row).execute();
  }

  /** The user's batch; undefined for an unknown id or another user's. */
  async find(userId: string, id: string): Promise<BatchRow | undefined> {
    return this.db.kysely.selectFrom('batches').selectAll().where('id', '=', id).where('user_id', '=', userId).executeTakeFirst();
  }

  async get(id: string): Promise<BatchRow | undefined> {
    return this.db.kysely.selectFrom('batches').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** The user's batches (every user's without one), newest first, after the batch `after`. */
  async list(userId: string | undefined, limit: number, after: BatchRow | undefined): Promise<BatchRow[]> {
    let q = this.db.kysely.selectFrom('batches').selectAll();
    if (userId !== undefined) q = q.where('user_id', '=', userId);
    if (after) q = q.where((eb) => eb.or([eb('created_at', '<', after.created_at), eb.and([eb('created_at', '=', after.created_at), eb('id', '<', after.id)])]));
    return q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
  }

  /** Moves a running batch of the user to cancelling; answers the batch as it is now (undefined: not the user's). */
  async cancel(userId: string, id: string, now: number): Promise<BatchRow | undefined> {
    await this.db.kysely
      .updateTable('batches')
      .set({ status: 'cancelling', cancelling_at: now })
      .where('id', '=', id)
      .where('user_id', '=', userId)
      .where('status', 'in', ['validating', 'in_progress'])
      .execute();
    return this.find(userId, id);
  }

  /**
   * Takes the lease of one live batch nobody holds (or whose holder's lease ran out), oldest
   * first, skipping `held`. Compare-and-set: of two instances after one batch, one gets it.
   */
  async claim(owner: string, now: number, leaseUntil: number, held: readonly string[]): Promise<BatchRow | undefined> {
    let q = this.db.kysely
      .selectFrom('batches')
      .select('id')
      .where('status', 'in', [...LIVE_BATCH])
      .where((eb) => eb.or([eb('lease_owner', 'is', null), eb('lease_until', '<', now)]));
    if (held.length > 0) q = q.where('id', 'not in', [...held]);
    const candidates = await q.orderBy('created_at').limit(4).execute();
    for (const { id } of candidates) {
      const taken = await this.db.kysely
        .updateTable('batches')
        .set({ lease_owner: owner, lease_until: leaseUntil })
        .where('id', '=', id)
        .where('status', 'in', [...LIVE_BATCH])
        .where((eb) => eb.or([eb('lease_owner', 'is', null), eb('lease_until', '<', now)]))
        .returningAll()
        .executeTakeFirst();
      if (taken) return taken;
    }
    return undefined;
  }

  /** Extends the lease; false when `owner` no longer holds it. */
  async renew(owner: string, id: string, leaseUntil: number): Promise<boolean> {
    const res = await this.db.kysely.updateTable('batches').set({ lease_until: leaseUntil }).where('id', '=', id).where('lease_owner', '=', owner).executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  async release(owner: string, id: string): Promise<void> {
    await this.db.kysely.updateTable('batches').set({ lease_owner: null, lease_until: null }).where('id', '=', id).where('lease_owner', '=', owner).execute();
  }

  /** Gives back every lease: at the start of a process that uses the store alone, they are its earlier life's. */
  async releaseAllLeases(): Promise<number> {
    const res = await this.db.kysely.updateTable('batches').set({ lease_owner: null, lease_until: null }).where('lease_owner', 'is not', null).executeTakeFirst();
    return Number(res.numUpdatedRows);
  }

  /** Changes a batch `owner` holds from one of the statuses `from`; false when it was not there (cancelled meanwhile, lease lost). */
  async update(owner: string, id: string, from: readonly string[], patch: Partial<BatchRow>): Promise<boolean> {
    const res = await this.db.kysely
      .updateTable('batches')
      .set(patch)
      .where('id', '=', id)
      .where('lease_owner', '=', owner)
      .where('status', 'in', [...from])
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  /**
   * Ends a batch `owner` holds: its output and error files registered, its terminal fields
   * written and its lines deleted, in one transaction.
   */
  async end(owner: string, id: string, from: readonly string[], end: BatchEnd): Promise<boolean> {
    return this.db.kysely.transaction().execute(async (trx) => {
      const res = await trx
        .updateTable('batches')
        .set({ ...end.patch, lease_owner: null, lease_until: null })
        .where('id', '=', id)
        .where('lease_owner', '=', owner)
        .where('status', 'in', [...from])
        .executeTakeFirst();
      if (Number(res.numUpdatedRows) === 0) return false;
      for (const file of end.files) await trx.insertInto('openai_files').values(file).execute();
      await trx.deleteFrom('batch_lines').where('batch_id', '=', id).execute();
      return true;
    });
  }

  // Lines.

  async deleteLines(batchId: string): Promise<void> {
    await this.db.kysely.deleteFrom('batch_lines').where('batch_id', '=', batchId).execute();
  }

  async insertLines(rows: BatchLineRow[]): Promise<void> {
    if (rows.length === 0) return;
    await this.db.kysely.transaction().execute(async (trx) => {
      for (let i = 0; i < rows.length; i += LINES_PER_INSERT) await trx.insertInto('batch_lines').values(rows.slice(i, i + LINES_PER_INSERT)).execute();
    });
  }

  async countLines(batchId: string): Promise<LineCounts> {
    const rows = await this.db.kysely
      .selectFrom('batch_lines')
      .select((eb) => ['state', 'failed', eb.fn.countAll<number>().as('n')])
      .where('batch_id', '=', batchId)
      .groupBy(['state', 'failed'])
      .execute();
    const counts: LineCounts = { pending: 0, running: 0, done: 0, failed: 0 };
    for (const row of rows) {
      const n = Number(row.n);
      if (row.state === 'done') counts[Number(row.failed) === 1 ? 'failed' : 'done'] += n;
      else counts[row.state] += n;
    }
    return counts;
  }

  /**
   * Marks up to `limit` pending lines running, first lines first, and answers them, while the
   * batch is in progress and `owner` holds it; otherwise answers no line and the batch's status.
   * The batch's row is read in the same transaction (locked on PostgreSQL), so no line starts
   * once a cancel is committed.
   */
  async startLines(owner: string, batchId: string, limit: number): Promise<{ status: string | undefined; lines: BatchLineRow[] }> {
    return this.db.kysely.transaction().execute(async (trx) => {
      let read = trx.selectFrom('batches').select(['status', 'lease_owner']).where('id', '=', batchId);
      if (this.db.dialect === 'postgres') read = read.forUpdate();
      const batch = await read.executeTakeFirst();
      if (!batch || batch.lease_owner !== owner) return { status: undefined, lines: [] };
      if (batch.status !== 'in_progress') return { status: batch.status, lines: [] };
      const rows = await trx.selectFrom('batch_lines').selectAll().where('batch_id', '=', batchId).where('state', '=', 'pending').orderBy('line_no').limit(limit).execute();
      if (rows.length > 0) {
        await trx.updateTable('batch_lines').set({ state: 'running' }).where('batch_id', '=', batchId).where('line_no', 'in', rows.map((r) => r.line_no)).where('state', '=', 'pending').execute();
      }
      return { status: batch.status, lines: rows.map((r) => ({ ...r, state: 'running' as const })) };
    });
  }

  /** Lines in `state`, first lines first, after line `afterLine`. */
  async linesIn(batchId: string, state: BatchLineRow['state'], afterLine: number, limit: number): Promise<BatchLineRow[]> {
    return this.db.kysely
      .selectFrom('batch_lines')
      .selectAll()
      .where('batch_id', '=', batchId)
      .where('state', '=', state)
      .where('line_no', '>', afterLine)
      .orderBy('line_no')
      .limit(limit)
      .execute();
  }

  /**
   * Writes the outcome of lines in state `from`: a line another instance settled meanwhile (it
   * took the batch over and marked it interrupted) keeps that outcome.
   */
  async finishLines(batchId: string, from: BatchLineRow['state'], done: { lineNo: number; result: string; failed: boolean }[]): Promise<void> {
    if (done.length === 0) return;
    await this.db.kysely.transaction().execute(async (trx) => {
      for (const line of done) {
        await trx
          .updateTable('batch_lines')
          .set({ state: 'done', result: line.result, failed: line.failed ? 1 : 0, body: null })
          .where('batch_id', '=', batchId)
          .where('line_no', '=', line.lineNo)
          .where('state', '=', from)
          .execute();
      }
    });
  }

  /** Results of done lines bound for one file (`failed` 1: the error file), first lines first, after line `afterLine`. */
  async results(batchId: string, failed: boolean, afterLine: number, limit: number): Promise<{ line_no: number; result: string }[]> {
    const rows = await this.db.kysely
      .selectFrom('batch_lines')
      .select(['line_no', 'result'])
      .where('batch_id', '=', batchId)
      .where('state', '=', 'done')
      .where('failed', '=', failed ? 1 : 0)
      .where('line_no', '>', afterLine)
      .orderBy('line_no')
      .limit(limit)
      .execute();
    return rows.map((r) => ({ line_no: r.line_no, result: r.result ?? '' }));
  }
}
