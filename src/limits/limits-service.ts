import type { Logger } from 'pino';
import { ApiError, UpstreamApiError } from '../core/errors.ts';
import type { Principal } from '../auth/tokens.ts';
import type { LimitsRepo, SubjectKind } from '../storage/repos/limits-repo.ts';
import type { UsageRepo } from '../storage/repos/usage-repo.ts';
import type { UsageLedgerRow } from '../storage/schema.ts';
import type { EventBus } from '../storage/event-bus.ts';
import type { TaskEnding, EndWork } from '../tasks/task-endings.ts';
import type { TaskAdmission } from '../tasks/generation-service.ts';
import type { AdmitOutcome, LimitCounters, RateState, Settlement, SubjectLimits } from './counters.ts';
import { applyPatch, checkWithin, parseLimits, periodOf, type CreditPeriod, type Limits, type LimitsPatch } from './limits.ts';
import type { ModelPricing } from '../config/settings.ts';
import { storedEndpoint } from '../endpoints/endpoint-table.ts';
import type { ChatUsage } from '../providers/spec.ts';
import { charactersOf, costOf, estimateInputTokens, estimateOf, NO_TOKENS, promptTokensOf, secondsOf, tokenUsageOf, type Consumption, type TokenUsage } from './pricing.ts';

/** What limits and the ledger need of a model: its alias, its provider and prices. */
export interface ModelInfo {
  alias: string;
  provider: string | undefined;
  pricing: ModelPricing | undefined;
}

export interface LimitsServiceOptions {
  counters: LimitCounters;
  /** True when the counters are shared (Redis): settlements are then marked once they are applied. */
  shared: boolean;
  /** The model a name stands for (a catalog alias or a workflow), or undefined: the ledger never keeps a caller's text as a model. */
  modelInfo(name: string): ModelInfo | undefined;
  /** How long a task slot or a credit hold lasts when nobody settles it (its holder died). */
  holdMs: number;
  logger: Logger;
  now?: () => number;
}

/** A call being admitted: its route, the model it names and its body. */
export interface CallInfo {
  /** `POST /v1/chat/completions`: the method and route pattern (the ledger's `endpoint` column keeps its path). */
  route: string;
  body: Record<string, unknown> | undefined;
  /** Chat and agent calls count tokens. */
  countsTokens: boolean;
  /** The batch a line of which this call runs (its ledger row names it). */
  batchId?: string;
}

/**
 * How long limits read from the store are trusted. A change through the admin API reaches every
 * instance sharing the counters at its next admission (the counters keep the limits' generation);
 * this bounds how late an instance with counters of its own, or one that only settles tasks, sees it.
 */
const LIMITS_TTL_MS = 5_000;
/** Settlements the shared counters missed (an instance died in between) are applied after this long. */
const RECONCILE_AFTER_MS = 10_000;
const RECONCILE_BATCH = 200;

interface CachedLimits {
  token: Limits | undefined;
  user: Limits | undefined;
  team: Limits | undefined;
  /** The generation of the limits when they were read. */
  generation: number;
  expiresAt: number;
}

function subjectLimits(subject: string, limits: Limits, at: number): SubjectLimits {
  return {
    subject,
    rpm: limits.requests_per_minute ?? 0,
    tpm: limits.tokens_per_minute ?? 0,
    concurrent: limits.concurrent_tasks ?? 0,
    credits: limits.credits === undefined ? -1 : Math.round(limits.credits * 1_000_000),
    period: periodOf((limits.credits_period ?? 'day') as CreditPeriod, at).key,
  };
}

/** A subject's limits need the end of a call (to release a slot, a hold, correct tokens or count spending). */
function settles(s: SubjectLimits): boolean {
  return s.tpm > 0 || s.concurrent > 0 || s.credits >= 0;
}

/** The ledger's endpoint of an MCP tools/call. */
export const MCP_TOOLS_CALL = 'mcp.tools_call';

/** The limits of a call's token, user and team, as last read. */
type SubjectsLimits = Pick<CachedLimits, 'token' | 'user' | 'team'>;

const SUBJECT_PREFIX: Record<SubjectKind, string> = { token: 'tok', user: 'usr', team: 'team' };

