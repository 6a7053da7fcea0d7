import type { Kysely } from 'kysely';

/**
 * The heartbeats of the instances sharing one store with the database queue: a task whose
 * holder stopped beating is taken over at once instead of when its lease runs out.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('worker_heartbeats')
    .addColumn('instance_id', 'text', (c) => c.primaryKey())
    .addColumn('alive_until', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('worker_heartbeats').execute();
}
