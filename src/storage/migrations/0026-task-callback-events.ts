import type { Kysely } from 'kysely';

/** The statuses a task's callback announces (JSON array), null for all of them (docs/api/tasks.md, "Callback filter"). */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('tasks').addColumn('callback_events', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('tasks').dropColumn('callback_events').execute();
}