/** Answers of the gateway that turn a call away before anything ran. */
const REFUSALS = new Set([400, 401, 404, 413]);

/** The ledger's status of a call that made no task: `refused` when the gateway, not an upstream, turned it away. */
function callStatus(httpStatus: number, upstreamFailed: boolean): string {
  if (httpStatus < 400) return 'success';
  return REFUSALS.has(httpStatus) && !upstreamFailed ? 'refused' : 'error';
}

/** A ledger row's token columns. */
function ledgerTokens(tokens: TokenUsage): Pick<UsageLedgerRow, 'input_tokens' | 'cached_input_tokens' | 'cache_write_tokens' | 'output_tokens'> {
  return { input_tokens: tokens.inputTokens, cached_input_tokens: tokens.cachedInputTokens, cache_write_tokens: tokens.cacheWriteTokens, output_tokens: tokens.outputTokens };
}

/** A call's ledger row; what only a call that ran has (usage, cost, reservation) defaults to none. */
function callRow(call: {
  id: string;
  startedAt: number;
  finishedAt: number;
  principal: Principal | null;
  /** What the ledger's endpoint column keeps: a route's path, or `mcp.tools_call`. */
  endpoint: string;
  model: string | undefined;
  provider: string | undefined;
  channel: string | undefined;
  status: string;
  httpStatus: number;
  tokens?: TokenUsage;
  cost?: number;
  reserved?: number;
  countersApplied?: number;
  batchId?: string | undefined;
}): UsageLedgerRow {
  const tokens = call.tokens ?? NO_TOKENS;
  return {
    id: call.id,
    kind: 'request',
    created_at: call.startedAt,
    finished_at: call.finishedAt,
    // '' when the caller is not known (a refused token).
    user_id: call.principal?.userId ?? '',
    token_id: call.principal && !call.principal.isAdmin ? call.principal.tokenId : null,
    team_id: call.principal?.teamId ?? null,
    endpoint: call.endpoint,
    model: call.model ?? null,
    provider: call.provider ?? null,
    channel: call.channel ?? null,
    status: call.status,
    http_status: call.httpStatus,
    // Each field named (no spread of ledgerTokens): a literal that spreads in its middle takes V8's slow path at every call.
    input_tokens: tokens.inputTokens,
    cached_input_tokens: tokens.cachedInputTokens,
    cache_write_tokens: tokens.cacheWriteTokens,
    output_tokens: tokens.outputTokens,
    outputs: 0,
    cost: call.cost ?? 0,
    reserved: call.reserved ?? 0,
    latency_ms: call.finishedAt - call.startedAt,
    request_id: call.id,
    task_id: null,
    counters_applied: call.countersApplied ?? 1,
    batch_id: call.batchId ?? null,
  };
}

/**
 * One call's passage through limits: what it holds from admission on, what the route reports it
 * used, and its settlement at the end (once), unless a task took it over.
 */
export class Admission implements TaskAdmission {
  /** What the call used, as the route reported it. */
  tokens: TokenUsage = NO_TOKENS;
  private usageReported = false;
  private upstreamFailed = false;
  private taskSlot = false;
  /** Set once the call's task exists: the task settles at its own end. */
  private handedTo: string | undefined;
  private settled = false;

  private readonly service: LimitsService;
  readonly id: string;
  readonly principal: Principal;
  readonly route: string;
  readonly model: string | undefined;
  readonly startedAt: number;
  readonly subjects: SubjectLimits[];
  readonly reserved: number;
  readonly tokensEstimated: number;
  readonly countsTokens: boolean;
  readonly rate: RateState | undefined;
  readonly batchId: string | undefined;

  constructor(
    service: LimitsService,
    id: string,
    principal: Principal,
    route: string,
    model: string | undefined,
    startedAt: number,
    subjects: SubjectLimits[],
    reserved: number,
    tokensEstimated: number,
    /** Chat and agent calls: their tokens count against tokens_per_minute (others' only in the ledger). */
    countsTokens: boolean,
    rate: RateState | undefined,
    batchId: string | undefined,
  ) {
    this.service = service;
    this.id = id;
    this.principal = principal;
    this.route = route;
    this.model = model;
    this.startedAt = startedAt;
    this.subjects = subjects;
    this.reserved = reserved;
    this.tokensEstimated = tokensEstimated;
    this.countsTokens = countsTokens;
    this.rate = rate;
    this.batchId = batchId;
  }

