import { sql, type Kysely } from 'kysely';

/**
 * The task event stream and output retention (docs/api/tasks.md, "Following a task" and
 * "Output retention"): every event of a task under a per-task sequence, allocated from the
 * task row's counter; output files tied to their task and content, with a tombstone once expired.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('task_events')
    .addColumn('task_id', 'text', (c) => c.notNull())
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('task_events_pk', ['task_id', 'seq'])
    .execute();
  // The last sequence number a task's events took; bumped in the statement that writes them.
  await db.schema.alterTable('tasks').addColumn('event_seq', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('files').addColumn('task_id', 'text').execute();
  await db.schema.alterTable('files').addColumn('content_hash', 'text').execute();
  await db.schema.alterTable('files').addColumn('expired_at', 'bigint').execute();
  await db.schema.alterTable('files').addColumn('sweep_at', 'bigint').execute();
  // Each sweep reads only what is due: uploads (deleted when expired), and outputs not yet retired.
  await db.schema.createIndex('files_upload_expiry').on('files').columns(['expires_at']).where(sql<boolean>`task_id is null`).execute();
  await db.schema.createIndex('files_output_sweep').on('files').columns(['sweep_at']).where(sql<boolean>`task_id is not null and expired_at is null`).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('files_output_sweep').execute();
  await db.schema.dropIndex('files_upload_expiry').execute();
  for (const column of ['sweep_at', 'expired_at', 'content_hash', 'task_id']) await db.schema.alterTable('files').dropColumn(column).execute();
  await db.schema.alterTable('tasks').dropColumn('event_seq').execute();
  await db.schema.dropTable('task_events').execute();
}
