import type { Kysely } from 'kysely';

/**
 * Channels an administrator (or an upstream's 401/403) disabled: they stay disabled across
 * restarts and for every instance sharing the store, until an administrator enables them.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('channel_disables')
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('disabled_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('channel_disables_pk', ['provider', 'name'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('channel_disables').execute();
}
