/**
 * What a failed call on a channel means for routing: try another channel (the upstream did not
 * take the work: unreachable, timed out, 429, 5xx), disable the channel (401/403: its key is
 * refused) and try another, or stop (a refusal of the request or its content, or work an upstream
 * accepted).
 */
import { ApiError, UpstreamApiError } from '../core/errors.ts';
import { AcceptedWorkError } from '../providers/spec.ts';
import { UpstreamError } from '../providers/upstream-client.ts';

export type FailureKind = 'retry' | 'disable' | 'final';

export interface Failure {
  kind: FailureKind;
  /** What went wrong, as the routing record lists it. */
  message: string;
}

/** Upstream statuses that say the work was not taken and another channel may take it. */
function statusKind(status: number | undefined): FailureKind {
  if (status === undefined || status === 408 || status === 429 || status >= 500) return 'retry';
  if (status === 401 || status === 403) return 'disable';
  return 'final';
}

/** Codes of upstream failures that carry no status (a broken stream, a timeout). */
const UPSTREAM_CODES = new Set(['upstream_error', 'upstream_timeout', 'rate_limited']);

export function classifyFailure(err: unknown): Failure {
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof AcceptedWorkError) return { kind: err.upstreamFault ? 'retry' : 'final', message };
  if (err instanceof UpstreamError) return { kind: statusKind(err.status), message };
  if (err instanceof UpstreamApiError) return { kind: statusKind(err.upstreamStatus), message };
  if (err instanceof ApiError && UPSTREAM_CODES.has(err.code)) return { kind: 'retry', message };
  return { kind: 'final', message };
}
