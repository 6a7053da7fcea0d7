import type { Logger } from 'pino';
import { savedTraceContext } from '../telemetry/tracing.ts';
import { ApiError } from '../core/errors.ts';
import { newId } from '../core/ids.ts';
import { isTerminal, transition, type TaskChange, type TaskState, type TaskStatus } from '../core/task-state.ts';
import type { GenerationOutput } from '../providers/spec.ts';
import type { RuntimeConfig } from '../config/runtime-config.ts';
import type { CallbackDeliveryRow, TaskEventRow, TaskRow } from '../storage/schema.ts';
import type { NewTaskEvent, TasksRepo, TaskPatch } from '../storage/repos/tasks-repo.ts';
import type { EventBus, TaskStatusEvent, TaskStreamEvent } from '../storage/event-bus.ts';
import type { TaskQueue } from './task-queue.ts';
import { TaskEndings, type EndHandler, type EndpointMatch, type PreparedEnd, type TaskEnding } from './task-endings.ts';
import { parseResult, statusRecordOf, type TaskResult, type TaskStatusRecord } from './task-record.ts';

/** What a generation endpoint asks to run. */
export interface NewTask {
  ownerId: string;
  clientId: string | null;
  requestId: string;
  endpoint: string;
  model: string;
  provider: string;
  outputType: string;
  cancellable: boolean;
  /** The typed input of the endpoint, stored as JSON (generate_info.input). */
  input: object;
  /** Request fields the adapter does not read (generate_info.warnings). */
  warnings?: string[];
  /** The API token that submits it (its limits apply), when there is one. */
  tokenId?: string | null;
  /** Micro-credits its admission reserved against credit limits. */
  reservedCredits?: number;
  /** The team its token works for (its limits and usage count the task). */
  teamId?: string | null;
  /** The statuses its callback announces; absent: every status. */
  callbackEvents?: readonly TaskStatus[];
  /** Epoch ms: still waiting then, it fails without running (x-deadline). */
  deadlineAt?: number;
}

/** What comes with a status change besides the change itself. */
export interface TransitionExtra {
  /** Merged into the stored result. */
  result?: TaskResult;
  /** The instance running the task. */
  server?: string;
  /** Replaces what the task has saved to resume (saveState), in the same write: a run's start carries its first route so. */
  state?: Record<string, unknown>;
  /** The caller's copy of the stored task, saving a read. */
  current?: TaskRow;
  /** `current` has the saved state as stored too (its caller is the state's one writer): an end need not read the task either. */
  currentHasState?: boolean;
  /** What the engine produced, handed to the end handlers of a successful end. */
  output?: GenerationOutput;
}

export type TransitionResult = { ok: true; row: TaskRow; changed: boolean } | { ok: false; row: TaskRow; reason: 'terminal' | 'not_allowed' };

/** Compare-and-set retries before a writer gives up; each retry means another writer made progress. */
const MAX_CAS_RETRIES = 50;
/** Overdue tasks failed per read of the store. */
const OVERDUE_BATCH = 100;
/** The message of a task that waited past its x-deadline. */
export const DEADLINE_EXCEEDED = 'deadline exceeded';
/** A sync waiter re-reads the store this often, in case an event went missing between instances. */
const WAIT_RECHECK_MS = 2000;
/** Two progress events of a task are at least this far apart; a change in between is sent when the time is up. */
export const PROGRESS_EVENT_SPACING_MS = 500;
/** Pacing entries kept before the stale ones (no change waiting, spacing over) are dropped. */
const MAX_PACED_TASKS = 1000;

/** Where a task's event stream starts without Last-Event-ID: its record now and the sequence number it stands at. */
export interface TaskSnapshot {
  record: TaskStatusRecord;
  seq: number;
  ended: boolean;
}

/** The progress events of one task: when the last went out, and a change waiting for the spacing to pass. */
interface ProgressPacing {
  lastAt: number;
  pending?: number;
  timer?: NodeJS.Timeout;
}

