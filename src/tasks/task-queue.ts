import type { TaskRow } from '../storage/schema.ts';

/** One claim on a task: the worker runs it while the claim holds. */
export interface TaskClaim {
  taskId: string;
  /** The task as the queue had it (read with the claim, or as submitted); a stale copy fails the run's first compare-and-set, which reads it. */
  row?: TaskRow;
  /** 1 on the first run; more when the task is taken over after its worker stalled or died. */
  attempt: number;
  /** Aborted when this process lost the claim (its lease went to another worker) or is shutting down. */
  signal: AbortSignal;
}

/**
 * Runs one claimed task; resolves when the worker is done with it: `ended` when the task is over
 * (its end gave the claim back), `live` when it stopped short (shutdown, claim lost).
 */
export type TaskHandler = (claim: TaskClaim) => Promise<'ended' | 'live'>;

/**
 * Where submitted tasks wait for a worker: the database by default, Redis (BullMQ) with
 * REDIS_URL. Both deliver each task to one worker at a time and hand the tasks of a
 * worker that died to another.
 */
export interface TaskQueue {
  /**
   * Makes a stored, submitted task runnable; a queue that cannot take it now (Redis away) queues
   * it later from the store, without failing. `task` is the row as stored.
   */
  enqueue(task: TaskRow): Promise<void>;
  /** Starts handing tasks to `handler`, at most `concurrency` at once. */
  start(handler: TaskHandler, concurrency: number): void;
  /** Stops taking tasks; running ones are aborted and handed back so they run again after a restart. */
  stop(): Promise<void>;
}
