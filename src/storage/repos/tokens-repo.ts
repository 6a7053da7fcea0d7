import type { Db } from '../db.ts';
import type { ApiTokenRow } from '../schema.ts';

export type TokenSummary = Omit<ApiTokenRow, 'token_hash'>;

/** Which tokens a listing shows: those of the given teams, or of the given user. */
export interface TokenScope {
  teamIds: readonly string[];
  userId?: string;
}

/** SQL for users and their API tokens. */
export class TokensRepo {
  private readonly db: Db;

  constructor(db: Db) {
    this.db = db;
  }

  /** Inserts the token, creating its user on first use. */
  async insert(row: ApiTokenRow): Promise<void> {
    await this.db.kysely.transaction().execute(async (trx) => {
      await trx
        .insertInto('users')
        .values({ id: row.user_id, created_at: row.created_at })
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
      await trx.insertInto('api_tokens').values(row).execute();
    });
  }

  /** The token of a hash; `in_team` is false when it works for a team its user is no member of (left, or the team was deleted). */
  async findByHash(tokenHash: string): Promise<(Omit<TokenSummary, 'limits'> & { in_team: boolean }) | undefined> {
    const row = await this.db.kysely
      .selectFrom('api_tokens')
      .leftJoin('team_members', (join) => join.onRef('team_members.team_id', '=', 'api_tokens.team_id').onRef('team_members.user_id', '=', 'api_tokens.user_id'))
      .select(['api_tokens.id', 'api_tokens.user_id', 'api_tokens.name', 'api_tokens.created_at', 'api_tokens.team_id', 'team_members.role'])
      .where('api_tokens.token_hash', '=', tokenHash)
      .executeTakeFirst();
    if (!row) return undefined;
    const { role, ...token } = row;
    return { ...token, in_team: token.team_id === null || role !== null };
  }

  async find(id: string): Promise<TokenSummary | undefined> {
    return this.db.kysely.selectFrom('api_tokens').select(['id', 'user_id', 'name', 'created_at', 'limits', 'team_id']).where('id', '=', id).executeTakeFirst();
  }

  /** Every token, or those a scope shows. */
  async list(scope?: TokenScope): Promise<TokenSummary[]> {
    let q = this.db.kysely.selectFrom('api_tokens').select(['id', 'user_id', 'name', 'created_at', 'limits', 'team_id']);
    if (scope) {
      const { teamIds, userId } = scope;
      q = q.where((eb) => eb.or([...(teamIds.length > 0 ? [eb('team_id', 'in', [...teamIds])] : []), ...(userId !== undefined ? [eb('user_id', '=', userId)] : [])]));
    }
    return q.orderBy('created_at').orderBy('id').execute();
  }

  /** Moves a token to a team (or out of any, with null). */
  async setTeam(id: string, teamId: string | null): Promise<void> {
    await this.db.kysely.updateTable('api_tokens').set({ team_id: teamId }).where('id', '=', id).execute();
  }

  /** Deletes the token; answers its hash (for cache invalidation) or undefined when unknown. */
  async delete(id: string): Promise<string | undefined> {
    const row = await this.db.kysely.deleteFrom('api_tokens').where('id', '=', id).returning('token_hash').executeTakeFirst();
    return row?.token_hash;
  }
}