  get tokenId(): string | null {
    return this.principal.isAdmin ? null : this.principal.tokenId;
  }

  get teamId(): string | null {
    return this.principal.teamId ?? null;
  }

  /** The usage a chat, agent or embeddings call reports (the model's, or the gateway's estimate). */
  recordUsage(usage: ChatUsage): void {
    this.tokens = tokenUsageOf(usage);
    this.usageReported = true;
  }

  /** Takes a task slot (429 too_many_tasks when the caller's are all taken) and hands the credits held to the task. */
  async beginTask(): Promise<{ tokenId: string | null; reservedCredits: number; teamId: string | null }> {
    if (this.handedTo !== undefined || this.taskSlot) return { tokenId: this.tokenId, reservedCredits: 0, teamId: this.teamId };
    if (this.subjects.some((s) => s.concurrent > 0)) {
      if (!(await this.service.counters.beginTask(this.id, this.subjects, this.service.holdMs))) {
        throw new ApiError('too_many_tasks', 'too many tasks running: wait for one to end', null);
      }
    }
    this.taskSlot = true;
    return { tokenId: this.tokenId, reservedCredits: this.reserved, teamId: this.teamId };
  }

  taskSubmitted(taskId: string): void {
    this.handedTo = taskId;
  }

  /** The error the call answers with: an upstream's refusal is not the gateway's. */
  failedWith(err: unknown): void {
    if (err instanceof UpstreamApiError) this.upstreamFailed = true;
  }

  /** The call ended (answered, failed or cut off): settles it unless its task will. */
  async end(httpStatus: number, served: { provider: string; channel: string } | undefined): Promise<void> {
    if (this.settled || this.handedTo !== undefined) return;
    this.settled = true;
    // tokens_per_minute counts the whole prompt, cached or not.
    const tokensDelta = this.usageReported && this.countsTokens ? promptTokensOf(this.tokens) + this.tokens.outputTokens - this.tokensEstimated : 0;
    return this.service.settleCall(this, callStatus(httpStatus, this.upstreamFailed), httpStatus, served?.provider, served?.channel, tokensDelta, this.taskSlot);
  }
}

/**
 * Limits, prices and the usage ledger: admission of every /v1 call against its token's and
 * user's limits, settlement of calls and tasks (exactly once: a task's ledger row is written in
 * the transaction that ends it), and the administration of limits.
 */
export class LimitsService {
  private readonly cache = new Map<string, CachedLimits>();
  /** The latest generation of the limits this instance knows (the counters tell a newer one). */
  private generation = 0;
  /** Ended tasks whose counters wait for the end to be committed (the task.status event). */
  private readonly pending = new Map<string, Settlement>();
  private readonly unsubscribe: () => void;
  private reconcileTimer: NodeJS.Timeout | undefined;
  readonly counters: LimitCounters;
  readonly holdMs: number;

  private readonly repo: LimitsRepo;
  private readonly usage: UsageRepo;
  private readonly opts: LimitsServiceOptions;

  constructor(
    repo: LimitsRepo,
    usage: UsageRepo,
    bus: EventBus,
    opts: LimitsServiceOptions,
  ) {
    this.repo = repo;
    this.usage = usage;
    this.opts = opts;
    this.counters = opts.counters;
    this.holdMs = opts.holdMs;
    this.unsubscribe = bus.subscribe('task.status', (event) => {
      const settlement = this.pending.get(event.taskId);
      if (!settlement || !['success', 'failed', 'rejected', 'cancelled'].includes(event.status)) return;
      this.pending.delete(event.taskId);
      void this.applyCounters(settlement);
    });
  }

  private now(): number {
    return (this.opts.now ?? Date.now)();
  }

