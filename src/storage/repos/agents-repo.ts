import { sql } from 'kysely';
import type { Db } from '../db.ts';
import type { AgentApprovalRow, AgentApprovalStatus, AgentDocumentRow, AgentRow } from '../schema.ts';

/** Keeps a multi-row insert well under the parameter limits of both stores. */
const PASSAGES_PER_INSERT = 500;

/** A passage the full-text search found, best first. */
export interface PassageHit {
  document_id: string;
  title: string;
  content: string;
  seq: number;
}

/** Who may read an agent: its owner, or anyone for a deployment-wide agent (owner null). */
export type AgentScope = { ownerId: string } | { deployment: true };

export interface DocumentWithSize extends Omit<AgentDocumentRow, 'content'> {
  characters: number;
}

/**
 * SQL for knowledge-base agents, their documents and the passage index, and for the agent
 * streams running now. Only `search` differs between the stores: FTS5 MATCH ranked by bm25 on
 * SQLite, a tsquery against the generated tsvector ranked by ts_rank on PostgreSQL.
 */
export class AgentsRepo {
  private readonly db: Db;

  constructor(db: Db) {
    this.db = db;
  }

  /** Stores an agent; a new main agent takes the flag from the previous one. */
  async insertAgent(row: AgentRow): Promise<void> {
    await this.db.kysely.transaction().execute(async (trx) => {
      if (row.main === 1) await trx.updateTable('agents').set({ main: 0 }).where('main', '=', 1).execute();
      await trx.insertInto('agents').values(row).execute();
    });
  }

  /** The agents of one scope, newest first. */
  async listAgents(scope: AgentScope): Promise<AgentRow[]> {
    let query = this.db.kysely.selectFrom('agents').selectAll();
    query = 'ownerId' in scope ? query.where('owner_id', '=', scope.ownerId) : query.where('owner_id', 'is', null);
    return query.orderBy('created_at', 'desc').orderBy('id').execute();
  }

