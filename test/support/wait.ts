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