  /**
   * Embedded counters start from the store: what every limited subject spent this period and the
   * tasks it has running. Shared counters keep their state in Redis and reconcile missed settlements.
   */
  async start(): Promise<void> {
    if (this.opts.shared) {
      this.reconcileTimer = setInterval(() => void this.reconcile(), RECONCILE_AFTER_MS / 2);
      this.reconcileTimer.unref();
      return;
    }
    const { tokens, users, teams } = await this.repo.limitedSubjects();
    for (const t of tokens) await this.seed('token', t.id, parseLimits(t.limits));
    for (const u of users) await this.seed('user', u.user_id, parseLimits(u.limits));
    for (const t of teams) await this.seed('team', t.id, parseLimits(t.limits));
  }

  async close(): Promise<void> {
    this.unsubscribe();
    clearInterval(this.reconcileTimer);
    await this.counters.close();
    // Before the database closes: the rows of the last calls are written.
    await this.usage.flushCalls().catch((err: unknown) => this.opts.logger.error({ err }, 'writing the last ledger rows failed'));
  }

  private async limitsOf(principal: Principal): Promise<CachedLimits> {
    const teamId = principal.teamId ?? null;
    const key = `${principal.tokenId}:${principal.userId}:${teamId ?? ''}`;
    const cached = this.cache.get(key);
    const now = this.now();
    // Taken before the read: limits read while a change lands are of the older generation, and read again.
    const generation = this.generation;
    if (cached && cached.generation === generation && cached.expiresAt > now) return cached;
    const [token, user, team] = await Promise.all([
      principal.isAdmin ? undefined : this.repo.tokenLimits(principal.tokenId),
      this.repo.userLimits(principal.userId),
      teamId === null ? undefined : this.repo.teamLimits(teamId),
    ]);
    const entry = { token: parseLimits(token?.limits), user: parseLimits(user), team: parseLimits(team), generation, expiresAt: now + LIMITS_TTL_MS };
    this.cache.set(key, entry);
    return entry;
  }

  /** Forgets the limits read before `generation`. */
  private limitsChangedTo(generation: number): void {
    if (generation === this.generation) return;
    this.generation = generation;
    this.cache.clear();
  }

  /** The subjects whose limits a call counts against: its token, its user and its token's team, in one admission. */
  private subjectsOf(limits: SubjectsLimits, tokenId: string | null, userId: string, teamId: string | null, at: number): SubjectLimits[] {
    const subjects: SubjectLimits[] = [];
    if (limits.token && tokenId) subjects.push(subjectLimits(`tok:${tokenId}`, limits.token, at));
    if (limits.user) subjects.push(subjectLimits(`usr:${userId}`, limits.user, at));
    if (limits.team && teamId) subjects.push(subjectLimits(`team:${teamId}`, limits.team, at));
    return subjects;
  }

  /**
   * Admits a call or throws the contract's 429; nothing is held when the caller has no limits.
   * The counters are asked even then: limits set since they were read (on any instance) apply now.
   */
  async admit(principal: Principal, requestId: string, call: CallInfo): Promise<Admission> {
    const now = this.now();
    const info = this.modelNamed(call.body);
    const model = info?.alias;
    for (;;) {
      const limits = await this.limitsOf(principal);
      const subjects = this.subjectsOf(limits, principal.isAdmin ? null : principal.tokenId, principal.userId, principal.teamId ?? null, now);
      const pricing = subjects.length === 0 ? undefined : info?.pricing;
      const credits = subjects.some((s) => s.credits >= 0) && call.body ? estimateOf(pricing, call.body) : 0;
      const tokens = call.countsTokens && call.body && subjects.some((s) => s.tpm > 0) ? estimateInputTokens(call.body) : 0;
      const outcome = await this.counters.admit({ id: requestId, generation: limits.generation, subjects, tokens, credits, holdMs: this.holdMs }).catch((err: unknown): AdmitOutcome => {
        // Counters out of reach (Redis down): a caller without limits, as last read, goes on
        // unchecked; only a limited call has to wait for them.
        if (subjects.length === 0) return { ok: true, rate: undefined };
        throw err;
      });
      if (outcome.ok) return new Admission(this, requestId, principal, call.route, model, now, subjects, credits, tokens, call.countsTokens, outcome.rate, call.batchId);
      if (outcome.code === 'stale') {
        this.limitsChangedTo(outcome.generation);
        continue;
      }
      const headers: Record<string, string> = outcome.rate ? rateHeaders(outcome.rate) : {};
      if (outcome.code === 'quota_exceeded') throw new ApiError('quota_exceeded', 'credit limit reached for this period', null, {}, headers);
      throw new ApiError('rate_limited', `rate limit reached: retry in ${outcome.retryAfterS} s`, null, {}, { ...headers, 'retry-after': String(outcome.retryAfterS) });
    }
  }

