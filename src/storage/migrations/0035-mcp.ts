import type { Kysely } from 'kysely';

/**
 * MCP: which tools a token and a user may list and call (JSON lists of patterns; no row or null
 * means `*`), and the sessions of /mcp with the token that opened each, so every instance tells
 * a session's owner from another caller and an ended session from a live one.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('api_tokens').addColumn('mcp_tools', 'text').execute();
  await db.schema
    .createTable('user_mcp_tools')
    .addColumn('user_id', 'text', (c) => c.primaryKey())
    .addColumn('mcp_tools', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('mcp_sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('token_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    // '' for /mcp, else the upstream server of /mcp/<server>.
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('protocol_version', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('ended_at', 'bigint')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('mcp_sessions').execute();
  await db.schema.dropTable('user_mcp_tools').execute();
  await db.schema.alterTable('api_tokens').dropColumn('mcp_tools').execute();
}
