import { ApiError } from '../core/errors.ts';
import type { AgentsRepo } from '../storage/repos/agents-repo.ts';
import type { EventBus } from '../tasks/event-bus.ts';

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

function runKey(ownerId: string, requestId: string): string {
  return `${ownerId}\n${requestId}`;
}

function cancelled(requestId: string): ApiError {
  return new ApiError('request_cancelled', `request ${requestId} was cancelled`, 'requestId');
}

/**
 * The agent streams running on this instance and the deployment-wide record of them: a cancel
 * may arrive at any instance, which finds the run in the store (owner-scoped) and publishes
 * `agent.cancel`; the instance holding it aborts it. Approvals arrive the same way, as the
 * realtime gateway's `agent.approval` messages.
 */
export class AgentRuns {
  /** By owner and request id: request ids are the clients' own, so two users may use the same one. */
  private readonly running = new Map<string, AbortController>();
  private readonly unsubscribe: () => void;

  constructor(private readonly deps: { repo: AgentsRepo; bus: EventBus; instanceId: string }) {
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

  /**
   * Waits for the owner's `agent.approval {taskId, approved}` (from any instance's realtime
   * gateway); `timed_out` after `timeoutMs`; rejects with the signal's reason when it aborts.
   */
  waitForApproval(ownerId: string, taskId: string, timeoutMs: number, signal: AbortSignal): Promise<ApprovalOutcome> {
    return new Promise<ApprovalOutcome>((resolve, reject) => {
      const done = (settle: () => void) => {
        unsubscribe();
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        settle();
      };
      const onAbort = () => done(() => reject(signal.reason));
      const unsubscribe = this.deps.bus.subscribe('agent.approval', (message) => {
        if (message.taskId === taskId && message.userId === ownerId) done(() => resolve(message.approved ? 'approved' : 'rejected'));
      });
      const timer = setTimeout(() => done(() => resolve('timed_out')), timeoutMs);
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Aborts every run of this instance (shutdown) and stops listening. */
  close(reason: unknown): void {
    this.unsubscribe();
    for (const controller of this.running.values()) controller.abort(reason);
  }
}
