import { setTimeout as delay } from 'node:timers/promises';
import { Queue, WaitingError, Worker, type Job } from 'bullmq';
import type { Logger } from 'pino';
import type { TasksRepo } from '../storage/repos/tasks-repo.ts';
import type { TaskHandler, TaskQueue } from './task-queue.ts';

export interface BullMqTaskQueueOptions {
  /** REDIS_URL. */
  redisUrl: string;
  /** REDIS_PREFIX: the queue's keys are `<prefix>:tasks:*`. */
  prefix: string;
  /** This process, as the name of its worker. */
  instanceId: string;
  /**
   * Each running job's lock is this worker's heartbeat: renewed every `intervalMs`, it expires
   * `ttlMs` after the last renewal, and the job is then handed to another worker.
   */
  heartbeat: { intervalMs: number; ttlMs: number };
  logger: Logger;
}

interface TaskJobData {
  taskId: string;
}

const QUEUE_NAME = 'tasks';
const JOB_NAME = 'task';
/** Stalls a job survives; above TaskRunner's attempt limit, so the runner decides when a task gives up. */
const MAX_STALLED_COUNT = 10;
/** How often live tasks of the database are queued again, in case one never reached Redis. */
const RECONCILE_MS = 60_000;
/** Live tasks queued per reconcile pass, oldest first; a larger backlog comes into reach as it drains. */
const RECONCILE_BATCH = 10_000;
/** How long stop() lets aborted runs wind down; one that ignores its signal is left to stall. */
const STOP_WAIT_MS = 5_000;

/**
 * The queue of a deployment with REDIS_URL (BullMQ). One job per task, its id the task id, so
 * adding a task twice is harmless. A running job's lock (a Redis key with a short TTL) is renewed
 * while its process lives; the jobs of a process that died stall within the TTL and are run again
 * by another worker, each run counted in
 * `attemptsStarted`. The database stays the truth: live tasks are queued again at start and
 * every minute, which covers a crash between storing a task and queueing it.
 */
export class BullMqTaskQueue implements TaskQueue {
  private readonly queue: Queue<TaskJobData>;
  private worker: Worker<TaskJobData> | undefined;
  private readonly running = new Map<string, AbortController>();
  private readonly settled = new Set<Promise<void>>();
  private reconcileTimer: NodeJS.Timeout | undefined;
  private reconciling: Promise<void> | undefined;

  constructor(
    private readonly repo: TasksRepo,
    private readonly opts: BullMqTaskQueueOptions,
  ) {
    this.queue = new Queue<TaskJobData>(QUEUE_NAME, {
      connection: { url: opts.redisUrl },
      prefix: opts.prefix,
      defaultJobOptions: { removeOnComplete: true, removeOnFail: true },
    });
    this.queue.on('error', (err) => opts.logger.warn({ err }, 'task queue connection error'));
  }

  async enqueue(taskId: string): Promise<void> {
    await this.queue.add(JOB_NAME, { taskId }, { jobId: taskId });
  }

  start(handler: TaskHandler, concurrency: number): void {
    const log = this.opts.logger;
    const worker = new Worker<TaskJobData>(QUEUE_NAME, (job) => this.process(handler, job), {
      connection: { url: this.opts.redisUrl },
      prefix: this.opts.prefix,
      name: this.opts.instanceId,
      concurrency,
      lockDuration: this.opts.heartbeat.ttlMs,
      lockRenewTime: this.opts.heartbeat.intervalMs,
      // Checked (by one worker of the deployment at a time) at every beat, so a dead worker's
      // tasks move on within a TTL and a beat; a frozen one keeps them for TTL minus a beat.
      stalledInterval: this.opts.heartbeat.intervalMs,
      maxStalledCount: MAX_STALLED_COUNT,
    });
    worker.on('error', (err) => log.warn({ err }, 'task worker error'));
    worker.on('failed', (job, err) => log.warn({ err, taskId: job?.id }, 'task job failed'));
    // Another worker may already run it; this run must stop without touching the task.
    worker.on('lockRenewalFailed', (ids) => {
      for (const id of ids) this.running.get(id)?.abort(new Error('another worker took the task over'));
    });
    this.worker = worker;
    const reconcile = () => {
      this.reconciling ??= this.reconcile().finally(() => (this.reconciling = undefined));
    };
    reconcile();
    this.reconcileTimer = setInterval(reconcile, RECONCILE_MS);
    this.reconcileTimer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.reconcileTimer);
    // Forced: the worker stops fetching and does not wait for its jobs, whose locks then lapse.
    const closing = this.worker?.close(true);
    for (const controller of this.running.values()) controller.abort(new Error('the server is shutting down'));
    await Promise.race([Promise.allSettled([...this.settled]), delay(STOP_WAIT_MS, undefined, { ref: false })]);
    await closing;
    await this.reconciling;
    await this.queue.close();
  }

  private async process(handler: TaskHandler, job: Job<TaskJobData>): Promise<void> {
    const taskId = job.data.taskId;
    const controller = new AbortController();
    this.running.set(taskId, controller);
    const run = handler({ taskId, attempt: Math.max(1, job.attemptsStarted), signal: controller.signal });
    const done = run.then(
      () => undefined,
      () => undefined,
    );
    this.settled.add(done);
    try {
      await run;
    } catch (err) {
      if (!controller.signal.aborted) throw err;
    } finally {
      this.running.delete(taskId);
      this.settled.delete(done);
    }
    // Stopped or taken over: the job must be neither completed nor failed. BullMQ leaves a job
    // as it is after a WaitingError, so it stalls and runs again (with its new holder, or after a restart).
    if (controller.signal.aborted) throw new WaitingError('handed back');
  }

  /** Queues every live task of the database; jobs that exist already are left as they are. */
  private async reconcile(): Promise<void> {
    try {
      const ids = await this.repo.liveIds(Date.now(), RECONCILE_BATCH);
      if (ids.length === 0) return;
      await this.queue.addBulk(ids.map((taskId) => ({ name: JOB_NAME, data: { taskId }, opts: { jobId: taskId } })));
    } catch (err) {
      this.opts.logger.warn({ err }, 're-queueing live tasks failed');
    }
  }
}
