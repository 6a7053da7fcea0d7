import type { Logger } from 'pino';
import type { TasksRepo } from '../storage/repos/tasks-repo.ts';
import type { TaskRow } from '../storage/schema.ts';
import type { TaskHandler, TaskQueue } from './task-queue.ts';
import { OutagePace } from '../storage/database-unavailable.ts';

export interface DbTaskQueueOptions {
  /** This process, as the holder of its leases. */
  instanceId: string;
  /** A claim lasts this long unless renewed; a stalled worker's tasks are taken over after it. */
  leaseMs: number;
  /**
   * How a dead holder is told apart. `sole`: no other process can use the store (embedded
   * SQLite, held by its lock), so the leases found at start are an earlier life's and are
   * taken back at once. `heartbeat`: the instances sharing the store each beat every
   * `intervalMs`; the tasks of one silent for `ttlMs` are taken over without waiting for
   * their leases.
   */
  liveness: { sole: true } | { sole: false; intervalMs: number; ttlMs: number };
  /** How often an idle worker looks for tasks submitted through other processes. */
  pollMs?: number;
  logger: Logger;
  now?: () => number;
}

/**
 * The embedded queue: the tasks table itself. A worker claims live tasks by writing a lease
 * (compare-and-set in one UPDATE), renews its leases while running, and gives them back when
 * done; a task whose lease ran out is claimable again, which recovers stalled workers. A dead
 * worker's tasks are freed sooner: at the restart of a sole process, or when its heartbeat lapses.
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
  private heartbeatTimer: NodeJS.Timeout | undefined;
  /** When this instance last beat; a longer silence than the TTL may have cost it its tasks. */
  private lastBeat = 0;
  /**
   * When a beat of this instance last failed. The store was out of reach then, likely for every
   * instance, whose heartbeats lapsed alike: none is taken for dead until each had a TTL to beat again.
   */
  private lastFailedBeat = -Infinity;
  /** Settles once the start's liveness step is done; no claim is made before it. */
  private started: Promise<void> = Promise.resolve();
  private readonly settled = new Set<Promise<void>>();
  private readonly claimPace = new OutagePace();

  private readonly repo: TasksRepo;
  private readonly opts: DbTaskQueueOptions;

  constructor(
    repo: TasksRepo,
    opts: DbTaskQueueOptions,
  ) {
    this.repo = repo;
    this.opts = opts;
  }

  private now(): number {
    return (this.opts.now ?? Date.now)();
  }

  async enqueue(_task: TaskRow): Promise<void> {
    // The stored task is already the queue entry; only wake the local workers.
    this.pump();
  }

  start(handler: TaskHandler, concurrency: number): void {
    this.handler = handler;
    this.concurrency = concurrency;
    this.stopped = false;
    const pollMs = this.opts.pollMs ?? 250;
    const liveness = this.opts.liveness;
    if (liveness.sole) {
      this.started = this.repo.releaseAllLeases().then(
        (n) => void (n > 0 && this.opts.logger.info({ tasks: n }, 'took back the tasks of the previous run')),
        (err: unknown) => this.opts.logger.error({ err }, 'taking back the tasks of the previous run failed'),
      );
    } else {
      // Beating before the first claim: a task is never held by an instance the others think dead.
      this.started = this.heartbeat();
      this.heartbeatTimer = setInterval(() => void this.heartbeat(), liveness.intervalMs);
    }
    this.pollTimer = setInterval(() => this.pump(true), pollMs);
    this.renewTimer = setInterval(() => void this.renew(), Math.max(50, Math.floor(this.opts.leaseMs / 3)));
    this.pump(true);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.pollTimer);
    clearInterval(this.renewTimer);
    clearInterval(this.heartbeatTimer);
    for (const controller of this.running.values()) controller.abort(new Error('the server is shutting down'));
    await Promise.allSettled([...this.settled]);
    if (!this.opts.liveness.sole) await this.repo.forgetHeartbeat(this.opts.instanceId).catch((err: unknown) => this.opts.logger.warn({ err }, 'removing the heartbeat failed'));
  }

  /**
   * Tells the other instances this one lives, then frees the tasks of those that went silent.
   * After a silence longer than the TTL (a frozen process) the leases are checked at once, so a
   * run another instance took over meanwhile stops now rather than at the next renewal.
   */
  private async heartbeat(): Promise<void> {
    if (this.opts.liveness.sole) return;
    const { ttlMs } = this.opts.liveness;
    const now = this.now();
    try {
      await this.repo.beat(this.opts.instanceId, now + ttlMs);
      const silent = this.lastBeat > 0 && now - this.lastBeat > ttlMs;
      this.lastBeat = now;
      if (silent) await this.renew();
      if (now - this.lastFailedBeat < ttlMs) return;
      const freed = await this.repo.releaseSilentHolders(now);
      if (freed > 0) {
        this.opts.logger.warn({ tasks: freed }, 'took over the tasks of an instance whose heartbeat stopped');
        this.pump(true);
      }
    } catch (err) {
      this.lastFailedBeat = now;
      this.opts.logger.warn({ err }, 'heartbeat failed');
    }
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
    if (this.pumping || this.claimPace.holding()) return;
    this.pumping = true;
    void (async () => {
      try {
        await this.started;
        while (this.wanted && !this.stopped) {
          this.wanted = false;
          const free = this.concurrency - this.running.size;
          if (free <= 0) break; // a finishing task pumps again
          const now = this.now();
          const leaseUntil = now + this.opts.leaseMs;
          let claimed: TaskRow[] = [];
          if (this.recoverWanted) {
            this.recoverWanted = false;
            claimed = await this.repo.claimAbandoned(this.opts.instanceId, free, now, leaseUntil);
          }
          if (claimed.length < free) claimed = claimed.concat(await this.repo.claimSubmitted(this.opts.instanceId, free - claimed.length, leaseUntil));
          for (const row of claimed) this.run(row);
          if (claimed.length === free) this.wanted = true;
        }
        this.claimPace.succeeded();
      } catch (err) {
        if (this.claimPace.failed(err)) this.opts.logger.error({ err }, 'claiming tasks failed');
      } finally {
        this.pumping = false;
      }
    })();
  }

  private run(row: TaskRow): void {
    const controller = new AbortController();
    this.running.set(row.id, controller);
    const done: Promise<void> = this.execute(row, controller).finally(() => {
      this.settled.delete(done);
      this.pump();
    });
    this.settled.add(done);
  }

  private async execute(row: TaskRow, controller: AbortController): Promise<void> {
    let outcome: 'ended' | 'live' = 'live';
    try {
      outcome = await this.handler!({ taskId: row.id, row, attempt: row.attempts, signal: controller.signal });
    } catch (err) {
      this.opts.logger.error({ err, taskId: row.id }, 'task handler failed');
    } finally {
      this.running.delete(row.id);
      // Handing the task back makes an unfinished one (shutdown) runnable at once elsewhere; an end gave it back already.
      if (outcome === 'live') await this.repo.release(this.opts.instanceId, row.id).catch((err: unknown) => this.opts.logger.warn({ err, taskId: row.id }, 'releasing a task failed'));
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
