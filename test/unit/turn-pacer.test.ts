import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { TurnPacer } from '../../src/core/turn-pacer.ts';

const BUDGET_MS = 10;

/** A pacer on a clock the test moves, and the calls that went on, in order. */
function pacer() {
  let now = 0;
  const started: string[] = [];
  const pacing = new TurnPacer(BUDGET_MS, () => now);
  /** A call arriving now whose setup takes `setupMs` once it goes on (the clock moves by it). */
  const call = (name: string, setupMs: number): Promise<void> => {
    const run = () => {
      started.push(name);
      now += setupMs;
    };
    const turn = pacing.enter();
    if (!turn) {
      run();
      return Promise.resolve();
    }
    // The setup runs in the released call's own continuation, as a route's does.
    return turn.then(run);
  };
  return { pacing, started, call, advance: (ms: number) => void (now += ms) };
}

describe('turn pacer', () => {
  it('lets calls go on at once while the turn is short and nobody waits', async () => {
    const { pacing, started, call } = pacer();
    for (const name of ['a', 'b', 'c']) await call(name, 2);
    assert.deepEqual(started, ['a', 'b', 'c']);
    assert.equal(pacing.waiting, 0);
  });

  it('holds the calls of a burst once the turn used its budget, and lets them go in arrival order, a turn\'s budget at a time', async () => {
    const { pacing, started, call } = pacer();
    // A burst: nine calls of 4 ms arrive in one turn.
    const calls = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i'].map((name) => call(name, 4));
    // 0, 4 and 8 ms into the turn: three went on; at 12 ms the budget is spent.
    assert.deepEqual(started, ['a', 'b', 'c']);
    assert.equal(pacing.waiting, 6);

    await nextTurn();
    await new Promise((resolve) => process.nextTick(resolve));
    // The next turn lets waiting calls go on while its own 10 ms last: three of 4 ms each.
    assert.deepEqual(started, ['a', 'b', 'c', 'd', 'e', 'f']);
    assert.equal(pacing.waiting, 3);

    await Promise.all(calls);
    assert.deepEqual(started, ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i']);
    assert.equal(pacing.waiting, 0);
  });

  it('queues a newcomer behind those already waiting, even in a turn with time left', async () => {
    const { started, call, advance } = pacer();
    void call('a', 12);
    const waiting = call('b', 1);
    assert.deepEqual(started, ['a']);
    const late = call('c', 1);
    await Promise.all([waiting, late]);
    assert.deepEqual(started, ['a', 'b', 'c']);

    // Once the backlog is gone and a turn has passed, a call goes on at once again.
    await nextTurn();
    advance(100);
    await nextTurn();
    const before = started.length;
    void call('d', 1);
    assert.equal(started.length, before + 1);
  });
});