function stateOf(row: TaskRow): TaskState {
  return {
    status: row.status as TaskStatus,
    progress: row.progress,
    message: row.message,
    errorMessage: row.error_message,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
  };
}

/**
 * Tasks: creation, the status changes (every one persisted, with its callback delivery, then
 * published), the end handlers, reading, cancelling and waiting for the end.
 */
export class TaskService {
  private readonly waiters = new Map<string, Set<(record: TaskStatusRecord | undefined) => void>>();
  /** Progress events of the tasks whose progress this instance writes (their runner's). */
  private readonly pacing = new Map<string, ProgressPacing>();
  private readonly unsubscribe: () => void;
  private readonly endings: TaskEndings;

  private readonly repo: TasksRepo;
  private readonly bus: EventBus;
  private readonly queue: TaskQueue;
  private readonly runtimeConfig: RuntimeConfig;
  private readonly opts: {
      instanceId: string;
      logger: Logger;
      now?: () => number;
      observe?: (row: TaskRow) => void;
      /** OUTPUT_RETENTION_DAYS: a successful task's outputs expire this long after its end; undefined keeps them. */
      outputRetentionMs?: number;
    };

  constructor(
    repo: TasksRepo,
    bus: EventBus,
    queue: TaskQueue,
    runtimeConfig: RuntimeConfig,
    opts: {
      instanceId: string;
      logger: Logger;
      now?: () => number;
      observe?: (row: TaskRow) => void;
      /** OUTPUT_RETENTION_DAYS: a successful task's outputs expire this long after its end; undefined keeps them. */
      outputRetentionMs?: number;
    },
  ) {
    this.repo = repo;
    this.bus = bus;
    this.queue = queue;
    this.runtimeConfig = runtimeConfig;
    this.opts = opts;
    this.unsubscribe = bus.subscribe('task.status', (event) => this.wakeWaiters(event));
    this.endings = new TaskEndings(opts.logger);
  }

  /**
   * Registers what happens when a task of the matching endpoints ends (any terminal status):
   * the handler's rows are written in the transaction that writes the end (see task-endings.ts).
   * Handlers run in the order they were registered.
   */
  onEnd(match: EndpointMatch, handler: EndHandler): void {
    this.endings.on(match, handler);
  }

  private now(): number {
    return (this.opts.now ?? Date.now)();
  }

  /** Stores a submitted task (with its first callback delivery), announces it and queues it. */
  async submit(spec: NewTask): Promise<TaskRow> {
    const now = this.now();
    const callback = await this.runtimeConfig.callback();
    const row: TaskRow = {
      id: newId('task'),
      request_id: spec.requestId,
      owner_id: spec.ownerId,
      client_id: spec.clientId,
      endpoint: spec.endpoint,
      model: spec.model,
      provider: spec.provider,
      output_type: spec.outputType,
      cancellable: spec.cancellable ? 1 : 0,
      status: 'submitted',
      progress: 0,
      version: 1,
      message: null,
      error_message: null,
      input: JSON.stringify(spec.input),
      result: spec.warnings?.length ? JSON.stringify({ warnings: spec.warnings } satisfies TaskResult) : null,
      saved_state: null,
      trace_context: savedTraceContext(),
      callback_url: callback.callback_url ?? null,
      callback_events: spec.callbackEvents ? JSON.stringify(spec.callbackEvents) : null,
      deadline_at: spec.deadlineAt ?? null,
      server: null,
      attempts: 0,
      lease_owner: null,
      lease_until: null,
      created_at: now,
      updated_at: now,
      started_at: null,
      finished_at: null,
      token_id: spec.tokenId ?? null,
      reserved_credits: spec.reservedCredits ?? 0,
      event_seq: 1,
      team_id: spec.teamId ?? null,
    };
    const record = statusRecordOf(row);
    const first: TaskEventRow = { task_id: row.id, seq: 1, kind: 'status', data: JSON.stringify(record), created_at: now };
    await this.repo.insert(row, this.deliveryOf(row, record, now), [first]);
    // Together, so a submit waits for Redis once at most (REDIS_TIMEOUT_MS). The event still goes
    // out first: announce sends it before its first await, and the queue awaits before it sends the job.
    await Promise.all([this.announce(row, record, [first]), this.queue.enqueue(row)]);
    return row;
  }

