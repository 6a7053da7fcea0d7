/**
 * The one mechanism that reacts to a task's end. A domain registers an end handler for its
 * endpoints (TaskService.onEnd); when a task reaches a terminal status (success, failed,
 * rejected, cancelled) every matching handler prepares its work before the transaction (blob
 * bytes, hashes, changes to the result) and writes its rows inside the transaction that writes
 * the terminal status: the end and everything the handlers record are stored together or not
 * at all.
 */
import type { Logger } from 'pino';
import type { TaskStatus } from '../core/task-state.ts';
import type { GenerationOutput } from '../providers/spec.ts';
import type { DbHandle } from '../storage/db-handle.ts';
import type { TaskRow } from '../storage/schema.ts';
import type { TaskResult } from './task-record.ts';

/** A task reaching its terminal status, as end handlers see it. */
export interface TaskEnding {
  /** The task as stored before this end: owner, endpoint, input, saved state. */
  readonly task: TaskRow;
  /** The terminal status being written. */
  readonly status: TaskStatus;
  /** What the engine produced; only on success. */
  readonly output?: GenerationOutput;
  /** The result the end writes. Handlers may add to it (output items, extra); later handlers see their additions. */
  result: TaskResult;
  /** Epoch ms when a successful task's outputs expire (OUTPUT_RETENTION_DAYS); undefined: they are kept for good. */
  readonly outputsExpireAt?: number;
}

/** What a handler does inside the transaction that ends the task. */
export interface EndWork {
  /**
   * Writes the handler's rows through `db`, the transaction; throwing rolls the whole end back.
   * Only `db` may be used here: on SQLite the transaction holds the one connection, so a query
   * through the pool would wait for it forever.
   */
  write(db: DbHandle): Promise<void>;
  /** Called once the end is committed. */
  written?(): void;
  /**
   * Called instead when the end is not written (the task ended otherwise meanwhile, or a write
   * failed): drops what the handler stored before the transaction, such as blob bytes.
   */
  abandon?(): Promise<void>;
}

/**
 * Reacts to a task's end. Called before the transaction, once per end (not per compare-and-set
 * retry): do the slow work here and answer the rows to write, or nothing.
 */
export type EndHandler = (ending: TaskEnding) => Promise<EndWork | undefined>;

/** Which tasks a handler is for: an endpoint, a list of them, or a test of the endpoint. */
export type EndpointMatch = string | readonly string[] | ((endpoint: string) => boolean);

/** The work of every handler for one end, written as one. */
export interface PreparedEnd {
  write(db: DbHandle): Promise<void>;
  written(): void;
  abandon(): Promise<void>;
}

function matches(match: EndpointMatch, endpoint: string): boolean {
  if (typeof match === 'string') return match === endpoint;
  if (typeof match === 'function') return match(endpoint);
  return match.includes(endpoint);
}

/** The registered end handlers, run in the order they were registered. */
export class TaskEndings {
  private readonly handlers: { match: EndpointMatch; handler: EndHandler }[] = [];

  private readonly logger: Logger;

  constructor(logger: Logger) {
    this.logger = logger;
  }

  on(match: EndpointMatch, handler: EndHandler): void {
    this.handlers.push({ match, handler });
  }

  /**
   * Runs the matching handlers' preparation in order; when one throws, what the earlier ones
   * stored is abandoned and the error passed on. Undefined when no handler has rows to write.
   */
  async prepare(ending: TaskEnding): Promise<PreparedEnd | undefined> {
    const works: EndWork[] = [];
    // Best effort: what is left behind is unreferenced bytes, and the end's own outcome matters more.
    const abandonAll = async () => {
      for (const work of works) await work.abandon?.().catch((err: unknown) => this.logger.warn({ err, taskId: ending.task.id }, 'dropping what an end handler stored failed'));
    };
    try {
      for (const { match, handler } of this.handlers) {
        if (!matches(match, ending.task.endpoint)) continue;
        const work = await handler(ending);
        if (work) works.push(work);
      }
    } catch (err) {
      await abandonAll();
      throw err;
    }
    if (works.length === 0) return undefined;
    return {
      write: async (db) => {
        for (const work of works) await work.write(db);
      },
      written: () => {
        for (const work of works) work.written?.();
      },
      abandon: abandonAll,
    };
  }
}
