import { sql, type Kysely } from 'kysely';

/** A submit's x-deadline (epoch ms): a task still waiting then fails (docs/api/tasks.md, "Deadline"). */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('tasks').addColumn('deadline_at', 'bigint').execute();
  // Exactly the waiting tasks that have a deadline, soonest first: the sweep reads only those due.
  await db.schema
    .createIndex('tasks_waiting_deadline')
    .on('tasks')
    .columns(['deadline_at'])
    .where(sql<boolean>`status = 'submitted' and deadline_at is not null`)
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('tasks_waiting_deadline').execute();
  await db.schema.alterTable('tasks').dropColumn('deadline_at').execute();
}
