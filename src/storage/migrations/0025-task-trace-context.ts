import type { Kysely } from 'kysely';

/** The submitting request's W3C trace context (JSON), so the task's run joins its trace on whichever instance runs it. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('tasks').addColumn('trace_context', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('tasks').dropColumn('trace_context').execute();
}
