import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { scrubbingErrors } from '../../src/providers/secret-scrubbing.ts';
import { TaskFailedError } from '../../src/providers/spec.ts';

const KEY = 'sk-secret-0123456789abcdef';

describe('errors of an adapter with a key', () => {
  it('lose every part of the key, in the message, the original message and the stack', async () => {
    const adapter = scrubbingErrors({
      async call(): Promise<never> {
        throw new TaskFailedError(`Incorrect API key provided: ${KEY.slice(0, 12)}…`, `key ${KEY} refused`);
      },
    }, KEY);
    const err = await adapter.call().then(() => assert.fail('the call resolved'), (e: unknown) => e as TaskFailedError);
    assert.ok(err instanceof TaskFailedError);
    for (const text of [err.message, err.originalMessage, err.stack]) {
      assert.equal(typeof text, 'string');
      assert.ok(!text!.includes(KEY.slice(0, 8)), text);
      assert.match(text!, /\*\*\*/);
    }
    assert.ok(Object.keys(err).includes('originalMessage'), 'originalMessage stays an enumerable field');
  });

  it('pass an aborted request\'s DOMException on as it is, though its message has only a getter', async () => {
    const controller = new AbortController();
    controller.abort();
    const adapter = scrubbingErrors({
      async call(signal: AbortSignal): Promise<never> {
        throw signal.reason;
      },
    }, KEY);
    const err = await adapter.call(controller.signal).then(() => assert.fail('the call resolved'), (e: unknown) => e);
    assert.equal(err, controller.signal.reason);
    assert.equal((err as DOMException).name, 'AbortError');
  });

  it('replace a frozen error that holds the key by one of its name and scrubbed message', () => {
    const frozen = Object.freeze(new RangeError(`refused ${KEY}`));
    const adapter = scrubbingErrors({
      call(): never {
        throw frozen;
      },
    }, KEY);
    assert.throws(() => adapter.call(), (e: unknown) => {
      assert.ok(e instanceof Error && e !== frozen);
      assert.equal(e.name, 'RangeError');
      assert.match(e.message, /^refused \*\*\*/);
      assert.ok(!e.message.includes(KEY.slice(0, 8)) && !e.stack!.includes(KEY.slice(0, 8)), e.stack);
      return true;
    });
  });
});
