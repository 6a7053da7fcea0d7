import type { Kysely } from 'kysely';

/** A waiting task's queue_position counts its model's earlier waiting tasks on this index, never the whole table. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('tasks_model_status_created').on('tasks').columns(['model', 'status', 'created_at', 'id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('tasks_model_status_created').execute();
}
