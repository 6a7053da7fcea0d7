import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { SQLite } from '../src/storage/sqlite-driver.ts';
import { startTestServer } from './support/server.ts';

/** Longer than any pause of a loaded test machine, shorter than the time the lock is held. */
const STALL_MS = 1000;
const HELD_MS = 1500;

describe('SQLite store held by another writer', () => {
  it('keeps serving: the polls for tasks and callbacks that find nothing wait for no write lock', async () => {
    const srv = await startTestServer();
    // The ledger's writer thread, or any other connection, in a transaction that takes its time.
    const other = new SQLite(path.join(srv.dataDir, 'gengate.db'));
    const loop = monitorEventLoopDelay({ resolution: 10 });
    try {
      other.exec('BEGIN IMMEDIATE');
      loop.enable();
      // The task queue polls every 250 ms and the callback dispatcher every 500 ms: several of each go by.
      await delay(HELD_MS);
      const health = await srv.fetch('/healthz');
      loop.disable();
      assert.equal(health.status, 200);
      assert.ok(other.inTransaction, 'the lock was held throughout');
      // A poll that waited for the lock would have held the event loop until busy_timeout or the release.
      assert.ok(loop.max / 1e6 < STALL_MS, `the event loop stopped for ${(loop.max / 1e6).toFixed(0)} ms while another connection held the write lock`);
    } finally {
      if (other.inTransaction) other.exec('ROLLBACK');
      other.close();
      await srv.close();
    }
  });
});
