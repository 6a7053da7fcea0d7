import type { Kysely } from 'kysely';

/** What a run saved for its resumption (e.g. the upstream task id), as JSON. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('tasks').addColumn('saved_state', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('tasks').dropColumn('saved_state').execute();
}
