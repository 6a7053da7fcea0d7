import type { Kysely } from 'kysely';

/**
 * Responses of /openai/v1/responses kept for `previous_response_id` and GET: per owner, the
 * conversation up to and including the response (its instructions left out, as OpenAI does) and
 * the response object.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('openai_responses')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('owner_id', 'text', (c) => c.notNull())
    .addColumn('messages', 'text', (c) => c.notNull())
    .addColumn('response', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('openai_responses').execute();
}
