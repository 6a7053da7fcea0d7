import { sql, type Kysely } from 'kysely';

/**
 * Tasks double as the embedded queue: a task is claimable while submitted, or while its
 * worker's lease has run out. Callback deliveries form an outbox written in the same
 * transaction as the status change they announce.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('tasks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('request_id', 'text', (c) => c.notNull())
    .addColumn('owner_id', 'text', (c) => c.notNull())
    .addColumn('client_id', 'text')
    .addColumn('endpoint', 'text', (c) => c.notNull())
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('output_type', 'text', (c) => c.notNull())
    .addColumn('cancellable', 'integer', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('progress', 'integer', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('message', 'text')
    .addColumn('error_message', 'text')
    .addColumn('input', 'text', (c) => c.notNull())
    .addColumn('result', 'text')
    .addColumn('callback_url', 'text')
    .addColumn('server', 'text')
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('lease_owner', 'text')
    .addColumn('lease_until', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('started_at', 'bigint')
    .addColumn('finished_at', 'bigint')
    .execute();
  await db.schema.createIndex('tasks_status_created').on('tasks').columns(['status', 'created_at']).execute();
  await db.schema.createIndex('tasks_status_lease').on('tasks').columns(['status', 'lease_until']).execute();
  // Exactly the claimable tasks in claim order: taking the oldest never sorts the backlog.
  await db.schema
    .createIndex('tasks_claimable')
    .on('tasks')
    .columns(['created_at', 'id'])
    .where(sql<boolean>`status = 'submitted' and lease_until is null`)
    .execute();
  await db.schema.createIndex('tasks_owner_created').on('tasks').columns(['owner_id', 'created_at']).execute();

  await db.schema
    .createTable('callback_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('task_id', 'text', (c) => c.notNull())
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
    .addColumn('lease_until', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('callback_deliveries_due').on('callback_deliveries').columns(['state', 'next_attempt_at']).execute();
  await db.schema.createIndex('callback_deliveries_task').on('callback_deliveries').columns(['task_id', 'seq']).unique().execute();

  await db.schema
    .createTable('callback_attempts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('delivery_id', 'text', (c) => c.notNull())
    .addColumn('task_id', 'text', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addColumn('http_status', 'integer')
    .addColumn('error', 'text')
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('callback_attempts_task').on('callback_attempts').columns(['task_id', 'at']).execute();

  // Single-use realtime tickets, shared by every instance.
  await db.schema
    .createTable('ws_tickets')
    .addColumn('ticket_hash', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('token_id', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('ws_tickets').execute();
  await db.schema.dropTable('callback_attempts').execute();
  await db.schema.dropTable('callback_deliveries').execute();
  await db.schema.dropTable('tasks').execute();
}
