/**
 * The audit log: one row per change made through /admin, written with the change where the
 * change is a transaction of its own (the runtime settings), else right after it; never edited,
 * removed only by age (AUDIT_RETENTION_DAYS).
 */
import type { Logger } from 'pino';
import { ApiError } from '../core/errors.ts';
import { newId } from '../core/ids.ts';
import type { AuditRepo, AuditRowInput } from '../storage/repos/audit-repo.ts';
import type { AuditLogRow } from '../storage/schema.ts';

/** Who made a change: the admin token (id `admin`) or a signed-in user. */
export interface AuditActor {
  type: 'admin_token' | 'user';
  id: string;
}

/** The request a change came with. */
export interface AuditContext {
  actor: AuditActor;
  requestId: string;
  ip: string | null;
}

/** One change: `<object>.<verb>` on `<object>:<id>`, with the state before and after. */
export interface AuditEntry {
  action: string;
  target: string;
  before?: unknown;
  after?: unknown;
}

export interface AuditRecord {
  id: string;
  at: string;
  actor: AuditActor;
  action: string;
  target: string;
  before: unknown;
  after: unknown;
  request_id: string | null;
  ip: string | null;
}

export const MASKED = '***';

/** Field names whose string values are secrets wherever they appear in a before or after. */
const SECRET_FIELDS = new Set(['api_key', 'callback_secret', 'token', 'secret', 'password', 'client_secret']);

/** A copy of the value with every secret field's value shown as "***". */
export function maskSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(maskSecrets);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, SECRET_FIELDS.has(k) && v !== null && v !== undefined ? MASKED : maskSecrets(v)]));
}

/** The audit rows of a change, secrets masked. */
export function auditRows(ctx: AuditContext, entries: readonly AuditEntry[], at = Date.now()): AuditRowInput[] {
  return entries.map((entry) => ({
    id: newId('aud'),
    at,
    actor_type: ctx.actor.type,
    actor_id: ctx.actor.id,
    action: entry.action,
    target: entry.target,
    before: maskSecrets(entry.before ?? null),
    after: maskSecrets(entry.after ?? null),
    request_id: ctx.requestId,
    ip: ctx.ip,
  }));
}

const DAY_MS = 24 * 60 * 60 * 1000;
const SWEEP_MS = 60 * 60 * 1000;

const encodeCursor = (row: { at: number; id: string }) => Buffer.from(JSON.stringify([row.at, row.id])).toString('base64url');

function decodeCursor(cursor: string): { at: number; id: string } {
  try {
    const [at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    if (typeof at === 'number' && typeof id === 'string') return { at, id };
  } catch {
    // Reported below.
  }
  throw new ApiError('invalid_parameter', 'cursor is not a cursor this API answered', 'cursor');
}

const parseJson = (text: string | null): unknown => (text === null ? null : JSON.parse(text));

export interface AuditFilter {
  from?: number;
  to?: number;
  actor?: string;
  action?: string;
  target?: string;
  limit: number;
  cursor?: string;
}

export class AuditLog {
  private timer: NodeJS.Timeout | undefined;

  private readonly repo: AuditRepo;
  private readonly opts: { retentionDays: number; logger: Logger };

  constructor(repo: AuditRepo, opts: { retentionDays: number; logger: Logger }) {
    this.repo = repo;
    this.opts = opts;
  }

  /** Writes the rows of a change made outside a transaction of its own. */
  async record(ctx: AuditContext, entries: readonly AuditEntry[]): Promise<void> {
    await this.repo.insert(auditRows(ctx, entries));
  }

  /** GET /admin/audit: newest first, a page at a time. */
  async list(filter: AuditFilter): Promise<{ data: AuditRecord[]; next_cursor: string | null }> {
    const rows = await this.repo.list({ ...filter, ...(filter.cursor ? { before: decodeCursor(filter.cursor) } : {}), limit: filter.limit + 1 });
    const page = rows.slice(0, filter.limit);
    const last = page[page.length - 1];
    return { data: page.map(toRecord), next_cursor: rows.length > filter.limit && last ? encodeCursor(last) : null };
  }

  /** Deletes rows past the retention once now and then every hour; 0 days keeps them. */
  startRetention(): void {
    if (this.opts.retentionDays === 0) return;
    const sweep = () => void this.sweep().catch((err: unknown) => this.opts.logger.error({ err }, 'audit log retention sweep failed'));
    sweep();
    this.timer = setInterval(sweep, SWEEP_MS);
    this.timer.unref();
  }

  /** Deletes the rows older than the retention; answers how many. */
  async sweep(now = Date.now()): Promise<number> {
    return this.repo.deleteBefore(now - this.opts.retentionDays * DAY_MS);
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

function toRecord(row: AuditLogRow): AuditRecord {
  return {
    id: row.id,
    at: new Date(Number(row.at)).toISOString(),
    actor: { type: row.actor_type as AuditActor['type'], id: row.actor_id },
    action: row.action,
    target: row.target,
    before: parseJson(row.before),
    after: parseJson(row.after),
    request_id: row.request_id,
    ip: row.ip,
  };
}
