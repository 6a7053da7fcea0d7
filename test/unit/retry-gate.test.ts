import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { gatedSignal, mayRetry, type RetryGate } from '../../src/providers/retry-gate.ts';
import { followingSignal } from '../../src/core/following-signal.ts';

const failure = new Error('upstream answered HTTP 503');

/** A gate that allows `tries` more sends, counting the questions. */
function gate(tries: number): RetryGate & { asked: number } {
  return {
    asked: 0,
    again() {
      this.asked++;
      return tries-- > 0;
    },
  };
}

describe('retry gates', () => {
  it('ride on the caller\'s own signal while its attempt lasts, and leave nothing on it', () => {
    const caller = new AbortController();
    const first = gate(1);
    const gated = gatedSignal(caller.signal, first);
    assert.equal(gated.signal, caller.signal);
    assert.equal(mayRetry(gated.signal, failure), true);
    assert.equal(mayRetry(gated.signal, failure), false);
    assert.equal(first.asked, 2);
    gated.release();
    // Without a gate, a request retries by its provider's policy alone.
    assert.equal(mayRetry(caller.signal, failure), true);
    assert.equal(first.asked, 2);
    assert.equal(getEventListeners(caller.signal, 'abort').length, 0);

    const next = gate(0);
    const again = gatedSignal(caller.signal, next);
    assert.equal(again.signal, caller.signal);
    assert.equal(mayRetry(caller.signal, failure), false);
    assert.equal(next.asked, 1);
    again.release();
  });

  it('give an attempt routed while another holds the same signal a signal of its own, which follows the caller\'s until released', () => {
    const caller = new AbortController();
    const held = gatedSignal(caller.signal, gate(0));
    const second = gate(5);
    const own = gatedSignal(caller.signal, second);
    assert.notEqual(own.signal, caller.signal);
    assert.equal(mayRetry(own.signal, failure), true);
    assert.equal(second.asked, 1);
    assert.equal(mayRetry(held.signal, failure), false);
    assert.equal(getEventListeners(caller.signal, 'abort').length, 1);

    const reason = new Error('the client went away');
    caller.abort(reason);
    assert.equal(own.signal.aborted, true);
    assert.equal(own.signal.reason, reason);
    own.release();
    held.release();
    assert.equal(mayRetry(own.signal, failure), true);
    assert.equal(second.asked, 1);
  });

  it('stop following the caller once released', () => {
    const caller = new AbortController();
    const held = gatedSignal(caller.signal, gate(0));
    const own = gatedSignal(caller.signal, gate(0));
    own.release();
    held.release();
    assert.equal(getEventListeners(caller.signal, 'abort').length, 0);
    caller.abort();
    assert.equal(own.signal.aborted, false);
  });

  it('give a call without a signal one of its own', () => {
    const first = gate(0);
    const gated = gatedSignal(undefined, first);
    assert.equal(gated.signal.aborted, false);
    assert.equal(mayRetry(gated.signal, failure), false);
    gated.release();
    assert.equal(mayRetry(gated.signal, failure), true);
  });
});

describe('following signals', () => {
  it('abort with the parent\'s reason, at once when it has aborted already, and stop following when told', () => {
    const parent = new AbortController();
    const following = followingSignal(parent.signal);
    parent.abort('gone');
    assert.equal(following.controller.signal.reason, 'gone');

    const early = followingSignal(parent.signal);
    assert.equal(early.controller.signal.aborted, true);
    assert.equal(early.controller.signal.reason, 'gone');

    const live = new AbortController();
    const stopped = followingSignal(live.signal);
    stopped.stop();
    assert.equal(getEventListeners(live.signal, 'abort').length, 0);
    live.abort();
    assert.equal(stopped.controller.signal.aborted, false);
  });
});
