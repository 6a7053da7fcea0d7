import type { Kysely, Transaction } from 'kysely';
import type { Db } from '../db.ts';
import type { AuditLogRow, Database } from '../schema.ts';

/** An audit row as written; before and after are any JSON (secrets already masked). */
export interface AuditRowInput {
  id: string;
  at: number;
  actor_type: string;
  actor_id: string;
  action: string;
  target: string;
  before: unknown;
  after: unknown;
  request_id: string | null;
  ip: string | null;
}

export interface AuditQuery {
  from?: number;
  to?: number;
  actor?: string;
  action?: string;
  target?: string;
  /** Rows strictly older than this (at, id) pair: the page after a cursor. */
  before?: { at: number; id: string };
  limit: number;
}

const json = (value: unknown) => (value === undefined ? null : JSON.stringify(value));

/** Writes audit rows within a transaction of the change they record. */
export async function insertAuditRows(db: Transaction<Database> | Kysely<Database>, rows: readonly AuditRowInput[]): Promise<void> {
  if (rows.length === 0) return;
  await db.insertInto('audit_log').values(rows.map((r) => ({ ...r, before: json(r.before), after: json(r.after) }))).execute();
}

/** The audit log: appended to, read newest first, and trimmed by age only. */
export class AuditRepo {
  private readonly db: Db;

  constructor(db: Db) {
    this.db = db;
  }

  async insert(rows: readonly AuditRowInput[]): Promise<void> {
    await insertAuditRows(this.db.kysely, rows);
  }

  async list(query: AuditQuery): Promise<AuditLogRow[]> {
    let q = this.db.kysely.selectFrom('audit_log').selectAll();
    if (query.from !== undefined) q = q.where('at', '>=', query.from);
    if (query.to !== undefined) q = q.where('at', '<', query.to);
    if (query.actor !== undefined) q = q.where('actor_id', '=', query.actor);
    if (query.action !== undefined) q = q.where('action', '=', query.action);
    if (query.target !== undefined) q = q.where('target', '=', query.target);
    const before = query.before;
    if (before) q = q.where((eb) => eb.or([eb('at', '<', before.at), eb.and([eb('at', '=', before.at), eb('id', '<', before.id)])]));
    return q.orderBy('at', 'desc').orderBy('id', 'desc').limit(query.limit).execute();
  }

  /** Deletes rows older than `cutoff`; answers how many. */
  async deleteBefore(cutoff: number): Promise<number> {
    const result = await this.db.kysely.deleteFrom('audit_log').where('at', '<', cutoff).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
