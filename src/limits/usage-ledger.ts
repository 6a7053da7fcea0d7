import type { Logger } from 'pino';
import { ApiError } from '../core/errors.ts';
import type { Cursor, LedgerFilter, RowScope, TaskFilter, UsageGroup, UsageRepo, UsageSums } from '../storage/repos/usage-repo.ts';
import type { UsageLedgerRow } from '../storage/schema.ts';
import { statusRecordOf, type TaskStatusRecord } from '../tasks/task-record.ts';
import { fromMicro } from './limits.ts';

/** One group of the usage answer: the repository's sums, with credits as shown. */
export type UsageRow = UsageSums;

/** A ledger row as GET /admin/requests shows it: times as ISO-8601, without the settlement bookkeeping. */
export type LedgerEntry = Omit<UsageLedgerRow, 'kind' | 'created_at' | 'finished_at' | 'reserved' | 'counters_applied'> & {
  kind: string;
  created_at: string;
  finished_at: string;
};

const DAY_MS = 86_400_000;
const RETENTION_EVERY_MS = 60 * 60 * 1000;
/** A usage query without `from` covers the last 30 days. */
const DEFAULT_RANGE_MS = 30 * DAY_MS;

/** An ISO-8601 time parameter in milliseconds, or 400 naming it. */
export function timeParam(value: string | undefined, param: string): number | undefined {
  if (value === undefined) return undefined;
  const at = Date.parse(value);
  if (Number.isNaN(at)) throw new ApiError('invalid_parameter', `${param} must be an ISO-8601 time`, param);
  return at;
}

function encodeCursor(at: number, id: string): string {
  return Buffer.from(`${at}:${id}`).toString('base64url');
}

function decodeCursor(cursor: string | undefined): Cursor | undefined {
  if (cursor === undefined) return undefined;
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const colon = text.indexOf(':');
  const at = Number(text.slice(0, colon));
  if (colon < 1 || !Number.isFinite(at)) throw new ApiError('invalid_parameter', 'cursor is not one this listing gave', 'cursor');
  return { at, id: text.slice(colon + 1) };
}

function entryOf(row: UsageLedgerRow): LedgerEntry {
  return {
    id: row.id,
    kind: row.kind,
    created_at: new Date(row.created_at).toISOString(),
    finished_at: new Date(row.finished_at).toISOString(),
    user_id: row.user_id,
    token_id: row.token_id,
    team_id: row.team_id,
    endpoint: row.endpoint,
    model: row.model,
    provider: row.provider,
    channel: row.channel,
    status: row.status,
    http_status: row.http_status,
    input_tokens: Number(row.input_tokens),
    cached_input_tokens: Number(row.cached_input_tokens),
    cache_write_tokens: Number(row.cache_write_tokens),
    output_tokens: Number(row.output_tokens),
    outputs: row.outputs,
    cost: fromMicro(Number(row.cost)),
    latency_ms: Number(row.latency_ms),
    request_id: row.request_id,
    task_id: row.task_id,
    batch_id: row.batch_id ?? null,
  };
}

/** Reading the ledger (usage sums, the requests log, task lists) and its retention. */
export class UsageLedger {
  private timer: NodeJS.Timeout | undefined;

  private readonly repo: UsageRepo;
  private readonly opts: { retentionDays: number; logger: Logger; now?: () => number };

  constructor(
    repo: UsageRepo,
    opts: { retentionDays: number; logger: Logger; now?: () => number },
  ) {
    this.repo = repo;
    this.opts = opts;
  }

  private now(): number {
    return (this.opts.now ?? Date.now)();
  }

  /** Resolves once the ledger rows of the calls ended so far are stored. */
  written(): Promise<void> {
    return this.repo.writtenCalls();
  }

  /** Usage sums of everything, of a user (`userId`), or within a scope (`scope`, a console role's). */
  async usage(query: { from?: string; to?: string; group_by?: UsageGroup; team_id?: string }, userId?: string, scope?: RowScope): Promise<{ rows: UsageRow[] }> {
    const to = timeParam(query.to, 'to') ?? this.now() + 1;
    const from = timeParam(query.from, 'from') ?? to - DEFAULT_RANGE_MS;
    // A team filter is a scope of that team alone.
    const within = query.team_id !== undefined && !scope ? { teamIds: [query.team_id] } : scope;
    const sums = await this.repo.sums({ from, to, groupBy: query.group_by ?? 'day', ...(userId !== undefined ? { userId } : {}), ...(within ? { scope: within } : {}) });
    return { rows: sums.map((s) => ({ ...s, cost: fromMicro(s.cost) })) };
  }

  async requests(filter: { user_id?: string; token_id?: string; team_id?: string; model?: string; status?: string; batch_id?: string; from?: string; to?: string; limit?: number; cursor?: string }, scope?: RowScope): Promise<{ data: LedgerEntry[]; next_cursor: string | null }> {
    const limit = filter.limit ?? 50;
    const where: LedgerFilter = {
      ...(filter.user_id !== undefined ? { userId: filter.user_id } : {}),
      ...(filter.token_id !== undefined ? { tokenId: filter.token_id } : {}),
      ...(filter.team_id !== undefined ? { teamId: filter.team_id } : {}),
      ...(scope ? { scope } : {}),
      ...(filter.model !== undefined ? { model: filter.model } : {}),
      ...(filter.status !== undefined ? { status: filter.status } : {}),
      ...(filter.batch_id !== undefined ? { batchId: filter.batch_id } : {}),
      ...timeRange(filter),
    };
    const rows = await this.repo.list(where, limit + 1, decodeCursor(filter.cursor));
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return { data: page.map(entryOf), next_cursor: rows.length > limit && last ? encodeCursor(last.created_at, last.id) : null };
  }

  async tasks(filter: { owner_id?: string; team_id?: string; status?: string; model?: string; from?: string; to?: string; limit?: number; cursor?: string }, scope?: RowScope): Promise<{ data: TaskStatusRecord[]; next_cursor: string | null }> {
    const limit = filter.limit ?? 50;
    const where: TaskFilter = {
      ...(filter.owner_id !== undefined ? { ownerId: filter.owner_id } : {}),
      ...(filter.team_id !== undefined ? { teamId: filter.team_id } : {}),
      ...(scope ? { scope } : {}),
      ...(filter.status !== undefined ? { status: filter.status } : {}),
      ...(filter.model !== undefined ? { model: filter.model } : {}),
      ...timeRange(filter),
    };
    const rows = await this.repo.tasks(where, limit + 1, decodeCursor(filter.cursor));
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return { data: page.map((row) => statusRecordOf(row)), next_cursor: rows.length > limit && last ? encodeCursor(last.created_at, last.id) : null };
  }

  /** Deletes ledger rows past USAGE_RETENTION_DAYS now and every hour (the daily sums stay). */
  startRetention(): void {
    if (this.opts.retentionDays <= 0) return;
    const sweep = () =>
      this.repo
        .deleteBefore(this.now() - this.opts.retentionDays * DAY_MS)
        .then((n) => n > 0 && this.opts.logger.info({ deleted: n }, 'usage ledger rows past retention deleted'))
        .catch((err: unknown) => this.opts.logger.error({ err }, 'usage retention failed'));
    this.timer = setInterval(sweep, RETENTION_EVERY_MS);
    this.timer.unref();
    void sweep();
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

function timeRange(filter: { from?: string; to?: string }): { from?: number; to?: number } {
  const from = timeParam(filter.from, 'from');
  const to = timeParam(filter.to, 'to');
  return { ...(from !== undefined ? { from } : {}), ...(to !== undefined ? { to } : {}) };
}
