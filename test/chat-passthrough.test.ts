import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import type { AddressInfo } from 'node:net';
import { startTestServer, type TestServer } from './support/server.ts';

/** Frames as an upstream may format them (spaces, its own fields, its own model name); the gateway must not re-serialise them. */
const FRAMES = [
  '{"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1-2025-04-14", "x_upstream": {"kept": true}, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "He said \\"model\\": no"}, "finish_reason": null}], "usage": null}',
  '{"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1-2025-04-14", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": null}',
  '{"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1-2025-04-14", "choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}}',
];

/**
 * Each frame as the gateway must send it: with the model name the client asked for, as it came;
 * the usage frame, which the gateway reads, as its JSON.
 */
const expected = (frame: string) =>
  frame.includes('"usage": {') ? JSON.stringify({ ...JSON.parse(frame), model: 'gpt-4.1' }) : frame.replace('"model": "gpt-4.1-2025-04-14"', '"model":"gpt-4.1"');

describe('chat stream pass-through', () => {
  let upstream: http.Server;
  let srv: TestServer;
  let token: string;

  before(async () => {
    upstream = http.createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`${FRAMES.map((f) => `data: ${f}\n\n`).join('')}data: [DONE]\n\n`);
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;
    srv = await startTestServer({ GENGATE_CONFIG: JSON.stringify({ providers: { openai: { base_url: url } } }) });
    token = await srv.tokenFor('alice');
  });
  after(async () => {
    await srv.close();
    await new Promise((resolve) => upstream.close(resolve));
  });

  it("sends an OpenAI upstream's frames as they came (but the usage frame), the model renamed to the catalog alias, then [DONE]; usage reaches the ledger", async () => {
    const res = await srv.fetch('/v1/chat/completions', { method: 'POST', token, json: { model: 'gpt-4.1', messages: [{ role: 'user', content: 'hi' }], stream: true } });
    assert.equal(res.status, 200);
    const events = (await res.text()).split('\n\n').filter(Boolean).map((e) => e.replace(/^data: /, ''));
    assert.deepEqual(events, [...FRAMES.map(expected), '[DONE]']);
    // The call's ledger row is written once its answer has ended.
    const deadline = Date.now() + 5000;
    let rows: { requests: number; input_tokens: number; output_tokens: number }[] = [];
    while (rows.length === 0 && Date.now() < deadline) {
      rows = ((await (await srv.fetch('/v1/usage?group_by=model', { token })).json()) as { rows: typeof rows }).rows;
      if (rows.length === 0) await delay(20);
    }
    assert.deepEqual(rows.map((row) => [row.requests, row.input_tokens, row.output_tokens]), [[1, 7, 3]]);
  });
});
