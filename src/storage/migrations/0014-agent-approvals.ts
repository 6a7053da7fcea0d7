import type { Kysely } from 'kysely';

/**
 * The approvals agent runs wait for: an `agent.approval` may reach any instance's realtime
 * gateway, which decides from this table whether the approval is awaited, and answers it.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('agent_approvals')
    // The id the client answers with (the approval item's taskId).
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('owner_id', 'text', (c) => c.notNull())
    .addColumn('request_id', 'text', (c) => c.notNull())
    .addColumn('instance_id', 'text', (c) => c.notNull())
    // pending, then approved, rejected or timed_out.
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('agent_approvals_run').on('agent_approvals').columns(['owner_id', 'request_id']).execute();
  await db.schema.createIndex('agent_approvals_instance').on('agent_approvals').column('instance_id').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('agent_approvals').execute();
}
