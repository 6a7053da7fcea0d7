import { sql, type Kysely } from 'kysely';

/**
 * Limits of tokens and users, what a task reserved against them, and the usage ledger: one row
 * per call or task, with a daily aggregate kept at settlement so usage queries and credit
 * periods never scan the raw rows.
 */
export async function up(db: Kysely<any>): Promise<void> {
  // JSON of the token's limits; null when it has none.
  await db.schema.alterTable('api_tokens').addColumn('limits', 'text').execute();
  await db.schema
    .createTable('user_limits')
    .addColumn('user_id', 'text', (c) => c.primaryKey())
    .addColumn('limits', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  // The token that submitted the task (its limits apply to it), and the credits its admission
  // reserved (micro-credits), released when the task ends wherever it ends.
  await db.schema.alterTable('tasks').addColumn('token_id', 'text').execute();
  await db.schema.alterTable('tasks').addColumn('reserved_credits', 'bigint', (c) => c.notNull().defaultTo(0)).execute();
  // Newest-first listings of all tasks (GET /admin/tasks).
  await db.schema.createIndex('tasks_created').on('tasks').columns(['created_at', 'id']).execute();

  await db.schema
    .createTable('usage_ledger')
    // The task id, or the request id of a call that made no task: settling twice would collide here.
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('finished_at', 'bigint', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('token_id', 'text')
    .addColumn('endpoint', 'text', (c) => c.notNull())
    .addColumn('model', 'text')
    .addColumn('provider', 'text')
    .addColumn('channel', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('http_status', 'integer')
    .addColumn('input_tokens', 'bigint', (c) => c.notNull())
    .addColumn('output_tokens', 'bigint', (c) => c.notNull())
    .addColumn('outputs', 'integer', (c) => c.notNull())
    .addColumn('cost', 'bigint', (c) => c.notNull())
    .addColumn('reserved', 'bigint', (c) => c.notNull())
    .addColumn('latency_ms', 'bigint', (c) => c.notNull())
    .addColumn('request_id', 'text', (c) => c.notNull())
    .addColumn('task_id', 'text')
    // 0 while the shared counters (Redis) have not taken this settlement in yet.
    .addColumn('counters_applied', 'integer', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('usage_ledger_created').on('usage_ledger').columns(['created_at', 'id']).execute();
  await db.schema.createIndex('usage_ledger_user').on('usage_ledger').columns(['user_id', 'created_at', 'id']).execute();
  await db.schema.createIndex('usage_ledger_token').on('usage_ledger').columns(['token_id', 'created_at', 'id']).execute();
  await db.schema.createIndex('usage_ledger_model').on('usage_ledger').columns(['model', 'created_at', 'id']).execute();
  await db.schema
    .createIndex('usage_ledger_unapplied')
    .on('usage_ledger')
    .column('finished_at')
    .where(sql<boolean>`counters_applied = 0`)
    .execute();

  await db.schema
    .createTable('usage_daily')
    // YYYY-MM-DD (UTC) of the calls' start.
    .addColumn('day', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    // '' for calls without a token (the admin token acting as a user).
    .addColumn('token_id', 'text', (c) => c.notNull())
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('requests', 'bigint', (c) => c.notNull())
    .addColumn('tasks', 'bigint', (c) => c.notNull())
    .addColumn('input_tokens', 'bigint', (c) => c.notNull())
    .addColumn('output_tokens', 'bigint', (c) => c.notNull())
    .addColumn('cost', 'bigint', (c) => c.notNull())
    .addColumn('errors', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('usage_daily_pk', ['day', 'user_id', 'token_id', 'model', 'provider'])
    .execute();
  await db.schema.createIndex('usage_daily_user').on('usage_daily').columns(['user_id', 'day']).execute();
  await db.schema.createIndex('usage_daily_token').on('usage_daily').columns(['token_id', 'day']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('usage_daily').execute();
  await db.schema.dropTable('usage_ledger').execute();
  await db.schema.dropIndex('tasks_created').execute();
  await db.schema.alterTable('tasks').dropColumn('reserved_credits').execute();
  await db.schema.alterTable('tasks').dropColumn('token_id').execute();
  await db.schema.dropTable('user_limits').execute();
  await db.schema.alterTable('api_tokens').dropColumn('limits').execute();
}