  /** The catalog model (or workflow) a body's `model` names, if it names one. */
  private modelNamed(body: Record<string, unknown> | undefined): ModelInfo | undefined {
    return typeof body?.model === 'string' ? this.opts.modelInfo(body.model) : undefined;
  }

  /** Settles a call that made no task: counters first, then its ledger row. */
  async settleCall(admission: Admission, status: string, httpStatus: number, provider: string | undefined, channel: string | undefined, tokensDelta: number, taskSlot: boolean): Promise<void> {
    const info = admission.model === undefined ? undefined : this.opts.modelInfo(admission.model);
    const tokens = admission.tokens;
    // Field by field: spreading the tokens into a new literal took V8's slow path at every call (about 3% of a line profile's samples).
    const used: Consumption = { inputTokens: tokens.inputTokens, cachedInputTokens: tokens.cachedInputTokens, cacheWriteTokens: tokens.cacheWriteTokens, outputTokens: tokens.outputTokens, images: 0, seconds: 0, characters: 0 };
    const cost = status === 'success' ? costOf(info?.pricing, used) : 0;
    let applied = 1;
    if (admission.subjects.some(settles)) {
      try {
        await this.counters.settle({ ledgerId: admission.id, reservationId: admission.id, subjects: admission.subjects, cost, tokensDelta, task: taskSlot });
      } catch (err) {
        applied = 0;
        this.opts.logger.warn({ err, requestId: admission.id }, 'settling a call in the limit counters failed; retried later');
      }
    }
    // Only POST calls are billable work; reads are counted by the request rate alone.
    if (!admission.route.startsWith('POST ')) return;
    this.writeCallRow(callRow({
      id: admission.id,
      startedAt: admission.startedAt,
      finishedAt: this.now(),
      principal: admission.principal,
      endpoint: admission.route.slice('POST '.length),
      model: admission.model,
      provider: provider ?? info?.provider,
      channel,
      status,
      httpStatus,
      tokens: admission.tokens,
      cost,
      reserved: admission.reserved,
      countersApplied: applied,
      batchId: admission.batchId,
    }));
  }

  /**
   * Ledgers a POST the gateway turned away before admitting it (a refused token, a body that is
   * not JSON, a malformed Idempotency-Key), with the model its body names when that is one of
   * ours; any other answer given there (429, a replay) leaves no row.
   */
  recordRefusal(call: { id: string; route: string; latencyMs: number; principal: Principal | null; body: Record<string, unknown> | undefined; httpStatus: number }): void {
    if (!call.route.startsWith('POST ') || !REFUSALS.has(call.httpStatus)) return;
    const info = this.modelNamed(call.body);
    const finishedAt = this.now();
    const { id, route, principal, httpStatus } = call;
    this.writeCallRow(callRow({ id, endpoint: route.slice('POST '.length), principal, httpStatus, startedAt: finishedAt - Math.round(call.latencyMs), finishedAt, model: info?.alias, provider: info?.provider, channel: undefined, status: 'refused' }));
  }

  /**
   * Ledgers one MCP tools/call (endpoint `mcp.tools_call`, model the tool's name as /mcp lists
   * it): `refused` when the gateway turned it away before anything ran.
   */
  recordToolCall(call: { id: string; principal: Principal; tool: string; startedAt: number; status: 'success' | 'error' | 'refused'; httpStatus: number }): void {
    const { id, principal, tool, startedAt, status, httpStatus } = call;
    this.writeCallRow(callRow({ id, principal, endpoint: MCP_TOOLS_CALL, model: tool, provider: undefined, channel: undefined, status, httpStatus, startedAt, finishedAt: this.now() }));
  }

  /** Names the batch of a task's ledger row, once the task (a batch line) has ended and written it. */
  async tagBatchTask(taskId: string, batchId: string): Promise<void> {
    await this.usage.tagBatch(taskId, batchId);
  }

