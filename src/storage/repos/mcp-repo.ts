import type { Db } from '../db.ts';
import type { McpSessionRow } from '../schema.ts';

/** SQL of MCP: the tool patterns of tokens and users, and the sessions of /mcp. */
export class McpRepo {
  private readonly db: Db;

  constructor(db: Db) {
    this.db = db;
  }

  /** The token's patterns (JSON) and user; undefined when the token is unknown. */
  async tokenTools(tokenId: string): Promise<{ user_id: string; mcp_tools: string | null } | undefined> {
    const row = await this.db.kysely.selectFrom('api_tokens').select(['user_id', 'mcp_tools']).where('id', '=', tokenId).executeTakeFirst();
    return row ? { user_id: row.user_id, mcp_tools: row.mcp_tools ?? null } : undefined;
  }

  /** Sets a token's patterns (null: the default); answers false when the token is unknown. */
  async setTokenTools(tokenId: string, mcpTools: string | null): Promise<boolean> {
    const res = await this.db.kysely.updateTable('api_tokens').set({ mcp_tools: mcpTools }).where('id', '=', tokenId).executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  async userTools(userId: string): Promise<string | undefined> {
    const row = await this.db.kysely.selectFrom('user_mcp_tools').select('mcp_tools').where('user_id', '=', userId).executeTakeFirst();
    return row?.mcp_tools;
  }

  /** Sets (or, with null, removes) a user's patterns. */
  async setUserTools(userId: string, mcpTools: string | null, now: number): Promise<void> {
    if (mcpTools === null) {
      await this.db.kysely.deleteFrom('user_mcp_tools').where('user_id', '=', userId).execute();
      return;
    }
    await this.db.kysely
      .insertInto('user_mcp_tools')
      .values({ user_id: userId, mcp_tools: mcpTools, updated_at: now })
      .onConflict((oc) => oc.column('user_id').doUpdateSet({ mcp_tools: mcpTools, updated_at: now }))
      .execute();
  }

  async insertSession(row: McpSessionRow): Promise<void> {
    await this.db.kysely.insertInto('mcp_sessions').values(row).execute();
  }

  async findSession(id: string): Promise<McpSessionRow | undefined> {
    return this.db.kysely.selectFrom('mcp_sessions').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async endSession(id: string, now: number): Promise<void> {
    await this.db.kysely.updateTable('mcp_sessions').set({ ended_at: now }).where('id', '=', id).where('ended_at', 'is', null).execute();
  }
}
