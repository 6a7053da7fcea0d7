/** Delays between the tries of something that failed for a while: doubling from the base, capped. */
export interface Backoff {
  baseDelayMs: number;
  maxDelayMs: number;
}

/** Exponential backoff with full jitter, capped: the wait before try `attempt + 1`. */
export function backoffMs(backoff: Backoff, attempt: number): number {
  const ceiling = Math.min(backoff.maxDelayMs, backoff.baseDelayMs * 2 ** attempt);
  return Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
}
