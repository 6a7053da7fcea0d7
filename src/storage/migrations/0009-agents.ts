import { PostgresAdapter, sql, type Kysely } from 'kysely';

/**
 * The /v1/responses agent: personal skills, knowledge-base agents with their documents, the
 * documents' passages indexed for full-text search, and the agent streams running now.
 *
 * The passage index is the one table that differs between the stores: an FTS5 virtual table on
 * SQLite (Porter stemming), a table with a generated tsvector column and a GIN index on
 * PostgreSQL. Both have the same columns, so the same inserts and deletes work on either.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('skills')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('owner_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('instructions', 'text', (c) => c.notNull())
    .addColumn('references_json', 'text', (c) => c.notNull())
    .addColumn('assets_json', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('skills_owner_created').on('skills').columns(['owner_id', 'created_at']).execute();

  await db.schema
    .createTable('agents')
    .addColumn('id', 'text', (c) => c.primaryKey())
    // NULL: a deployment-wide agent, created with the admin token.
    .addColumn('owner_id', 'text')
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('instructions', 'text')
    .addColumn('main', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('agents_owner_created').on('agents').columns(['owner_id', 'created_at']).execute();

  await db.schema
    .createTable('agent_documents')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('agent_id', 'text', (c) => c.notNull().references('agents.id').onDelete('cascade'))
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('agent_documents_agent_created').on('agent_documents').columns(['agent_id', 'created_at']).execute();

  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await db.schema
      .createTable('agent_document_chunks')
      .addColumn('document_id', 'text', (c) => c.notNull().references('agent_documents.id').onDelete('cascade'))
      .addColumn('agent_id', 'text', (c) => c.notNull())
      .addColumn('seq', 'integer', (c) => c.notNull())
      .addColumn('title', 'text', (c) => c.notNull())
      .addColumn('content', 'text', (c) => c.notNull())
      .addColumn('search', sql`tsvector`, (c) => c.generatedAlwaysAs(sql`to_tsvector('english', title || ' ' || content)`).stored())
      .addPrimaryKeyConstraint('agent_document_chunks_pk', ['document_id', 'seq'])
      .execute();
    await db.schema.createIndex('agent_document_chunks_search').on('agent_document_chunks').using('gin').column('search').execute();
    await db.schema.createIndex('agent_document_chunks_agent').on('agent_document_chunks').column('agent_id').execute();
  } else {
    await sql`CREATE VIRTUAL TABLE agent_document_chunks USING fts5(
      document_id UNINDEXED, agent_id UNINDEXED, seq UNINDEXED, title, content, tokenize = 'porter unicode61'
    )`.execute(db);
  }

  await db.schema
    .createTable('agent_runs')
    .addColumn('owner_id', 'text', (c) => c.notNull())
    .addColumn('request_id', 'text', (c) => c.notNull())
    .addColumn('instance_id', 'text', (c) => c.notNull())
    .addColumn('started_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('agent_runs_pk', ['owner_id', 'request_id'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('agent_runs').execute();
  await db.schema.dropTable('agent_document_chunks').execute();
  await db.schema.dropTable('agent_documents').execute();
  await db.schema.dropTable('agents').execute();
  await db.schema.dropTable('skills').execute();
}
