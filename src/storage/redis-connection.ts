import type { RedisOptions } from 'ioredis';
import { ApiError } from '../core/errors.ts';

/**
 * The longest wait between two reconnection attempts. ioredis's default grows to 2 s and
 * BullMQ's to 20 s; a Redis that is back must be found within about a second.
 */
export const REDIS_RETRY_MS = 1000;

/** Retry-After of a call refused because Redis did not answer: a reconnection is tried every second meanwhile. */
const UNAVAILABLE_RETRY_AFTER_S = 2;

/**
 * How every connection comes back after Redis went away: attempts every 100 ms, 200 ms, … up
 * to REDIS_RETRY_MS, each given `timeoutMs` to connect (a host that does not answer at all).
 */
export function reconnectingOptions(timeoutMs: number): { connectTimeout: number; retryStrategy: (attempt: number) => number } {
  return { connectTimeout: timeoutMs, retryStrategy: (attempt) => Math.min(attempt * 100, REDIS_RETRY_MS) };
}

/**
 * Options of a connection whose commands run while a caller waits (a submit, a limit check, an
 * event, /healthz): a command fails at once while the connection is down, and after `timeoutMs`
 * when Redis does not answer (stopped, overloaded), instead of waiting for Redis to come back.
 * A command that failed is not sent again after a reconnection: its caller has moved on.
 */
export function failFastOptions(timeoutMs: number): RedisOptions {
  return {
    ...reconnectingOptions(timeoutMs),
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    commandTimeout: timeoutMs,
  };
}

/**
 * The answer to a call that needs Redis when Redis does not answer: 503 service_unavailable,
 * with Retry-After. `what` says what could not be done ("the limits cannot be checked").
 */
export function redisUnavailable(what: string, cause: unknown): ApiError {
  const error = new ApiError('service_unavailable', `${what}: Redis did not answer; retry shortly`, null, {}, { 'retry-after': String(UNAVAILABLE_RETRY_AFTER_S) });
  error.cause = cause;
  return error;
}
