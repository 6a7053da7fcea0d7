import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { translatedChunks, type StreamTranslator } from '../../src/providers/chat-sse.ts';
import { ApiError } from '../../src/core/errors.ts';
import type { ChatChunk } from '../../src/providers/spec.ts';

/** Each event's data becomes a chunk whose id is that data; `bad` is the upstream's error event; `[DONE]` finishes; the end adds `closing`. */
class EchoTranslator implements StreamTranslator {
  finished = false;

  push(data: string): ChatChunk[] {
    if (data === '[DONE]') {
      this.finished = true;
      return [];
    }
    if (data === 'bad') throw new ApiError('upstream_error', 'the upstream said bad');
    return [{ id: data } as ChatChunk];
  }

  end(): ChatChunk[] {
    if (!this.finished) throw new ApiError('upstream_error', 'ended without [DONE]');
    return [{ id: 'closing' } as ChatChunk];
  }
}

function open(controller = new AbortController()) {
  const body = new PassThrough();
  const chunks = translatedChunks(body, new EchoTranslator(), { provider: 'fake', timeoutMs: 1000, signal: controller.signal });
  return { body, chunks };
}

const idOf = (result: IteratorResult<ChatChunk>) => (result.done ? 'done' : result.value.id);

describe('the chat chunks of an upstream stream', () => {
  it('gives the chunks in order, events split anywhere, then the closing chunks and done', async () => {
    const { body, chunks } = open();
    const read: string[] = [];
    const reading = (async () => {
      for await (const chunk of chunks) read.push(chunk.id);
    })();
    body.write('data: a\n\nda');
    body.write('ta: b\n\ndata: c\n\n');
    body.end('data: [DONE]\n\ndata: after\n\n');
    await reading;
    assert.deepEqual(read, ['a', 'b', 'c', 'closing']);
  });

  it('pauses the body while chunks wait for the reader and resumes it once they are read', async () => {
    const { body, chunks } = open();
    const first = chunks.next();
    body.write('data: a\n\ndata: b\n\ndata: c\n\n');
    assert.equal(idOf(await first), 'a');
    assert.equal(body.isPaused(), true);
    assert.equal(idOf(await chunks.next()), 'b');
    assert.equal(body.isPaused(), true);
    assert.equal(idOf(await chunks.next()), 'c');
    assert.equal(body.isPaused(), false);
    body.end('data: [DONE]\n\n');
    assert.equal(idOf(await chunks.next()), 'closing');
    assert.equal(idOf(await chunks.next()), 'done');
  });

  it("gives the chunks made before the upstream's error event, then the error, and drops the body", async () => {
    const { body, chunks } = open();
    body.write('data: a\n\ndata: bad\n\ndata: c\n\n');
    assert.equal(idOf(await chunks.next()), 'a');
    await assert.rejects(chunks.next(), { code: 'upstream_error', message: 'the upstream said bad' });
    assert.equal(body.destroyed, true);
    assert.equal(idOf(await chunks.next()), 'done');
  });

  it("reads nothing after the upstream's error event, not even the event the body ends in", async () => {
    const { body, chunks } = open();
    body.end('data: a\n\ndata: bad\n\ndata: c');
    assert.equal(idOf(await chunks.next()), 'a');
    await once(body, 'end');
    await assert.rejects(chunks.next(), { code: 'upstream_error', message: 'the upstream said bad' });
  });

  it('fails a stream that ends without its last event as the translator says', async () => {
    const { body, chunks } = open();
    body.end('data: a\n\n');
    assert.equal(idOf(await chunks.next()), 'a');
    await assert.rejects(chunks.next(), { code: 'upstream_error', message: 'ended without [DONE]' });
  });

  it('fails a body broken off, or destroyed before its end, as the upstream breaking off', async () => {
    const broken = open();
    const waiting = broken.chunks.next();
    broken.body.destroy(new Error('socket hang up'));
    await assert.rejects(waiting, { code: 'upstream_error', message: 'fake stream broke off: socket hang up' });

    const closed = open();
    closed.body.write('data: a\n\n');
    assert.equal(idOf(await closed.chunks.next()), 'a');
    closed.body.destroy();
    await assert.rejects(closed.chunks.next(), { code: 'upstream_error', message: 'fake stream broke off: Premature close' });
  });

  it("rethrows the signal's reason when the call was aborted", async () => {
    const controller = new AbortController();
    const { body, chunks } = open(controller);
    const waiting = chunks.next();
    const reason = new Error('the client went away');
    controller.abort(reason);
    body.destroy(new Error('aborted'));
    await assert.rejects(waiting, (err) => err === reason);
  });

  it('drops the body when the reader stops early', async () => {
    const { body, chunks } = open();
    body.write('data: a\n\ndata: b\n\n');
    assert.equal(idOf(await chunks.next()), 'a');
    assert.equal(idOf(await chunks.return!()), 'done');
    assert.equal(body.destroyed, true);
    assert.equal(idOf(await chunks.next()), 'done');
  });
});
