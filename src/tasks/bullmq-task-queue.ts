import { setTimeout as delay } from 'node:timers/promises';
import { Queue, WaitingError, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { failFastOptions, reconnectingOptions, REDIS_RETRY_MS } from '../storage/redis-connection.ts';
import type { TasksRepo } from '../storage/repos/tasks-repo.ts';
import type { TaskRow } from '../storage/schema.ts';
import type { TaskHandler, TaskQueue } from './task-queue.ts';

export interface BullMqTaskQueueOptions {
  /** REDIS_URL. */
  redisUrl: string;
  /** REDIS_PREFIX: the queue's keys are `<prefix>:tasks:*`. */
  prefix: string;
  /** REDIS_TIMEOUT_MS: queueing a task gives up after this long; the task is queued later. */
  timeoutMs: number;
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
  /**
   * The task as submitted, so its first run need not read it: while it waits only a cancel or a
   * deadline changes it, and the first write of the run (compare-and-set on the version) finds
   * that out and reads it. Absent on jobs queued from the store and for large inputs.
   */
  row?: TaskRow;
}

/** A task this process runs. */
interface Run {
  controller: AbortController;
  /** Resolves when the run is over: true when it stopped short (shutdown, taken over) and the task is handed back. */
  over: Promise<boolean>;
}

const QUEUE_NAME = 'tasks';
const JOB_NAME = 'task';
/** Stalls a job survives; above TaskRunner's attempt limit, so the runner decides when a task gives up. */
const MAX_STALLED_COUNT = 10;
/** How often live tasks of the database are queued again, in case one never reached Redis. */
const RECONCILE_MS = 60_000;
/** Live tasks queued per reconcile pass, oldest first; a larger backlog comes into reach as it drains. */
const RECONCILE_BATCH = 10_000;
/** Inputs longer than this (characters of JSON) stay out of Redis: the run reads its task from the store. */
const MAX_JOB_INPUT_CHARS = 64 * 1024;
/** How stop() lets aborted runs wind down; one that ignores its signal is left to stall. */
const STOP_WAIT_MS = 5_000;

/**
 * The queue of a deployment with REDIS_URL (BullMQ). One job per task, its id the task id, so
 * adding a task twice is harmless. A running job's lock (a Redis key with a short TTL) is renewed
 * while its process lives; the jobs of a process that died stall within the TTL and are run again
 * by another worker, each run counted in `attemptsStarted`.
 *
 * The database stays the truth: live tasks are queued again at start, every minute, each time
 * Redis is back after a disconnection (it may have restarted empty), and after a task could not be
 * queued (until a pass succeeds). A submit therefore never waits for Redis longer than
 * REDIS_TIMEOUT_MS, and a task of a job Redis lost runs on: a worker that gets the task's new job
 * while it runs the task lets that job stand for the run it has.
 */
export class BullMqTaskQueue implements TaskQueue {
  private readonly redis: Redis;
  private readonly queue: Queue<TaskJobData>;
  private worker: Worker<TaskJobData> | undefined;
  private readonly runs = new Map<string, Run>();
  private reconcileTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  /** The reconcile passes, one after the other: a pass asked for always starts after the ask. */
  private reconciling: Promise<boolean> = Promise.resolve(true);
  private stopped = false;

  private readonly repo: TasksRepo;
  private readonly opts: BullMqTaskQueueOptions;

  constructor(
    repo: TasksRepo,
    opts: BullMqTaskQueueOptions,
  ) {
    this.repo = repo;
    this.opts = opts;
    // The producer's commands run while a caller waits: they fail fast instead of waiting for Redis.
    this.redis = new Redis(opts.redisUrl, failFastOptions(opts.timeoutMs));
    this.queue = new Queue<TaskJobData>(QUEUE_NAME, {
      connection: this.redis,
      prefix: opts.prefix,
      defaultJobOptions: { removeOnComplete: true, removeOnFail: true },
    });
    this.queue.on('error', (err) => opts.logger.warn({ err }, 'task queue connection error'));
    // Back after a disconnection (Redis restarted, perhaps empty): jobs lost or never queued meanwhile are queued again.
    let connectedBefore = false;
    this.redis.on('ready', () => {
      if (connectedBefore) void this.reconcile();
      connectedBefore = true;
    });
  }

  async enqueue(task: TaskRow): Promise<void> {
    const taskId = task.id;
    try {
      await this.queue.add(JOB_NAME, task.input.length <= MAX_JOB_INPUT_CHARS ? { taskId, row: task } : { taskId }, { jobId: taskId });
    } catch (err) {
      // The task is stored as submitted: a reconcile pass queues it once Redis answers again.
      this.opts.logger.warn({ err, taskId }, 'queueing a task failed; it is queued once Redis answers');
      this.retryReconcile();
    }
  }

  start(handler: TaskHandler, concurrency: number): void {
    const log = this.opts.logger;
    const worker = new Worker<TaskJobData>(QUEUE_NAME, (job) => this.process(handler, job), {
      // BullMQ's own connections wait for Redis (it needs maxRetriesPerRequest null) but find it again within a second.
      connection: { url: this.opts.redisUrl, ...reconnectingOptions(this.opts.timeoutMs) },
      prefix: this.opts.prefix,
      name: this.opts.instanceId,
      concurrency,
      lockDuration: this.opts.heartbeat.ttlMs,
      lockRenewTime: this.opts.heartbeat.intervalMs,
      // Checked (by one worker of the deployment at a time) at every beat, so a dead worker's
      // tasks move on within a TTL and a beat; a frozen one keeps them for TTL minus a beat.
      stalledInterval: this.opts.heartbeat.intervalMs,
      maxStalledCount: MAX_STALLED_COUNT,
      // BullMQ waits 15 s before fetching again after Redis failed a fetch.
      runRetryDelay: REDIS_RETRY_MS,
    });
    worker.on('error', (err) => log.warn({ err }, 'task worker error'));
    worker.on('failed', (job, err) => log.warn({ err, taskId: job?.id }, 'task job failed'));
    worker.on('lockRenewalFailed', (ids) => void this.stopTakenOver(ids));
    this.worker = worker;
    void this.reconcile();
    this.reconcileTimer = setInterval(() => void this.reconcile(), RECONCILE_MS);
    this.reconcileTimer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.reconcileTimer);
    clearTimeout(this.retryTimer);
    // Forced: the worker stops fetching and does not wait for its jobs, whose locks then lapse.
    const closing = this.worker?.close(true);
    const runs = [...this.runs.values()];
    for (const run of runs) run.controller.abort(new Error('the server is shutting down'));
    await Promise.race([Promise.allSettled(runs.map((r) => r.over)), delay(STOP_WAIT_MS, undefined, { ref: false })]);
    await closing;
    await this.reconciling;
    await this.queue.close();
    await this.redis.quit().catch(() => this.redis.disconnect());
  }

  private async process(handler: TaskHandler, job: Job<TaskJobData>): Promise<void> {
    const taskId = job.data.taskId;
    const current = this.runs.get(taskId);
    if (current) {
      // The task was queued again while this process runs it (Redis lost its job): this job now
      // stands for that run, which goes on undisturbed, and ends with it.
      if (await current.over) throw new WaitingError('handed back');
      return;
    }
    const controller = new AbortController();
    let over!: (handedBack: boolean) => void;
    this.runs.set(taskId, { controller, over: new Promise((resolve) => (over = resolve)) });
    try {
      const attempt = Math.max(1, job.attemptsStarted);
      // A later run (the job stalled) reads the task: the earlier one changed it.
      await handler({ taskId, ...(attempt === 1 && job.data.row ? { row: job.data.row } : {}), attempt, signal: controller.signal });
    } catch (err) {
      if (!controller.signal.aborted) throw err;
    } finally {
      this.runs.delete(taskId);
      over(controller.signal.aborted);
    }
    // Stopped or taken over: the job must be neither completed nor failed. BullMQ leaves a job
    // as it is after a WaitingError, so it stalls and runs again (with its new holder, or after a restart).
    if (controller.signal.aborted) throw new WaitingError('handed back');
  }

  /**
   * Runs whose job lock could not be renewed stop when another worker holds the job now: it runs
   * the task. A job without a lock (Redis lost it, or it waits to be fetched again) is nobody
   * else's, and the run goes on. A lock of this worker (its tokens are `<worker id>:<n>`) is the
   * run's own job or the task's job queued again and fetched here, which joins the run (perhaps a
   * moment after this read).
   */
  private async stopTakenOver(ids: string[]): Promise<void> {
    const ownTokens = `${this.worker?.id}:`;
    for (const id of ids) {
      const run = this.runs.get(id);
      if (!run) continue;
      try {
        const holder = await this.redis.get(`${this.queue.toKey(id)}:lock`);
        if (holder !== null && !holder.startsWith(ownTokens)) run.controller.abort(new Error('another worker took the task over'));
      } catch (err) {
        // The next renewal asks again.
        this.opts.logger.warn({ err, taskId: id }, 'reading the holder of a task job failed');
      }
    }
  }

  /** Reconciles every REDIS_RETRY_MS until a pass succeeds. */
  private retryReconcile(): void {
    if (this.retryTimer || this.stopped) return;
    this.retryTimer = setTimeout(() => {
      void this.reconcile().then((done) => {
        this.retryTimer = undefined;
        if (!done) this.retryReconcile();
      });
    }, REDIS_RETRY_MS);
    this.retryTimer.unref();
  }

  /** Queues a pass after the ones under way; resolves with whether it queued every live task it read. */
  private reconcile(): Promise<boolean> {
    this.reconciling = this.reconciling.then(() => this.queueLiveTasks());
    return this.reconciling;
  }

  /** Queues every live task of the database; jobs that exist already are left as they are. */
  private async queueLiveTasks(): Promise<boolean> {
    if (this.stopped) return true;
    try {
      const ids = await this.repo.liveIds(Date.now(), RECONCILE_BATCH);
      if (ids.length > 0) await this.queue.addBulk(ids.map((taskId) => ({ name: JOB_NAME, data: { taskId }, opts: { jobId: taskId } })));
      return true;
    } catch (err) {
      this.opts.logger.warn({ err }, 're-queueing live tasks failed');
      return false;
    }
  }
}