  /**
   * Fails the tasks still waiting past their deadline, without running them. Every instance may
   * sweep at once: the compare-and-set of transition writes each failure once, and a worker's
   * start of the same task loses to it (or wins, and the task is no longer waiting).
   */
  async failOverdue(): Promise<void> {
    for (;;) {
      const overdue = await this.repo.overdueWaiting(this.now(), OVERDUE_BATCH);
      for (const taskId of overdue) await this.transition(taskId, { status: 'failed', message: DEADLINE_EXCEEDED });
      if (overdue.length < OVERDUE_BATCH) return;
    }
  }

  /** Whether the task waits past its deadline: its worker then fails it (failOverdue's message) instead of running it. */
  isOverdue(row: TaskRow): boolean {
    return row.status === 'submitted' && row.deadline_at !== null && row.deadline_at <= this.now();
  }

  /** The task if it exists; no owner check (workers). */
  async load(taskId: string): Promise<TaskRow | undefined> {
    return this.repo.find(taskId);
  }

  /** Saves what a run needs to resume the task after an interruption (RunContext.remember). */
  async saveState(taskId: string, state: Record<string, unknown>): Promise<string> {
    const saved = JSON.stringify(state);
    await this.repo.saveState(taskId, saved);
    return saved;
  }

  /** The owner's task; another user's task is as unknown as a missing one (404). */
  async get(ownerId: string, taskId: string): Promise<TaskRow> {
    const row = await this.repo.find(taskId);
    if (!row || row.owner_id !== ownerId) throw new ApiError('task_not_found', `no task ${taskId}`, 'taskId');
    return row;
  }

  /** The task status record, with the queue position while the task waits. */
  async record(ownerId: string, taskId: string): Promise<TaskStatusRecord> {
    return (await this.snapshot(ownerId, taskId)).record;
  }

  /** The owner's task record as GET /v1/ai/result answers it, with the number of its last event (read together). */
  async snapshot(ownerId: string, taskId: string): Promise<TaskSnapshot> {
    const row = await this.get(ownerId, taskId);
    const record = statusRecordOf(row, row.status === 'submitted' ? await this.repo.queuePosition(row) : undefined);
    return { record, seq: row.event_seq, ended: isTerminal(row.status) };
  }

  /** Up to `limit` events of the task's stream after sequence number `after`, in order. */
  async eventsAfter(taskId: string, after: number, limit: number): Promise<TaskStreamEvent[]> {
    return (await this.repo.eventsAfter(taskId, after, limit)).map(streamEventOf);
  }

  /** Adds a preview image of a running task to its event stream (nothing once it has ended). */
  async preview(taskId: string, url: string): Promise<void> {
    await this.append(taskId, { kind: 'preview', data: JSON.stringify({ url }) });
  }

  private async append(taskId: string, event: NewTaskEvent): Promise<void> {
    const written = await this.repo.appendEvents(taskId, [event], this.now());
    if (written.length === 0) return;
    try {
      await this.bus.publish('task.events', { taskId, events: written.map(streamEventOf) });
    } catch (err) {
      // Stored: the streams read what they missed from the table (task-event-streams.ts).
      this.opts.logger.error({ err, taskId }, 'publishing task stream events failed');
    }
  }

