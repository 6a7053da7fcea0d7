import { describe } from 'node:test';
import assert from 'node:assert/strict';
import type { Db } from '../src/storage/db.ts';
import { insertsInto, ROWS_PER_INSERT } from '../src/storage/repos/inserts-into.ts';
import { itOnEachStore } from './support/server.ts';
import { taskRow } from './support/rows.ts';

const insertTasks = insertsInto('tasks');
const insertEvents = insertsInto('task_events');

/**
 * The multi-row insert the transactions' tails use: every row of a batch in as few statements as
 * the parameter limits allow, the columns any row gives, and nothing for a value a row leaves out.
 */
async function insertsHold(db: Db): Promise<void> {
  // b leaves out a column that a gives: b takes the column's default (it has none: null).
  await insertTasks(db.kysely, [{ ...taskRow('a'), message: 'hello' }, { ...taskRow('b'), message: undefined }]);
  // The same shape at the same count again, in a transaction: new values under the statement kept.
  await db.kysely.transaction().execute((trx) => insertTasks(trx, [{ ...taskRow('c'), message: 'third' }, { ...taskRow('d'), progress: 40 }]));
  const tasks = await db.kysely.selectFrom('tasks').select(['id', 'message', 'progress', 'input', 'lease_until']).orderBy('id').execute();
  assert.deepEqual(tasks, [
    { id: 'a', message: 'hello', progress: 0, input: '{}', lease_until: 9_999 },
    { id: 'b', message: null, progress: 0, input: '{}', lease_until: 9_999 },
    { id: 'c', message: 'third', progress: 0, input: '{}', lease_until: 9_999 },
    { id: 'd', message: null, progress: 40, input: '{}', lease_until: 9_999 },
  ]);

  // More rows than one statement takes: two statements, every row once.
  const events = Array.from({ length: ROWS_PER_INSERT + 1 }, (_, i) => ({ task_id: 'a', seq: i + 1, kind: 'status', data: `{"n":${i}}`, created_at: 1_000 + i }));
  await insertEvents(db.kysely, events);
  const stored = await db.kysely.selectFrom('task_events').select(['task_id', 'seq', 'kind', 'data', 'created_at']).where('task_id', '=', 'a').orderBy('seq').execute();
  assert.deepEqual(stored, events);
}

describe('multi-row inserts', () => {
  itOnEachStore('insert every row with the columns the rows give', insertsHold);
});
