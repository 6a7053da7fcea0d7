import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from './support/server.ts';
import { sseData } from './support/sse.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** A prompt long enough for a reply of some thirty chunks. */
const LONG_PROMPT = Array.from({ length: 80 }, (_, i) => `word${i}`).join(' ');
const MIN_DURATION_MS = 3000;

/** Each SSE data of the response with the milliseconds since `start` at which it arrived. */
async function timedData(res: Response, start: number): Promise<{ data: string; at: number }[]> {
  assert.equal(res.status, 200);
  const arrivals: { data: string; at: number }[] = [];
  for await (const data of sseData(res)) arrivals.push({ data, at: Date.now() - start });
  return arrivals;
}

function streamChat(srv: TestServer, token: string): Promise<Response> {
  return srv.fetch('/v1/chat/completions', { method: 'POST', token, json: { model: 'gpt-4.1', stream: true, messages: [{ role: 'user', content: LONG_PROMPT }] } });
}

describe('the local chat model paced over LOCAL_ENGINE_MIN_DURATION_MS', () => {
  let srv: TestServer;
  let token: string;
  before(async () => {
    srv = await startTestServer({ LOCAL_ENGINE_MIN_DURATION_MS: String(MIN_DURATION_MS) });
    token = await srv.tokenFor('alice');
  });
  after(() => srv?.close());

  it('spreads a chat completion stream\'s chunks over the duration, the text unchanged', async () => {
    const start = Date.now();
    const arrivals = await timedData(await streamChat(srv, token), start);
    const chunks = arrivals.filter((a) => a.data !== '[DONE]');
    assert.ok(chunks.length >= 20, `${chunks.length} chunks`);
    assert.ok(chunks[0].at < 1000, `the first chunk came after ${chunks[0].at} ms`);
    const spread = chunks.at(-1)!.at - chunks[0].at;
    assert.ok(spread >= MIN_DURATION_MS - 100, `chunks spread over ${spread} ms`);
    // Evenly: the middle chunk comes in the middle, not in a burst at either end.
    const middle = chunks[Math.floor(chunks.length / 2)].at - chunks[0].at;
    assert.ok(middle > spread / 4 && middle < (spread * 3) / 4, `the middle chunk came at ${middle} of ${spread} ms`);
    const text = chunks.map((c) => JSON.parse(c.data).choices[0]?.delta.content ?? '').join('');
    assert.ok(text.includes(LONG_PROMPT), text);
  });

  it('a responses cancel issued mid-stream answers 200 and ends the stream within a second', async () => {
    const res = await srv.fetch('/v1/responses', { method: 'POST', token, json: { model: 'gpt-4.1', requestId: 'paced-cancel', input: LONG_PROMPT } });
    assert.equal(res.status, 200);
    const stream = sseData(res);
    const deltas: string[] = [];
    for (;;) {
      const { value, done } = await stream.next();
      assert.ok(!done, 'the stream ended before any text');
      const event = JSON.parse(value);
      if (event.type === 'raw_model_stream_event') deltas.push(event.data.delta);
      if (deltas.length === 3) break;
    }
    const cancel = await srv.fetch('/v1/responses/cancel/paced-cancel', { method: 'POST', token });
    const cancelledAt = Date.now();
    assert.deepEqual([cancel.status, await cancel.json()], [200, { request_id: 'paced-cancel', cancelled: true }]);
    const rest: string[] = [];
    for await (const data of stream) rest.push(data);
    const endedAfter = Date.now() - cancelledAt;
    assert.ok(endedAfter < 1000, `the stream ended ${endedAfter} ms after the cancel`);
    assert.deepEqual(rest.slice(-2).map((d) => (d === '[DONE]' ? d : JSON.parse(d).code)), [499, '[DONE]']);
    assert.ok(rest.filter((d) => d !== '[DONE]' && JSON.parse(d).type === 'raw_model_stream_event').length < 5, 'the text stopped at the cancel');
  });
});

describe('the local chat model without a minimum duration', () => {
  let srv: TestServer;
  let token: string;
  before(async () => {
    srv = await startTestServer();
    token = await srv.tokenFor('alice');
  });
  after(() => srv?.close());

  it('streams a chat completion and an agent reply at once', async () => {
    const start = Date.now();
    const chat = await timedData(await streamChat(srv, token), start);
    assert.equal(chat.at(-1)!.data, '[DONE]');
    assert.ok(chat.at(-1)!.at < 1000, `the chat stream took ${chat.at(-1)!.at} ms`);
    const agentStart = Date.now();
    const agent = await timedData(await srv.fetch('/v1/responses', { method: 'POST', token, json: { model: 'gpt-4.1', input: LONG_PROMPT } }), agentStart);
    assert.equal(agent.at(-1)!.data, '[DONE]');
    assert.ok(agent.at(-1)!.at < 1000, `the agent stream took ${agent.at(-1)!.at} ms`);
    const answer: Json = agent.map((a) => a.data).filter((d) => d !== '[DONE]').map((d) => JSON.parse(d)).find((e) => e.name === 'message_output_created');
    assert.match(answer.item.rawItem.content[0].text, /word79/);
  });
});
