import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { newId, newUuid } from '../../src/core/ids.ts';

const UUID_V7 = /^([0-9a-f]{8})-([0-9a-f]{4})-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('ids', () => {
  it('are UUIDv7 carrying the millisecond they were made in, unique', () => {
    const before = Date.now();
    const ids = Array.from({ length: 20_000 }, newUuid);
    const after = Date.now();
    assert.equal(new Set(ids).size, ids.length);
    for (const id of ids) {
      const [, high, low] = UUID_V7.exec(id) ?? assert.fail(`not a UUIDv7: ${id}`);
      const at = parseInt(`${high}${low}`, 16);
      assert.ok(at >= before && at <= after, `${id} carries ${at}, made between ${before} and ${after}`);
    }
  });

  it('sort by the time they were made, prefixed or not', async () => {
    const first = [newUuid(), newId('task')] as const;
    await delay(3);
    const second = [newUuid(), newId('task')] as const;
    assert.ok(first[0] < second[0], `${first[0]} before ${second[0]}`);
    assert.ok(first[1] < second[1], `${first[1]} before ${second[1]}`);
    assert.match(second[1], /^task_[0-9a-f]{12}7[0-9a-f]{19}$/);
  });
});
