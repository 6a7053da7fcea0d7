import { setTimeout as delay } from 'node:timers/promises';
import { backoffMs, type Backoff } from '../core/backoff.ts';

/** Socket errors of a server that is down or out of reach. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
/**
 * PostgreSQL's connection exceptions (class 08), a server shutting down (57P01 admin_shutdown,
 * 57P02 crash_shutdown) or starting (57P03 cannot_connect_now), and a server with no connection
 * left to give (53300).
 */
const SERVER_CODES = new Set(['08000', '08001', '08003', '08004', '08006', '57P01', '57P02', '57P03', '53300']);
/** What the pg driver says, without a code, of a connection that died or was never made. */
const DRIVER_MESSAGES = /^Connection terminated unexpectedly$|^Connection terminated due to connection timeout$|is not queryable$|^timeout exceeded when trying to connect$/;

/**
 * The database cannot be reached now (refused or lost connection, a server shutting down or
 * starting): a caller is told to come back (503) and background work tries again later, rather
 * than anything failing for good. Only the store's driver raises it, so a refused connection to
 * anything else is never taken for it.
 */
export class DatabaseUnavailableError extends Error {
  constructor(cause: Error) {
    super('the database is unavailable', { cause });
    this.name = 'DatabaseUnavailableError';
  }
}

function lostConnection(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const { code, message, errors } = err as { code?: unknown; message?: unknown; errors?: unknown };
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || SERVER_CODES.has(code))) return true;
  if (typeof message === 'string' && DRIVER_MESSAGES.test(message)) return true;
  // A connection tried on several addresses (IPv6 and IPv4) fails with all of them at once.
  return Array.isArray(errors) && errors.length > 0 && errors.every(lostConnection);
}

/** A driver's error as the store raises it: a DatabaseUnavailableError when it means the database is out of reach. */
export function asDatabaseUnavailable(err: unknown): unknown {
  return lostConnection(err) ? new DatabaseUnavailableError(err as Error) : err;
}

/** Whether an error (or what it was caused by) means the database is out of reach for now. */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e = err; e instanceof Error; e = e.cause) if (e instanceof DatabaseUnavailableError) return true;
  return false;
}

/**
 * Waits between tries while the database is away: short at first, then about once a second, so
 * work resumes within a second of its return.
 */
const RECONNECT_BACKOFF: Backoff = { baseDelayMs: 50, maxDelayMs: 1000 };

/**
 * Runs `work`, and again after a backoff as long as it fails for want of the database, until it
 * succeeds, fails otherwise, or `signal` aborts (the wait then rejects with the abort). For work
 * that must not be lost to an outage, such as recording what was already done outside.
 */
export async function retryWhileDatabaseUnavailable<T>(work: () => Promise<T>, opts: { signal?: AbortSignal; onRetry?: (err: unknown, attempt: number) => void } = {}): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (err) {
      if (!isDatabaseUnavailable(err) || opts.signal?.aborted) throw err;
      opts.onRetry?.(err, attempt);
      await delay(backoffMs(RECONNECT_BACKOFF, attempt - 1), undefined, { signal: opts.signal });
    }
  }
}

/**
 * A polling loop's pace through a database outage: after a round fails for want of the
 * database, the next rounds are spaced out with the same backoff as retries, so an outage costs
 * neither a query nor a log line per poll; the first round after the return resumes the pace.
 */
export class OutagePace {
  private failures = 0;
  private resumeAt = 0;

  /** Whether a round now would come too soon after the last failed one. */
  holding(now = Date.now()): boolean {
    return now < this.resumeAt;
  }

  /** Counts a failed round; answers whether the failure is worth a log line (not the database's absence again). */
  failed(err: unknown, now = Date.now()): boolean {
    if (!isDatabaseUnavailable(err)) return true;
    this.resumeAt = now + backoffMs(RECONNECT_BACKOFF, this.failures);
    return this.failures++ === 0;
  }

  /** Counts a round that worked: the pace is back to normal. */
  succeeded(): void {
    this.failures = 0;
    this.resumeAt = 0;
  }
}
