import type { Db } from '../db.ts';
import type { IdempotencyKeyRow } from '../schema.ts';

export type IdempotencyScope = Pick<IdempotencyKeyRow, 'user_id' | 'scope' | 'key'>;

/** Idempotency keys and the first answers kept under them. */
export class IdempotencyRepo {
  private readonly db: Db;

  constructor(db: Db) {
    this.db = db;
  }

  /** Claims the key for a first call; false when a row holds it already. */
  async claim(row: IdempotencyKeyRow): Promise<boolean> {
    const res = await this.db.kysely
      .insertInto('idempotency_keys')
      .values(row)
      .onConflict((oc) => oc.columns(['user_id', 'scope', 'key']).doNothing())
      .executeTakeFirst();
    return Number(res.numInsertedOrUpdatedRows ?? 0) === 1;
  }

  async find(at: IdempotencyScope): Promise<IdempotencyKeyRow | undefined> {
    return this.db.kysely
      .selectFrom('idempotency_keys')
      .selectAll()
      .where('user_id', '=', at.user_id)
      .where('scope', '=', at.scope)
      .where('key', '=', at.key)
      .executeTakeFirst();
  }

  async complete(at: IdempotencyScope, answer: Pick<IdempotencyKeyRow, 'status_code' | 'content_type' | 'response'>): Promise<void> {
    await this.db.kysely
      .updateTable('idempotency_keys')
      .set({ ...answer, state: 'done' })
      .where('user_id', '=', at.user_id)
      .where('scope', '=', at.scope)
      .where('key', '=', at.key)
      .execute();
  }

  /** Frees the key; with `createdAt`, only the row of that claim (a later claim keeps its own). */
  async release(at: IdempotencyScope, createdAt?: number): Promise<void> {
    let q = this.db.kysely.deleteFrom('idempotency_keys').where('user_id', '=', at.user_id).where('scope', '=', at.scope).where('key', '=', at.key);
    if (createdAt !== undefined) q = q.where('created_at', '=', createdAt);
    await q.execute();
  }

  async deleteExpired(now: number): Promise<number> {
    const res = await this.db.kysely.deleteFrom('idempotency_keys').where('expires_at', '<', now).executeTakeFirst();
    return Number(res.numDeletedRows);
  }
}
