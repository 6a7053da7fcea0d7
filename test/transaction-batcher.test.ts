import { describe } from 'node:test';
import assert from 'node:assert/strict';
import type { Db } from '../src/storage/db.ts';
import { insertsInto } from '../src/storage/repos/inserts-into.ts';
import { TransactionBatcher } from '../src/storage/transaction-batcher.ts';
import { itOnEachStore } from './support/server.ts';

const appendBeats = insertsInto('worker_heartbeats');

async function beats(db: Db): Promise<string[]> {
  return (await db.kysely.selectFrom('worker_heartbeats').select('instance_id').orderBy('instance_id').execute()).map((r) => r.instance_id);
}

/** The batcher's promises on one store: what its works append lands before the commit, and an isolated failure fails alone. */
async function batcherHolds(db: Db): Promise<void> {
  const batcher = new TransactionBatcher(db.kysely);
  // Queued in one turn of the event loop: one batch.
  const plain = batcher.run(async (trx, tail) => {
    await trx.insertInto('worker_heartbeats').values({ instance_id: 'plain', alive_until: 1 }).execute();
    tail.append(appendBeats, [{ instance_id: 'plain-tail', alive_until: 1 }]);
    return 'plain';
  });
  const failing = batcher.runIsolated(async (trx, tail) => {
    await trx.insertInto('worker_heartbeats').values({ instance_id: 'failing', alive_until: 1 }).execute();
    tail.append(appendBeats, [{ instance_id: 'failing-tail', alive_until: 1 }]);
    throw new Error('this work fails');
  });
  const isolated = batcher.runIsolated(async (_trx, tail) => {
    tail.append(appendBeats, [{ instance_id: 'isolated-tail', alive_until: 1 }]);
    return 'isolated';
  });
  // A row appended twice to the tail by two works breaks the batch's insert: written apart, the second one alone fails.
  const duplicate = batcher.runIsolated(async (_trx, tail) => {
    tail.append(appendBeats, [{ instance_id: 'plain-tail', alive_until: 2 }]);
  });
  const outcomes = await Promise.allSettled([plain, failing, isolated, duplicate]);
  assert.deepEqual(outcomes.map((o) => o.status), ['fulfilled', 'rejected', 'fulfilled', 'rejected']);
  assert.equal((outcomes[1] as PromiseRejectedResult).reason.message, 'this work fails');
  assert.deepEqual(await beats(db), ['isolated-tail', 'plain', 'plain-tail']);
}

describe('transaction batcher', () => {
  itOnEachStore('writes the tail before the commit, and fails an isolated work alone', batcherHolds);
});
