import type { Kysely } from 'kysely';

/**
 * OpenAI's Files and Batch APIs (docs/batches.md): files of a user (batch inputs and the output
 * and error files of batches), batches with the lease of the instance running them, and one row
 * per input line with its state (pending, running, done) and, once done, its output line.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('openai_files')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('purpose', 'text', (c) => c.notNull())
    .addColumn('filename', 'text', (c) => c.notNull())
    .addColumn('bytes', 'bigint', (c) => c.notNull())
    .addColumn('blob_key', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('openai_files_user').on('openai_files').columns(['user_id', 'created_at', 'id']).execute();

  await db.schema
    .createTable('batches')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull())
    // The token that created the batch: its limits apply to every line. Null for the admin token.
    .addColumn('token_id', 'text')
    .addColumn('endpoint', 'text', (c) => c.notNull())
    .addColumn('input_file_id', 'text', (c) => c.notNull())
    .addColumn('completion_window', 'text', (c) => c.notNull())
    .addColumn('metadata', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    // JSON of the validation errors of a failed batch.
    .addColumn('errors', 'text')
    .addColumn('output_file_id', 'text')
    .addColumn('error_file_id', 'text')
    .addColumn('request_total', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('request_completed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('request_failed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('in_progress_at', 'bigint')
    .addColumn('finalizing_at', 'bigint')
    .addColumn('completed_at', 'bigint')
    .addColumn('failed_at', 'bigint')
    .addColumn('expired_at', 'bigint')
    .addColumn('cancelling_at', 'bigint')
    .addColumn('cancelled_at', 'bigint')
    // The instance running the batch, until when; another takes it over once the lease ran out.
    .addColumn('lease_owner', 'text')
    .addColumn('lease_until', 'bigint')
    .execute();
  await db.schema.createIndex('batches_user').on('batches').columns(['user_id', 'created_at', 'id']).execute();
  await db.schema.createIndex('batches_status').on('batches').columns(['status', 'lease_until']).execute();

  await db.schema
    .createTable('batch_lines')
    .addColumn('batch_id', 'text', (c) => c.notNull())
    .addColumn('line_no', 'integer', (c) => c.notNull())
    .addColumn('custom_id', 'text')
    // JSON of the line's body; null for a malformed line (done at once, in the error file).
    .addColumn('body', 'text')
    .addColumn('state', 'text', (c) => c.notNull())
    // JSON of the line's output (or error) line, once done.
    .addColumn('result', 'text')
    // 1: the result goes to the error file.
    .addColumn('failed', 'integer', (c) => c.notNull().defaultTo(0))
    .addPrimaryKeyConstraint('batch_lines_pk', ['batch_id', 'line_no'])
    .execute();
  await db.schema.createIndex('batch_lines_state').on('batch_lines').columns(['batch_id', 'state', 'line_no']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('batch_lines').execute();
  await db.schema.dropTable('batches').execute();
  await db.schema.dropTable('openai_files').execute();
}