  /**
   * Hands a call's row to its batch, not waited on: ledger reads write the waiting rows first. A
   * batch's failure is logged once, not once per row; and no call holds a promise on the batch,
   * which would keep every call's objects alive until the batch is written (tens of milliseconds,
   * into the old generation).
   */
  private writeCallRow(row: UsageLedgerRow): void {
    this.usage.recordCall(row)?.catch((err: unknown) => this.opts.logger.error({ err, requestId: row.id }, 'writing a batch of ledger rows failed (the request id is its first row\'s)'));
  }

  /**
   * The end handler of every task: computes its cost (nothing unless it succeeded), writes it in
   * the billing entry and the ledger row, in the transaction that ends the task. The counters
   * follow once that end is committed.
   */
  readonly onTaskEnd = async (ending: TaskEnding): Promise<EndWork | undefined> => {
    const task = ending.task;
    const info = this.opts.modelInfo(task.model);
    const result = ending.result;
    const input = JSON.parse(task.input) as Record<string, unknown>;
    const outputs = result.output_content ?? [];
    const { meter } = storedEndpoint(task.endpoint);
    const used: Consumption = {
      ...NO_TOKENS,
      inputTokens: result.usage?.input_tokens ?? 0,
      outputTokens: result.usage?.output_tokens ?? 0,
      images: outputs.filter((o) => o.type === 'image').length,
      seconds: meter === 'seconds' ? secondsOf(input) ?? 0 : 0,
      characters: meter === 'characters' ? charactersOf(input) : 0,
    };
    const success = ending.status === 'success';
    const cost = success ? costOf(info?.pricing, used) : 0;
    if (success && info?.pricing && result.billings?.length) {
      result.billings = result.billings.map((b, i) => ({ ...b, billing_params: { ...b.billing_params, cost: i === 0 ? cost / 1_000_000 : 0 } }));
    }
    const routing = (result as { routing?: { provider?: string; channel?: string } }).routing;
    const limits = await this.limitsFor(task.owner_id, task.token_id, task.team_id);
    const subjects = this.subjectsOf(limits, task.token_id, task.owner_id, task.team_id, task.created_at);
    const needsCounters = subjects.some(settles);
    const finished = this.now();
    const row: UsageLedgerRow = {
      id: task.id,
      kind: 'task',
      created_at: task.created_at,
      finished_at: finished,
      user_id: task.owner_id,
      token_id: task.token_id,
      endpoint: task.endpoint,
      model: task.model,
      provider: routing?.provider ?? task.provider,
      channel: routing?.channel ?? null,
      status: ending.status,
      http_status: null,
      ...ledgerTokens(used),
      outputs: outputs.length,
      cost,
      reserved: task.reserved_credits,
      latency_ms: finished - task.created_at,
      request_id: task.request_id,
      task_id: task.id,
      counters_applied: needsCounters && this.opts.shared ? 0 : 1,
      batch_id: null,
      team_id: task.team_id,
    };
    if (needsCounters) this.pending.set(task.id, { ledgerId: task.id, reservationId: task.request_id, subjects, cost, tokensDelta: 0, task: true });
    return {
      write: (db) => this.usage.record(db, row),
      abandon: async () => {
        this.pending.delete(task.id);
      },
    };
  };

  private async limitsFor(userId: string, tokenId: string | null, teamId: string | null): Promise<SubjectsLimits> {
    return this.limitsOf({ userId, tokenId: tokenId ?? 'admin', isAdmin: tokenId === null, teamId });
  }

  private async applyCounters(settlement: Settlement): Promise<void> {
    try {
      await this.counters.settle(settlement);
      if (this.opts.shared) await this.usage.markApplied([settlement.ledgerId]);
    } catch (err) {
      this.opts.logger.warn({ err, ledgerId: settlement.ledgerId }, 'settling a task in the limit counters failed; retried later');
    }
  }

