import { describe } from 'node:test';
import assert from 'node:assert/strict';
import type { Db } from '../src/storage/db.ts';
import { TasksRepo } from '../src/storage/repos/tasks-repo.ts';
import { itOnEachStore } from './support/server.ts';
import { taskRow } from './support/rows.ts';

const status = (text: string) => ({ kind: 'status', data: JSON.stringify({ status: text }) });

/**
 * Status changes queued in one turn of the event loop share a transaction (and on PostgreSQL one
 * statement): each still applies only to its task at its version, and says whether it did.
 */
async function compareAndSetHolds(db: Db): Promise<void> {
  const repo = new TasksRepo(db);
  await Promise.all(['a', 'b', 'c'].map((id) => repo.insert(taskRow(id), undefined, [{ task_id: id, seq: 1, kind: 'status', data: '{}', created_at: 1 }])));

  const [startA, endB, staleC, raceA1, raceA2] = await Promise.all([
    repo.update('a', 1, { status: 'started', started_at: 5, saved_state: '{"upstream":"x"}', updated_at: 5 }, undefined, [status('started')], 5),
    repo.update('b', 1, { status: 'success', progress: 100, finished_at: 6, result: '{"ok":true}', updated_at: 6 }, undefined, [status('success'), status('again')], 6),
    // Another writer changed c first (its version is 1): nothing is written.
    repo.update('c', 7, { status: 'failed', updated_at: 7 }, undefined, [status('failed')], 7),
    // Two more writers of a at the version all three read (on PostgreSQL these two share a statement).
    repo.update('a', 1, { status: 'cancelled', updated_at: 8 }, undefined, [status('cancelled')], 8),
    repo.update('a', 1, { status: 'failed', updated_at: 9 }, undefined, [status('failed')], 9),
  ]);
  // a had three writers at version 1: exactly one of them wrote.
  const aWinners = [startA, raceA1, raceA2].filter((written) => written !== undefined);
  assert.equal(aWinners.length, 1);
  assert.deepEqual(aWinners[0]!.map((e) => e.seq), [2]);
  assert.equal(staleC, undefined);
  assert.deepEqual(endB?.map((e) => [e.seq, e.kind]), [[2, 'status'], [3, 'status']]);

  const a = (await repo.find('a'))!;
  assert.equal(a.version, 2);
  assert.equal(a.event_seq, 2);
  const aStatus = startA ? 'started' : raceA1 ? 'cancelled' : 'failed';
  assert.equal(a.status, aStatus);
  // Only the winning change's columns: a start keeps its lease and saves its state; an end gives the lease back.
  assert.equal(a.saved_state, startA ? '{"upstream":"x"}' : null);
  assert.equal(a.lease_owner, aStatus === 'started' ? 'worker-a' : null);

  const b = (await repo.find('b'))!;
  assert.deepEqual([b.status, b.progress, b.version, b.event_seq, b.finished_at, b.result, b.lease_owner, b.lease_until], ['success', 100, 2, 3, 6, '{"ok":true}', null, null]);
  // Columns the change did not name are left as they were.
  assert.deepEqual([b.started_at, b.saved_state, b.request_id], [null, null, 'req-b']);

  const c = (await repo.find('c'))!;
  assert.deepEqual([c.status, c.version, c.event_seq], ['submitted', 1, 1]);
  assert.deepEqual((await repo.eventsAfter('b', 0, 10)).map((e) => e.seq), [1, 2, 3]);
  assert.deepEqual((await repo.eventsAfter('c', 0, 10)).map((e) => e.seq), [1]);
}

describe('task compare-and-set', () => {
  itOnEachStore('writes each change only at its version, several in one transaction', compareAndSetHolds);
});