  /**
   * Cancels the owner's task and tells whoever runs it to stop. A task that has ended answers
   * 409 task_already_finished, also when it ended while this request was on its way.
   */
  async cancel(ownerId: string, taskId: string, reason = 'cancelled by the user'): Promise<TaskStatusRecord> {
    const row = await this.get(ownerId, taskId);
    if (isTerminal(row.status)) throw alreadyFinished(row);
    if (!row.cancellable) throw new ApiError('task_not_cancellable', `task ${taskId} is run by an external API provider and cannot be cancelled`, 'taskId');
    const outcome = await this.transition(taskId, { status: 'cancelled', message: reason });
    if (!outcome.ok) throw alreadyFinished(outcome.row);
    await this.bus.publish('task.cancel', { taskId }).catch((err: unknown) => {
      // The cancel is stored: the run stops at its next progress update, whose write finds the task ended.
      this.opts.logger.warn({ err, taskId }, 'telling the task runner to stop failed');
    });
    return statusRecordOf(outcome.row);
  }

  /**
   * The one way a task's status changes: applies the state machine to the stored task and
   * writes the result compare-and-set, retrying when another writer got there first. The
   * change, its callback delivery and (for an end) the end handlers' rows are persisted in one
   * transaction before the event is published.
   */
  async transition(taskId: string, change: TaskChange, extra: TransitionExtra = {}): Promise<TransitionResult> {
    // Prepared once, on the first attempt that may write the end; kept across compare-and-set retries.
    let ending: { ending: TaskEnding; prepared: PreparedEnd | undefined } | undefined;
    try {
      const outcome = await this.write(taskId, change, extra, async (row) => {
        ending ??= await this.prepareEnd(row, change.status, extra);
        return ending;
      });
      if (!outcome.ok || !outcome.changed) await ending?.prepared?.abandon();
      else ending?.prepared?.written();
      return outcome;
    } catch (err) {
      await ending?.prepared?.abandon();
      throw err;
    }
  }

  private async prepareEnd(row: TaskRow, status: TaskStatus, extra: TransitionExtra): Promise<{ ending: TaskEnding; prepared: PreparedEnd | undefined }> {
    const retentionMs = this.opts.outputRetentionMs;
    const outputsExpireAt = status === 'success' && retentionMs !== undefined ? this.now() + retentionMs : undefined;
    const ending: TaskEnding = { task: row, status, ...(extra.output ? { output: extra.output } : {}), result: { ...parseResult(row), ...extra.result }, ...(outputsExpireAt !== undefined ? { outputsExpireAt } : {}) };
    const prepared = await this.endings.prepare(ending);
    // After every handler: each item says when it goes, whichever handler added it (texts too).
    if (outputsExpireAt !== undefined && ending.result.output_content) {
      const expiresAt = new Date(outputsExpireAt).toISOString();
      ending.result.output_content = ending.result.output_content.map((item) => ({ ...item, expires_at: expiresAt }));
    }
    return { ending, prepared };
  }