  /** Applies settlements the shared counters missed: their instance died between the end and the counters. */
  async reconcile(): Promise<void> {
    try {
      const rows = await this.usage.unapplied(this.now() - RECONCILE_AFTER_MS, RECONCILE_BATCH);
      for (const row of rows) {
        const limits = await this.limitsFor(row.user_id, row.token_id, row.team_id);
        const subjects = this.subjectsOf(limits, row.token_id, row.user_id, row.team_id, row.created_at);
        // The settle script refuses a ledger id it has seen: a settlement applied before the mark is not applied twice.
        await this.counters.settle({ ledgerId: row.id, reservationId: row.request_id, subjects, cost: row.cost, tokensDelta: 0, task: row.kind === 'task' });
      }
      await this.usage.markApplied(rows.map((r) => r.id));
    } catch (err) {
      this.opts.logger.warn({ err }, 'reconciling the limit counters failed');
    }
  }

  // Administration.

  async tokenLimits(tokenId: string): Promise<Limits | undefined> {
    const row = await this.repo.tokenLimits(tokenId);
    if (!row) throw new ApiError('token_not_found', `no token ${tokenId}`, 'id');
    return parseLimits(row.limits);
  }

  /** Changes a token's name and limits; answers the limits now. With a `cap` (its team's), limits above it are a 400. */
  async updateToken(tokenId: string, change: { name?: string | null; limits?: LimitsPatch | null }, cap?: Limits): Promise<Limits | undefined> {
    const current = await this.tokenLimits(tokenId);
    const limits = change.limits === undefined ? current : change.limits === null ? undefined : applyPatch(current, change.limits);
    if (change.limits) checkWithin(limits, cap);
    await this.repo.setToken(tokenId, { ...(change.name !== undefined ? { name: change.name } : {}), limits: limits ? JSON.stringify(limits) : null });
    if (change.limits !== undefined) this.limitsChangedTo(await this.counters.limitsChanged());
    if (limits) await this.seed('token', tokenId, limits);
    return limits;
  }

  /** Seeds a new token's counters (it has spent nothing yet). */
  async tokenCreated(tokenId: string, limits: Limits | undefined): Promise<void> {
    if (limits) await this.seed('token', tokenId, limits);
  }

  async userLimits(userId: string): Promise<Limits | undefined> {
    return parseLimits(await this.repo.userLimits(userId));
  }

  async updateUser(userId: string, patch: LimitsPatch): Promise<Limits | undefined> {
    const limits = applyPatch(await this.userLimits(userId), patch);
    await this.repo.setUser(userId, limits ? JSON.stringify(limits) : null, this.now());
    this.limitsChangedTo(await this.counters.limitsChanged());
    if (limits) await this.seed('user', userId, limits);
    return limits;
  }

  async teamLimits(teamId: string): Promise<Limits | undefined> {
    return parseLimits(await this.repo.teamLimits(teamId));
  }

  /** Sets a team's limits (for all its tokens together); answers them. */
  async updateTeam(teamId: string, patch: LimitsPatch | null): Promise<Limits | undefined> {
    const limits = patch === null ? undefined : applyPatch(await this.teamLimits(teamId), patch);
    await this.repo.setTeamLimits(teamId, limits ? JSON.stringify(limits) : null);
    this.limitsChangedTo(await this.counters.limitsChanged());
    if (limits) await this.seed('team', teamId, limits);
    return limits;
  }

  /** Seeds a new team's counters (it has spent nothing yet). */
  async teamCreated(teamId: string, limits: Limits | undefined): Promise<void> {
    if (limits) await this.seed('team', teamId, limits);
  }

  /** Sets a subject's counters from the store: this period's spending and its running tasks. */
  private async seed(by: SubjectKind, id: string, limits: Limits | undefined): Promise<void> {
    if (!limits) return;
    const period = periodOf((limits.credits_period ?? 'day') as CreditPeriod, this.now());
    // Calls whose rows still wait to be written count too.
    await this.usage.writtenCalls();
    const [spent, live] = await Promise.all([this.repo.spentSince(by, id, period.startDay), this.repo.liveTasks(by, id)]);
    await this.counters.seed({ subject: `${SUBJECT_PREFIX[by]}:${id}`, period: period.key, spent, live }, this.holdMs);
  }
}

/** OpenAI's request-rate headers. */
export function rateHeaders(rate: RateState): Record<string, string> {
  return {
    'x-ratelimit-limit-requests': String(rate.limit),
    'x-ratelimit-remaining-requests': String(rate.remaining),
    'x-ratelimit-reset-requests': `${Math.ceil(rate.resetMs / 1000)}s`,
  };
}
