import type { Logger } from 'pino';
import type { TasksRepo } from '../storage/repos/tasks-repo.ts';
import type { TaskHandler, TaskQueue } from './task-queue.ts';

export interface DbTaskQueueOptions {
  /** This process, as the holder of its leases. */
  instanceId: string;
  /** A claim lasts this long unless renewed; a dead worker's tasks are taken over after it. */
  leaseMs: number;
  /** How often an idle worker looks for tasks submitted through other processes. */
  pollMs?: number;
  logger: Logger;
  now?: () => number;
}

/**
 * The embedded queue: the tasks table itself. A worker claims live tasks by writing a lease
 * (compare-and-set in one UPDATE), renews its leases while running, and gives them back when
 * done; a task whose lease ran out is claimable again, which recovers stalled workers.
 */
export class DbTaskQueue implements TaskQueue {
  private readonly running = new Map<string, AbortController>();
  private handler: TaskHandler | undefined;
  private concurrency = 1;
  private stopped = true;
  private pumping = false;
  private wanted = false;
  private recoverWanted = false;
  private pollTimer: NodeJS.Timeout | undefined;
  private renewTimer: NodeJS.Timeout | undefined;
  private readonly settled = new Set<Promise<void>>();

  constructor(
    private readonly repo: TasksRepo,
    private readonly opts: DbTaskQueueOptions,
  ) {}

  private now(): number {
    return (this.opts.now ?? Date.now)();
  }

  async enqueue(_taskId: string): Promise<void> {
    // The stored task is already the queue entry; only wake the local workers.
    this.pump();
  }

  start(handler: TaskHandler, concurrency: number): void {
    this.handler = handler;
    this.concurrency = concurrency;
    this.stopped = false;
    const pollMs = this.opts.pollMs ?? 250;
    this.pollTimer = setInterval(() => this.pump(true), pollMs);
    this.renewTimer = setInterval(() => void this.renew(), Math.max(50, Math.floor(this.opts.leaseMs / 3)));
    this.pump(true);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.pollTimer);
    clearInterval(this.renewTimer);
    for (const controller of this.running.values()) controller.abort(new Error('the server is shutting down'));
    await Promise.allSettled([...this.settled]);
  }

  /**
   * Claims as many tasks as there are free workers, and runs again while it keeps finding work.
   * With `recover` (the poll) it first takes over tasks whose worker stalled or died and
   * unfinished ones handed back at a shutdown. One claim runs at a time, so the workers are
   * never over-filled; a wake-up during a claim gets one more round.
   */
  private pump(recover = false): void {
    if (this.stopped) return;
    this.wanted = true;
    if (recover) this.recoverWanted = true;
    if (this.pumping) return;
    this.pumping = true;
    void (async () => {
      try {
        while (this.wanted && !this.stopped) {
          this.wanted = false;
          const free = this.concurrency - this.running.size;
          if (free <= 0) break; // a finishing task pumps again
          const now = this.now();
          const leaseUntil = now + this.opts.leaseMs;
          let claimed: { id: string; attempts: number }[] = [];
          if (this.recoverWanted) {
            this.recoverWanted = false;
            claimed = await this.repo.claimAbandoned(this.opts.instanceId, free, now, leaseUntil);
          }
          if (claimed.length < free) claimed = claimed.concat(await this.repo.claimSubmitted(this.opts.instanceId, free - claimed.length, leaseUntil));
          for (const claim of claimed) this.run(claim.id, claim.attempts);
          if (claimed.length === free) this.wanted = true;
        }
      } catch (err) {
        this.opts.logger.error({ err }, 'claiming tasks failed');
      } finally {
        this.pumping = false;
      }
    })();
  }

  private run(taskId: string, attempt: number): void {
    const controller = new AbortController();
    this.running.set(taskId, controller);
    const done: Promise<void> = this.execute(taskId, attempt, controller).finally(() => {
      this.settled.delete(done);
      this.pump();
    });
    this.settled.add(done);
  }

  private async execute(taskId: string, attempt: number, controller: AbortController): Promise<void> {
    try {
      await this.handler!({ taskId, attempt, signal: controller.signal });
    } catch (err) {
      this.opts.logger.error({ err, taskId }, 'task handler failed');
    } finally {
      this.running.delete(taskId);
      // Handing the task back makes an unfinished one (shutdown) runnable at once elsewhere.
      await this.repo.release(this.opts.instanceId, taskId).catch((err: unknown) => this.opts.logger.warn({ err, taskId }, 'releasing a task failed'));
    }
  }

  private async renew(): Promise<void> {
    if (this.running.size === 0) return;
    try {
      const lost = await this.repo.renewLeases(this.opts.instanceId, [...this.running.keys()], this.now() + this.opts.leaseMs);
      for (const taskId of lost) this.running.get(taskId)?.abort(new Error('another worker took the task over'));
    } catch (err) {
      this.opts.logger.warn({ err }, 'renewing task leases failed');
    }
  }
}