  private async write(
    taskId: string,
    change: TaskChange,
    extra: TransitionExtra,
    endOf: (row: TaskRow) => Promise<{ ending: TaskEnding; prepared: PreparedEnd | undefined }>,
  ): Promise<TransitionResult> {
    // The caller's copy saves a read; if it is stale the compare-and-set fails and the task is read.
    // An end reads it anyway: its handlers need the saved state, which changes without a new version.
    let known = isTerminal(change.status) && !extra.currentHasState ? undefined : extra.current;
    for (let i = 0; i < MAX_CAS_RETRIES; i++) {
      const row = known ?? (await this.repo.find(taskId));
      known = undefined;
      if (!row) throw new Error(`task ${taskId} vanished`);
      const now = this.now();
      const outcome = transition(stateOf(row), change, now);
      if (!outcome.ok) return { ok: false, row, reason: outcome.reason };
      const end = isTerminal(outcome.next.status) ? await endOf(row) : undefined;
      // An end writes what its handlers made of the result, over what a retry found stored meanwhile.
      const merged = end ? { ...parseResult(row), ...end.ending.result } : extra.result ? { ...parseResult(row), ...extra.result } : undefined;
      const result = merged ? JSON.stringify(merged) : row.result;
      const server = extra.server ?? row.server;
      const savedState = extra.state ? JSON.stringify(extra.state) : row.saved_state;
      if (!outcome.changed && result === row.result && server === row.server && savedState === row.saved_state) return { ok: true, row, changed: false };
      const callbackUrl = (await this.runtimeConfig.callback()).callback_url ?? null;
      const patch: TaskPatch = {
        status: outcome.next.status,
        progress: outcome.next.progress,
        message: outcome.next.message,
        error_message: outcome.next.errorMessage,
        started_at: outcome.next.startedAt,
        finished_at: outcome.next.finishedAt,
        result,
        ...(savedState !== row.saved_state ? { saved_state: savedState } : {}),
        server,
        updated_at: now,
        // The address configured now: an operator's change applies to the next update.
        callback_url: callbackUrl,
      };
      const next: TaskRow = { ...row, ...patch, version: row.version + 1 };
      const record = statusRecordOf(next);
      const progressed = !isTerminal(next.status) && next.progress !== row.progress;
      const progressDue = progressed && this.progressDue(taskId, now);
      const events = eventsOf(row, next, record, progressDue);
      const written = await this.repo.update(taskId, row.version, patch, this.deliveryOf(next, record, now), events, now, end?.prepared?.write);
      if (written) {
        const stored = { ...next, event_seq: written.at(-1)?.seq ?? row.event_seq };
        if (isTerminal(next.status)) this.stopPacing(taskId);
        else if (progressDue) this.pacedAt(taskId, now);
        else if (progressed) this.progressLater(taskId, next.progress, now);
        await this.announce(stored, record, written);
        return { ok: true, row: stored, changed: true };
      }
    }
    throw new Error(`task ${taskId}: gave up after ${MAX_CAS_RETRIES} conflicting updates`);
  }

  /**
   * Resolves with the record of the task once it has ended, or undefined after `timeoutMs`.
   * Listens for the task's events and re-reads the store now and then, so a missed event
   * cannot strand it.
   */
  async waitForEnd(taskId: string, timeoutMs: number): Promise<TaskStatusRecord | undefined> {
    return new Promise<TaskStatusRecord | undefined>((resolve) => {
      let settled = false;
      const finish = (record: TaskStatusRecord | undefined) => {
        if (settled) return;
        settled = true;
        clearTimeout(timeout);
        clearInterval(recheck);
        const set = this.waiters.get(taskId);
        set?.delete(finish);
        if (set?.size === 0) this.waiters.delete(taskId);
        resolve(record);
      };
      const check = () =>
        this.repo.find(taskId).then(
          (row) => row && isTerminal(row.status) && finish(statusRecordOf(row)),
          (err: unknown) => this.opts.logger.warn({ err, taskId }, 're-reading a waited-for task failed'),
        );
      const set = this.waiters.get(taskId) ?? new Set();
      set.add(finish);
      this.waiters.set(taskId, set);
      const timeout = setTimeout(() => finish(undefined), timeoutMs);
      const recheck = setInterval(check, WAIT_RECHECK_MS);
      void check();
    });
  }

  /** Whether a progress event of the task may go out now (PROGRESS_EVENT_SPACING_MS after the last). */
  private progressDue(taskId: string, now: number): boolean {
    const pacing = this.pacing.get(taskId);
    return !pacing || now - pacing.lastAt >= PROGRESS_EVENT_SPACING_MS;
  }

  /** A progress event of the task went out at `now`: a change still waiting is covered by it. */
  private pacedAt(taskId: string, now: number): void {
    this.stopPacing(taskId);
    if (this.pacing.size >= MAX_PACED_TASKS) {
      for (const [id, pacing] of this.pacing) if (!pacing.timer && now - pacing.lastAt >= PROGRESS_EVENT_SPACING_MS) this.pacing.delete(id);
    }
    this.pacing.set(taskId, { lastAt: now });
  }

