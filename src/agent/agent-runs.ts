import { ApiError } from '../core/errors.ts';
import { newId } from '../core/ids.ts';
import type { AgentsRepo } from '../storage/repos/agents-repo.ts';
import type { AgentApprovalStatus } from '../storage/schema.ts';
import type { EventBus } from '../storage/event-bus.ts';

/** A running agent stream as the instance holding it keeps it. */
export interface RunHandle {
  /** Aborted by POST /v1/responses/cancel (reason: ApiError request_cancelled), the client leaving, or shutdown. */
  readonly signal: AbortSignal;
  abort(reason: unknown): void;
  /** Forgets the run; called once, when its stream has ended. */
  finish(): Promise<void>;
}

/** How an approval request ended. */
export type ApprovalOutcome = 'approved' | 'rejected' | 'timed_out';

/** What became of a user's agent.approval: the run got it, the approval was settled before, or there is no such approval of the user. */
export type ApprovalAnswer = 'accepted' | 'settled' | 'unknown';

/** An approval a run asked for, recorded so that every instance can tell it is awaited. */
export interface PendingApproval {
  /** What the client answers with (the approval item's taskId). */
  readonly taskId: string;
  /** Waits for the owner's answer; `timed_out` after `timeoutMs`; rejects with the signal's reason when it aborts. */
  outcome(timeoutMs: number, signal: AbortSignal): Promise<ApprovalOutcome>;
}

function outcomeOf(status: AgentApprovalStatus): ApprovalOutcome | undefined {
  return status === 'pending' ? undefined : status;
}

function runKey(ownerId: string, requestId: string): string {
  return `${ownerId}\n${requestId}`;
}

function cancelled(requestId: string): ApiError {
  return new ApiError('request_cancelled', `request ${requestId} was cancelled`, 'requestId');
}

/**
 * The agent streams running on this instance and the deployment-wide record of them: a cancel
 * may arrive at any instance, which finds the run in the store (owner-scoped) and publishes
 * `agent.cancel`; the instance holding it aborts it. Approvals are recorded in the store too:
 * the realtime gateway of any instance settles one there and publishes `agent.approval`.
 */
export class AgentRuns {
  /** By owner and request id: request ids are the clients' own, so two users may use the same one. */
  private readonly running = new Map<string, AbortController>();
  private readonly unsubscribe: () => void;

  private readonly deps: { repo: AgentsRepo; bus: EventBus; instanceId: string };

  constructor(deps: { repo: AgentsRepo; bus: EventBus; instanceId: string }) {
    this.deps = deps;
    this.unsubscribe = deps.bus.subscribe('agent.cancel', ({ requestId, ownerId }) => {
      this.running.get(runKey(ownerId, requestId))?.abort(cancelled(requestId));
    });
  }

  /** Forgets runs this instance left in the store when it last stopped. */
  async clearStale(): Promise<void> {
    await this.deps.repo.clearRuns(this.deps.instanceId);
  }

  /** Registers a run; 409 when the owner already runs a stream with this request id. */
  async start(ownerId: string, requestId: string): Promise<RunHandle> {
    if (!(await this.deps.repo.startRun(ownerId, requestId, this.deps.instanceId))) {
      throw new ApiError('request_already_running', `a response with requestId ${requestId} is still running`, 'requestId');
    }
    const controller = new AbortController();
    const key = runKey(ownerId, requestId);
    this.running.set(key, controller);
    let finished = false;
    return {
      signal: controller.signal,
      abort: (reason) => controller.abort(reason),
      finish: async () => {
        if (finished) return;
        finished = true;
        if (this.running.get(key) === controller) this.running.delete(key);
        await this.deps.repo.finishRun(ownerId, requestId);
      },
    };
  }

  /** Asks whoever holds the owner's run to stop it; false when no such run is going on. */
  async cancel(ownerId: string, requestId: string): Promise<boolean> {
    if (!(await this.deps.repo.runExists(ownerId, requestId))) return false;
    await this.deps.bus.publish('agent.cancel', { requestId, ownerId });
    return true;
  }

  /** Records that the owner's run waits for an approval; the item asking for it may go out once this resolves. */
  async requestApproval(ownerId: string, requestId: string): Promise<PendingApproval> {
    const taskId = newId('approval');
    await this.deps.repo.insertApproval({ id: taskId, owner_id: ownerId, request_id: requestId, instance_id: this.deps.instanceId, status: 'pending', created_at: Date.now() });
    return { taskId, outcome: (timeoutMs, signal) => this.waitForApproval(ownerId, taskId, timeoutMs, signal) };
  }

  /**
   * The owner's agent.approval, from any instance's realtime gateway: a pending approval is
   * settled in the store, then the instance holding the run hears of it through the bus.
   */
  async answerApproval(ownerId: string, taskId: string, approved: boolean): Promise<ApprovalAnswer> {
    if (await this.deps.repo.settleApproval(ownerId, taskId, approved ? 'approved' : 'rejected')) {
      await this.deps.bus.publish('agent.approval', { taskId, userId: ownerId, approved });
      return 'accepted';
    }
    return (await this.deps.repo.findApproval(ownerId, taskId)) ? 'settled' : 'unknown';
  }

  private waitForApproval(ownerId: string, taskId: string, timeoutMs: number, signal: AbortSignal): Promise<ApprovalOutcome> {
    return new Promise<ApprovalOutcome>((resolve, reject) => {
      let ended = false;
      const done = (settle: () => void) => {
        if (ended) return;
        ended = true;
        unsubscribe();
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        settle();
      };
      const onAbort = () => done(() => reject(signal.reason));
      const unsubscribe = this.deps.bus.subscribe('agent.approval', (message) => {
        if (message.taskId === taskId && message.userId === ownerId) done(() => resolve(message.approved ? 'approved' : 'rejected'));
      });
      // The store decides a timeout: an answer settled just before it counts, its message still on the way.
      const timer = setTimeout(() => done(() => this.settleTimeout(ownerId, taskId).then(resolve, reject)), timeoutMs);
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
      // An answer settled before this wait began is only in the store.
      this.deps.repo.findApproval(ownerId, taskId).then((row) => {
        const outcome = row && outcomeOf(row.status);
        if (outcome) done(() => resolve(outcome));
      }, (err: unknown) => done(() => reject(err)));
    });
  }

  private async settleTimeout(ownerId: string, taskId: string): Promise<ApprovalOutcome> {
    if (await this.deps.repo.settleApproval(ownerId, taskId, 'timed_out')) return 'timed_out';
    const row = await this.deps.repo.findApproval(ownerId, taskId);
    return (row && outcomeOf(row.status)) ?? 'timed_out';
  }

  /** Aborts every run of this instance (shutdown) and stops listening. */
  close(reason: unknown): void {
    this.unsubscribe();
    for (const controller of this.running.values()) controller.abort(reason);
  }
}
