import { setTimeout as delay } from 'node:timers/promises';

/**
 * Polls `probe` until it answers something other than undefined (or false) and resolves with
 * that; fails after `timeoutMs` naming `what`. For state only readable by asking (records
 * over HTTP, Redis keys); events are awaited directly instead.
 */
export async function eventually<T>(what: string, probe: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await delay(25);
  }
}

/** `promise`, or a rejection naming `what` after `ms`: for an awaited event that may never come. */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
