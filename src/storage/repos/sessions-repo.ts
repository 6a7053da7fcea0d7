import type { Db } from '../db.ts';
import type { ConsoleSessionRow, OidcLoginRow } from '../schema.ts';

/** SQL for console sessions and the OpenID Connect sign-ins under way. */
export class SessionsRepo {
  private readonly db: Db;

  constructor(db: Db) {
    this.db = db;
  }

  async insert(row: ConsoleSessionRow): Promise<void> {
    await this.db.kysely.insertInto('console_sessions').values(row).execute();
  }

  /** The session of a cookie's hash while it lasts. */
  find(id: string, now: number): Promise<ConsoleSessionRow | undefined> {
    return this.db.kysely.selectFrom('console_sessions').selectAll().where('id', '=', id).where('expires_at', '>', now).executeTakeFirst();
  }

  async delete(id: string): Promise<void> {
    await this.db.kysely.deleteFrom('console_sessions').where('id', '=', id).execute();
  }

  async insertLogin(row: OidcLoginRow): Promise<void> {
    await this.db.kysely.insertInto('oidc_logins').values(row).execute();
  }

  /** Takes a sign-in under way out of the store (it is used once), if it has not lapsed. */
  async takeLogin(state: string, now: number): Promise<OidcLoginRow | undefined> {
    const row = await this.db.kysely.deleteFrom('oidc_logins').where('state', '=', state).returningAll().executeTakeFirst();
    return row && row.expires_at > now ? row : undefined;
  }

  /** Deletes lapsed sessions and sign-ins. */
  async deleteExpired(now: number): Promise<void> {
    await this.db.kysely.deleteFrom('console_sessions').where('expires_at', '<=', now).execute();
    await this.db.kysely.deleteFrom('oidc_logins').where('expires_at', '<=', now).execute();
  }
}