  async findAgent(id: string): Promise<AgentRow | undefined> {
    return this.db.kysely.selectFrom('agents').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** The deployment's main agent, if one was made. */
  async findMainAgent(): Promise<AgentRow | undefined> {
    return this.db.kysely.selectFrom('agents').selectAll().where('main', '=', 1).where('owner_id', 'is', null).executeTakeFirst();
  }

  /** Deletes an agent with its documents and their passages. */
  async deleteAgent(id: string): Promise<void> {
    await this.db.kysely.transaction().execute(async (trx) => {
      // The FTS5 table has no foreign key to cascade along.
      await trx.deleteFrom('agent_document_chunks').where('agent_id', '=', id).execute();
      await trx.deleteFrom('agent_documents').where('agent_id', '=', id).execute();
      await trx.deleteFrom('agents').where('id', '=', id).execute();
    });
  }

  /** Stores a document and its passages (seq from 0) in one transaction. */
  async insertDocument(row: AgentDocumentRow, passages: readonly string[]): Promise<void> {
    await this.db.kysely.transaction().execute(async (trx) => {
      await trx.insertInto('agent_documents').values(row).execute();
      const rows = passages.map((content, seq) => ({ document_id: row.id, agent_id: row.agent_id, seq, title: row.title, content }));
      for (let at = 0; at < rows.length; at += PASSAGES_PER_INSERT) {
        await trx.insertInto('agent_document_chunks').values(rows.slice(at, at + PASSAGES_PER_INSERT)).execute();
      }
    });
  }

  /** An agent's documents without their text, newest first. */
  async listDocuments(agentId: string): Promise<DocumentWithSize[]> {
    const rows = await this.db.kysely
      .selectFrom('agent_documents')
      .select(['id', 'agent_id', 'title', 'created_at', (eb) => eb.fn<number>('length', ['content']).as('characters')])
      .where('agent_id', '=', agentId)
      .orderBy('created_at', 'desc')
      .orderBy('id')
      .execute();
    return rows.map((row) => ({ ...row, characters: Number(row.characters) }));
  }

  async countDocuments(agentId: string): Promise<number> {
    const row = await this.db.kysely.selectFrom('agent_documents').select((eb) => eb.fn.countAll<number>().as('n')).where('agent_id', '=', agentId).executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** Deletes one of an agent's documents with its passages; false when the agent has no such document. */
  async deleteDocument(agentId: string, documentId: string): Promise<boolean> {
    return this.db.kysely.transaction().execute(async (trx) => {
      const deleted = await trx.deleteFrom('agent_documents').where('agent_id', '=', agentId).where('id', '=', documentId).executeTakeFirst();
      if (deleted.numDeletedRows === 0n) return false;
      await trx.deleteFrom('agent_document_chunks').where('document_id', '=', documentId).execute();
      return true;
    });
  }

  /**
   * The agent's passages matching any of `terms` (plain words: letters and digits only), best
   * first. Both stores stem the words (Porter / PostgreSQL's english configuration).
   */
  async search(agentId: string, terms: readonly string[], limit: number): Promise<PassageHit[]> {
    if (terms.length === 0) return [];
    if (this.db.dialect === 'postgres') {
      const { rows } = await sql<PassageHit>`
        SELECT c.document_id, c.title, c.content, c.seq
        FROM agent_document_chunks c, to_tsquery('english', ${terms.join(' | ')}) q
        WHERE c.agent_id = ${agentId} AND c.search @@ q
        ORDER BY ts_rank(c.search, q) DESC, c.document_id, c.seq
        LIMIT ${limit}`.execute(this.db.kysely);
      return rows;
    }
    const match = terms.map((term) => `"${term}"`).join(' OR ');
    const { rows } = await sql<PassageHit>`
      SELECT document_id, title, content, seq
      FROM agent_document_chunks
      WHERE agent_document_chunks MATCH ${match} AND agent_id = ${agentId}
      ORDER BY bm25(agent_document_chunks), document_id, seq
      LIMIT ${limit}`.execute(this.db.kysely);
    return rows.map((row) => ({ ...row, seq: Number(row.seq) }));
  }

  /** Records a running stream; false when the owner already runs one with this request id. */
  async startRun(ownerId: string, requestId: string, instanceId: string, now = Date.now()): Promise<boolean> {
    const result = await this.db.kysely
      .insertInto('agent_runs')
      .values({ owner_id: ownerId, request_id: requestId, instance_id: instanceId, started_at: now })
      .onConflict((oc) => oc.columns(['owner_id', 'request_id']).doNothing())
      .executeTakeFirst();
    return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
  }

  /** Forgets a run and the approvals it asked for. */
  async finishRun(ownerId: string, requestId: string): Promise<void> {
    await this.db.kysely.transaction().execute(async (trx) => {
      await trx.deleteFrom('agent_approvals').where('owner_id', '=', ownerId).where('request_id', '=', requestId).execute();
      await trx.deleteFrom('agent_runs').where('owner_id', '=', ownerId).where('request_id', '=', requestId).execute();
    });
  }

  async runExists(ownerId: string, requestId: string): Promise<boolean> {
    const row = await this.db.kysely.selectFrom('agent_runs').select('request_id').where('owner_id', '=', ownerId).where('request_id', '=', requestId).executeTakeFirst();
    return row !== undefined;
  }

  /** Forgets the runs (and their approvals) an earlier process of this instance left behind when it stopped. */
  async clearRuns(instanceId: string): Promise<void> {
    await this.db.kysely.transaction().execute(async (trx) => {
      await trx.deleteFrom('agent_approvals').where('instance_id', '=', instanceId).execute();
      await trx.deleteFrom('agent_runs').where('instance_id', '=', instanceId).execute();
    });
  }

  async insertApproval(row: AgentApprovalRow): Promise<void> {
    await this.db.kysely.insertInto('agent_approvals').values(row).execute();
  }

  /** Moves the owner's pending approval to `status`; false when it is unknown, another owner's or no longer pending. */
  async settleApproval(ownerId: string, id: string, status: Exclude<AgentApprovalStatus, 'pending'>): Promise<boolean> {
    const result = await this.db.kysely
      .updateTable('agent_approvals')
      .set({ status })
      .where('id', '=', id)
      .where('owner_id', '=', ownerId)
      .where('status', '=', 'pending')
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async findApproval(ownerId: string, id: string): Promise<AgentApprovalRow | undefined> {
    return this.db.kysely.selectFrom('agent_approvals').selectAll().where('id', '=', id).where('owner_id', '=', ownerId).executeTakeFirst();
  }
}
