import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { sseData } from '../../src/providers/chat-sse.ts';

/** The data sseData reads from a body arriving in these pieces. */
async function dataOf(pieces: (string | Buffer)[]): Promise<string[]> {
  const out: string[] = [];
  const body = Readable.from(pieces.map((piece) => (typeof piece === 'string' ? Buffer.from(piece) : piece)), { objectMode: false });
  for await (const data of sseData(body)) out.push(data);
  return out;
}

describe('server-sent events read from a byte stream', () => {
  it('reads events split anywhere, CRLF or LF, skipping comments and other fields, joining data lines', async () => {
    const e = Buffer.from('data: é\n\n');
    assert.deepEqual(await dataOf(['data: a\n', '\ndata: b\r\n', '\r\n: keep-alive\n\nevent: x\nid: 1\ndata: c1\ndata:c2\n\n', e.subarray(0, 7), e.subarray(7)]), ['a', 'b', 'c1\nc2', 'é']);
  });

  it('reads the event a stream ends in without its blank line', async () => {
    assert.deepEqual(await dataOf(['data: a\n\ndata: last']), ['a', 'last']);
    assert.deepEqual(await dataOf(['data: x\ndata: y\n']), ['x\ny']);
    assert.deepEqual(await dataOf(['data: x\ndata:', ' y']), ['x\ny']);
    assert.deepEqual(await dataOf(['data: x\nevent: e']), ['x']);
    assert.deepEqual(await dataOf(['', ': c\n\n', 'event: e']), []);
  });
});