  /** A progress change too soon after the last event: the newest such change goes out when the spacing has passed. */
  private progressLater(taskId: string, progress: number, now: number): void {
    const pacing = this.pacing.get(taskId)!;
    pacing.pending = progress;
    pacing.timer ??= setTimeout(() => {
      pacing.timer = undefined;
      const value = pacing.pending;
      pacing.pending = undefined;
      if (value === undefined) return;
      pacing.lastAt = this.now();
      // Written only while the task is live: a progress event never follows the terminal status.
      this.append(taskId, { kind: 'progress', data: JSON.stringify({ progress: value }) }).catch((err: unknown) => this.opts.logger.warn({ err, taskId }, 'writing a progress event failed'));
    }, Math.max(0, pacing.lastAt + PROGRESS_EVENT_SPACING_MS - now));
  }

  private stopPacing(taskId: string): void {
    clearTimeout(this.pacing.get(taskId)?.timer);
    this.pacing.delete(taskId);
  }

  /** Stops listening; callers still waiting are answered "still running". */
  close(): void {
    for (const taskId of [...this.pacing.keys()]) this.stopPacing(taskId);
    this.unsubscribe();
    for (const set of this.waiters.values()) for (const wake of [...set]) wake(undefined);
  }

  private wakeWaiters(event: TaskStatusEvent): void {
    if (!isTerminal(event.status)) return;
    for (const wake of [...(this.waiters.get(event.taskId) ?? [])]) wake(event.record);
  }

  /**
   * Publishes a stored version of the task with the stream events written with it; `record` is
   * its status record, built once for the outbox and the event.
   */
  private async announce(row: TaskRow, record: TaskStatusRecord, events: readonly TaskEventRow[]): Promise<void> {
    this.opts.observe?.(row);
    const event: TaskStatusEvent = { taskId: row.id, ownerId: row.owner_id, clientId: row.client_id, status: row.status, version: row.version, record, events: events.map(streamEventOf) };
    try {
      await this.bus.publish('task.status', event);
    } catch (err) {
      // The change is stored: readers, waiters' re-reads, callbacks and the event streams (from the table) still see it.
      this.opts.logger.error({ err, taskId: row.id }, 'publishing a task event failed');
    }
  }

  /**
   * The outbox entry announcing this version of the task, when a callback address is set and the
   * submit's callback_events take its status: what the outbox lacks, the dispatcher never sends.
   */
  private deliveryOf(row: TaskRow, record: TaskStatusRecord, now: number): CallbackDeliveryRow | undefined {
    if (!row.callback_url) return undefined;
    if (row.callback_events !== null && !(JSON.parse(row.callback_events) as string[]).includes(row.status)) return undefined;
    return {
      id: newId('msg'),
      task_id: row.id,
      seq: row.version,
      url: row.callback_url,
      body: JSON.stringify(record),
      state: 'pending',
      attempts: 0,
      next_attempt_at: now,
      lease_until: null,
      created_at: now,
      updated_at: now,
    };
  }
}

function alreadyFinished(row: TaskRow): ApiError {
  return new ApiError('task_already_finished', `task ${row.id} has already finished (${row.status})`, 'taskId', { task_id: row.id, status: row.status });
}

/**
 * The stream events a change of the task writes: on success each output item as stored, then
 * one status event per change of status; a progress event when the progress moved and is due.
 */
function eventsOf(before: TaskRow, after: TaskRow, record: TaskStatusRecord, progressDue: boolean): NewTaskEvent[] {
  const events: NewTaskEvent[] = [];
  if (after.status !== before.status) {
    if (after.status === 'success') for (const item of record.queue_status.output_content) events.push({ kind: 'output', data: JSON.stringify(item) });
    events.push({ kind: 'status', data: JSON.stringify(record) });
  }
  if (progressDue) events.push({ kind: 'progress', data: JSON.stringify({ progress: after.progress }) });
  return events;
}

function streamEventOf(row: TaskEventRow): TaskStreamEvent {
  return { seq: row.seq, kind: row.kind, data: row.data };
}
