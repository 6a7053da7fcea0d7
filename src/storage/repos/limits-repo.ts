import type { Db } from '../db.ts';

const LIVE = ['submitted', 'started', 'process'] as const;

/** Limits of tokens and users, and what a subject has spent and holds, read to seed the counters. */
export class LimitsRepo {
  constructor(private readonly db: Db) {}

  async tokenLimits(tokenId: string): Promise<{ user_id: string; limits: string | null } | undefined> {
    return this.db.kysely.selectFrom('api_tokens').select(['user_id', 'limits']).where('id', '=', tokenId).executeTakeFirst();
  }

  /** Sets a token's limits; answers false when the token is unknown. */
  async setToken(tokenId: string, fields: { limits?: string | null; name?: string | null }): Promise<boolean> {
    const res = await this.db.kysely.updateTable('api_tokens').set(fields).where('id', '=', tokenId).executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  async userLimits(userId: string): Promise<string | undefined> {
    const row = await this.db.kysely.selectFrom('user_limits').select('limits').where('user_id', '=', userId).executeTakeFirst();
    return row?.limits;
  }

  /** Sets (or, with null, removes) a user's limits. */
  async setUser(userId: string, limits: string | null, now: number): Promise<void> {
    if (limits === null) {
      await this.db.kysely.deleteFrom('user_limits').where('user_id', '=', userId).execute();
      return;
    }
    await this.db.kysely
      .insertInto('user_limits')
      .values({ user_id: userId, limits, updated_at: now })
      .onConflict((oc) => oc.column('user_id').doUpdateSet({ limits, updated_at: now }))
      .execute();
  }

  /** Every token and user that has limits. */
  async limitedSubjects(): Promise<{ tokens: { id: string; limits: string }[]; users: { user_id: string; limits: string }[] }> {
    const [tokens, users] = await Promise.all([
      this.db.kysely.selectFrom('api_tokens').select(['id', 'limits']).where('limits', 'is not', null).execute(),
      this.db.kysely.selectFrom('user_limits').select(['user_id', 'limits']).execute(),
    ]);
    return { tokens: tokens as { id: string; limits: string }[], users };
  }

  /** Micro-credits a token or user spent from `startDay` on (the daily aggregate). */
  async spentSince(by: 'token' | 'user', id: string, startDay: string): Promise<number> {
    const row = await this.db.kysely
      .selectFrom('usage_daily')
      .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('cost'), eb.val(0)).as('spent'))
      .where(by === 'token' ? 'token_id' : 'user_id', '=', id)
      .where('day', '>=', startDay)
      .executeTakeFirstOrThrow();
    return Number(row.spent);
  }

  /** The live tasks of a token or user: the request ids their slots and held credits go by. */
  async liveTasks(by: 'token' | 'user', id: string): Promise<{ id: string; held: number }[]> {
    const rows = await this.db.kysely
      .selectFrom('tasks')
      .select(['request_id', 'reserved_credits'])
      .where('status', 'in', [...LIVE])
      .where(by === 'token' ? 'token_id' : 'owner_id', '=', id)
      .execute();
    return rows.map((r) => ({ id: r.request_id, held: Number(r.reserved_credits) }));
  }
}
