import type { Kysely } from 'kysely';

/**
 * Digital-human resources: an avatar made from a user's source video, referred to by id in
 * later lip-sync generations. The source video is kept as the owner's asset (files expire).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('digital_humans')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('owner_id', 'text', (c) => c.notNull())
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('task_id', 'text', (c) => c.notNull())
    .addColumn('source_hash', 'text')
    .addColumn('video', 'text', (c) => c.notNull())
    .addColumn('interaction_optimise', 'integer', (c) => c.notNull())
    .addColumn('upstream_resource_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('digital_humans_owner_created').on('digital_humans').columns(['owner_id', 'created_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('digital_humans').execute();
}
