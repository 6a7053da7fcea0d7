import type { Kysely } from 'kysely';

/**
 * Console sign-in: sessions (kept in the store, so every instance knows them and a sign-out
 * ends them everywhere) and the OpenID Connect sign-ins under way (the state, nonce and PKCE
 * verifier of each, so the callback may reach another instance than the sign-in did).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('console_sessions')
    // sha256 hex of the session cookie's value; the value itself is never stored.
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull())
    // 1 when the identity provider's role claim made the user an administrator.
    .addColumn('claims_admin', 'integer', (c) => c.notNull())
    // The value the console sends back as x-csrf-token.
    .addColumn('csrf', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('console_sessions_expiry').on('console_sessions').columns(['expires_at']).execute();
  await db.schema
    .createTable('oidc_logins')
    .addColumn('state', 'text', (c) => c.primaryKey())
    .addColumn('nonce', 'text', (c) => c.notNull())
    .addColumn('code_verifier', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('oidc_logins').execute();
  await db.schema.dropTable('console_sessions').execute();
}
