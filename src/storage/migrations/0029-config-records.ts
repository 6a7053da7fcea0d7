import type { Kysely } from 'kysely';

/**
 * Providers, channels, models and MCP servers set through the admin API (they win over
 * GENGATE_CONFIG key by key), and the version of those settings: every change raises it, and each
 * instance that sees a higher version than the one it applied reloads them.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('config_records')
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('config_records_pk', ['kind', 'key'])
    .execute();
  await db.schema
    .createTable('config_version')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('version', 'bigint', (c) => c.notNull())
    .execute();
  await db.insertInto('config_version').values({ id: 1, version: 0 }).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('config_version').execute();
  await db.schema.dropTable('config_records').execute();
}
