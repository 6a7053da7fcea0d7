import type { ExpressionBuilder } from 'kysely';
import type { Db } from '../db.ts';
import { anyCandidate } from './claim-candidates.ts';
import type { CallbackAttemptRow, CallbackDeliveryRow, Database } from '../schema.ts';

/** What became of one try at a delivery, written together with the attempt itself. */
export type DeliveryOutcome =
  | { state: 'delivered' }
  | { state: 'pending'; nextAttemptAt: number }
  | { state: 'failed' };

export interface RecordedAttempt {
  attempt: CallbackAttemptRow;
  outcome: DeliveryOutcome;
  /** The lease the sender held; a sender whose lease was taken over does not change the delivery. */
  heldLease: number;
  now: number;
}

/** The callback outbox: due deliveries, the tries at them and their outcome. */
export class CallbacksRepo {
  private readonly db: Db;

  constructor(db: Db) {
    this.db = db;
  }

  /**
   * Leases up to `limit` due deliveries until `leaseUntil`: pending, due, nobody sending them,
   * and no earlier delivery of the same task still pending, so each task's updates go out in
   * order and one at a time. Answers at most one delivery per task.
   */
  async claimDue(now: number, leaseUntil: number, limit: number): Promise<CallbackDeliveryRow[]> {
    const k = this.db.kysely;
    let candidates = k
      .selectFrom('callback_deliveries as d')
      .select('d.id')
      .where('d.state', '=', 'pending')
      .where('d.next_attempt_at', '<=', now)
      .where((eb) => eb.or([eb('d.lease_until', 'is', null), eb('d.lease_until', '<', now)]))
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('callback_deliveries as earlier')
              .select('earlier.id')
              .whereRef('earlier.task_id', '=', 'd.task_id')
              .whereRef('earlier.seq', '<', 'd.seq')
              // Pending, said as neither end state: with `= 'pending'` PostgreSQL, lacking fresh
              // statistics, intersects with the due index and reads every pending row per probe.
              .where('earlier.state', 'not in', ['delivered', 'failed']),
          ),
        ),
      )
      // The due index gives this order, so the scan stops after `limit` claimable rows.
      .orderBy('d.next_attempt_at')
      .limit(limit);
    // PostgreSQL: dispatchers of other instances skip the rows being claimed instead of waiting on them.
    if (this.db.dialect === 'postgres') candidates = candidates.forUpdate().skipLocked();
    else if (!(await anyCandidate(candidates))) return [];
    return k
      .updateTable('callback_deliveries')
      .set({ lease_until: leaseUntil })
      .where('id', 'in', candidates)
      .returningAll()
      .execute();
  }

  /** Stores tries and their outcomes in one transaction (the dispatcher writes them in batches). */
  async recordAttempts(recorded: readonly RecordedAttempt[]): Promise<void> {
    if (recorded.length === 0) return;
    await this.db.kysely.transaction().execute(async (trx) => {
      await trx.insertInto('callback_attempts').values(recorded.map((r) => r.attempt)).execute();
      for (const { attempt, outcome, heldLease, now } of recorded) {
        await trx
          .updateTable('callback_deliveries')
          .set({
            state: outcome.state,
            attempts: attempt.attempt,
            ...(outcome.state === 'pending' ? { next_attempt_at: outcome.nextAttemptAt } : {}),
            lease_until: null,
            updated_at: now,
          })
          .where('id', '=', attempt.delivery_id)
          .where('lease_until', '=', heldLease)
          .execute();
      }
    });
  }

  async taskExists(taskId: string): Promise<boolean> {
    const row = await this.db.kysely.selectFrom('tasks').select('id').where('id', '=', taskId).executeTakeFirst();
    return row !== undefined;
  }

  /**
   * Deletes deliveries that ended (delivered or given up) before `before`, with their tries;
   * pending ones are kept whatever their age. Answers how many deliveries went.
   */
  async pruneEnded(before: number): Promise<number> {
    return this.db.kysely.transaction().execute(async (trx) => {
      const ended = (eb: ExpressionBuilder<Database, 'callback_deliveries'>) => eb.and([eb('state', '!=', 'pending'), eb('updated_at', '<', before)]);
      await trx
        .deleteFrom('callback_attempts')
        .where('delivery_id', 'in', trx.selectFrom('callback_deliveries').select('id').where(ended))
        .execute();
      const res = await trx.deleteFrom('callback_deliveries').where(ended).executeTakeFirst();
      return Number(res.numDeletedRows);
    });
  }

  async deliveryById(id: string): Promise<CallbackDeliveryRow | undefined> {
    return this.db.kysely.selectFrom('callback_deliveries').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /**
   * Makes a delivery that is not delivered due now, unless a sender holds it. Answers the
   * delivery as it now is, or undefined when it was delivered or is being sent.
   */
  async makeDueNow(id: string, now: number): Promise<CallbackDeliveryRow | undefined> {
    return this.db.kysely
      .updateTable('callback_deliveries')
      .set({ state: 'pending', next_attempt_at: now, updated_at: now })
      .where('id', '=', id)
      .where('state', '!=', 'delivered')
      .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
      .returningAll()
      .executeTakeFirst();
  }

  /** A task's deliveries in status order. */
  async deliveriesOf(taskId: string): Promise<CallbackDeliveryRow[]> {
    return this.db.kysely.selectFrom('callback_deliveries').selectAll().where('task_id', '=', taskId).orderBy('seq').execute();
  }

  /** Every try at a task's deliveries, oldest first. */
  async attemptsOf(taskId: string): Promise<CallbackAttemptRow[]> {
    return this.db.kysely
      .selectFrom('callback_attempts')
      .selectAll()
      .where('task_id', '=', taskId)
      .orderBy('at')
      .orderBy('attempt')
      .execute();
  }
}
