import type { Db } from '../db.ts';

const LIVE = ['submitted', 'started', 'process'] as const;

/** What limits belong to: a token, a user, or a team (all its tokens together). */
export type SubjectKind = 'token' | 'user' | 'team';

/** Limits of tokens and users, and what a subject has spent and holds, read to seed the counters. */
export class LimitsRepo {
  private readonly db: Db;

  constructor(db: Db) {
    this.db = db;
  }

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

  async teamLimits(teamId: string): Promise<string | null | undefined> {
    const row = await this.db.kysely.selectFrom('teams').select('limits').where('id', '=', teamId).executeTakeFirst();
    return row?.limits;
  }

  async setTeamLimits(teamId: string, limits: string | null): Promise<void> {
    await this.db.kysely.updateTable('teams').set({ limits }).where('id', '=', teamId).execute();
  }

  /** Every token, user and team that has limits. */
  async limitedSubjects(): Promise<{ tokens: { id: string; limits: string }[]; users: { user_id: string; limits: string }[]; teams: { id: string; limits: string }[] }> {
    const [tokens, users, teams] = await Promise.all([
      this.db.kysely.selectFrom('api_tokens').select(['id', 'limits']).where('limits', 'is not', null).execute(),
      this.db.kysely.selectFrom('user_limits').select(['user_id', 'limits']).execute(),
      this.db.kysely.selectFrom('teams').select(['id', 'limits']).where('limits', 'is not', null).execute(),
    ]);
    return { tokens: tokens as { id: string; limits: string }[], users, teams: teams as { id: string; limits: string }[] };
  }

  /**
   * Micro-credits a subject spent from `startDay` on: a token's or user's from the daily
   * aggregate, a team's from its ledger rows (the aggregate has no team).
   */
  async spentSince(by: SubjectKind, id: string, startDay: string): Promise<number> {
    if (by === 'team') {
      const row = await this.db.kysely
        .selectFrom('usage_ledger')
        .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('cost'), eb.val(0)).as('spent'))
        .where('team_id', '=', id)
        .where('created_at', '>=', Date.parse(`${startDay === '0000-00-00' ? '1970-01-01' : startDay}T00:00:00Z`))
        .executeTakeFirstOrThrow();
      return Number(row.spent);
    }
    const row = await this.db.kysely
      .selectFrom('usage_daily')
      .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('cost'), eb.val(0)).as('spent'))
      .where(by === 'token' ? 'token_id' : 'user_id', '=', id)
      .where('day', '>=', startDay)
      .executeTakeFirstOrThrow();
    return Number(row.spent);
  }

  /** The live tasks of a subject: the request ids their slots and held credits go by. */
  async liveTasks(by: SubjectKind, id: string): Promise<{ id: string; held: number }[]> {
    const rows = await this.db.kysely
      .selectFrom('tasks')
      .select(['request_id', 'reserved_credits'])
      .where('status', 'in', [...LIVE])
      .where(by === 'token' ? 'token_id' : by === 'team' ? 'team_id' : 'owner_id', '=', id)
      .execute();
    return rows.map((r) => ({ id: r.request_id, held: Number(r.reserved_credits) }));
  }
}
