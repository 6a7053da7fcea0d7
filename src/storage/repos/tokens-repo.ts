import type { Db } from '../db.ts';
import type { ApiTokenRow } from '../schema.ts';

export type TokenSummary = Omit<ApiTokenRow, 'token_hash'>;

/** SQL for users and their API tokens. */
export class TokensRepo {
  constructor(private readonly db: Db) {}

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

  async findByHash(tokenHash: string): Promise<Omit<TokenSummary, 'limits'> | undefined> {
    return this.db.kysely
      .selectFrom('api_tokens')
      .select(['id', 'user_id', 'name', 'created_at'])
      .where('token_hash', '=', tokenHash)
      .executeTakeFirst();
  }

  async list(): Promise<TokenSummary[]> {
    return this.db.kysely
      .selectFrom('api_tokens')
      .select(['id', 'user_id', 'name', 'created_at', 'limits'])
      .orderBy('created_at')
      .orderBy('id')
      .execute();
  }

  /** Deletes the token; answers its hash (for cache invalidation) or undefined when unknown. */
  async delete(id: string): Promise<string | undefined> {
    const row = await this.db.kysely.deleteFrom('api_tokens').where('id', '=', id).returning('token_hash').executeTakeFirst();
    return row?.token_hash;
  }
}
