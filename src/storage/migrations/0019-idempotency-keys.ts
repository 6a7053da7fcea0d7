import type { Kysely } from 'kysely';

/**
 * Idempotency keys: the first answer to a creating POST, kept 24 hours under the caller, the
 * method and path, and the key, so a retry (on any instance) replays it instead of creating again.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('idempotency_keys')
    .addColumn('user_id', 'text', (c) => c.notNull())
    // `POST /v1/images/generations`
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('body_hash', 'text', (c) => c.notNull())
    // running while the first call is answered, then done.
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('status_code', 'integer')
    .addColumn('content_type', 'text')
    .addColumn('response', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_keys_pk', ['user_id', 'scope', 'key'])
    .execute();
  await db.schema.createIndex('idempotency_keys_expires').on('idempotency_keys').column('expires_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('idempotency_keys').execute();
}
