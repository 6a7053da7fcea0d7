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
  '{"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1-2025-04-14", "choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10, "prompt_tokens_details": {"cached_tokens": 0}}}',
];

/** A whole answer as an upstream may format it; a `"usage"` inside a string is not the usage. */
const COMPLETION = '{"id": "c2", "object": "chat.completion", "created": 1, "model": "gpt-4.1-2025-04-14", "x_upstream": {"kept": true}, ' +
  '"choices": [{"index": 0, "message": {"role": "assistant", "content": "A \\"usage\\": {\\"prompt_tokens\\": 99} in text"}, "finish_reason": "stop"}], ' +
  '"usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16, "completion_tokens_details": {"reasoning_tokens": 0}}}';

/** What the gateway must send: the upstream's text as it came, with the model name the client asked for. */
const renamed = (text: string) => text.replace('"model": "gpt-4.1-2025-04-14"', '"model":"gpt-4.1"');

describe('chat pass-through', () => {
  let upstream: http.Server;
  let srv: TestServer;

  before(async () => {
    upstream = http.createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        if ((JSON.parse(body) as { stream: boolean }).stream) {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.end(`${FRAMES.map((f) => `data: ${f}\n\n`).join('')}data: [DONE]\n\n`);
        } else {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(COMPLETION);
        }
      });
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;
    srv = await startTestServer({ GENGATE_CONFIG: JSON.stringify({ providers: { openai: { base_url: url } } }) });
  });
  after(async () => {
    await srv.close();
    await new Promise((resolve) => upstream.close(resolve));
  });

  /** The usage sums of the token's user once the ledger rows of its `calls` are written (after their answers ended). */
  async function usageRows(token: string, calls: number): Promise<number[][]> {
    const deadline = Date.now() + 5000;
    let rows: { requests: number; input_tokens: number; output_tokens: number }[] = [];
    const counted = () => rows.reduce((n, row) => n + row.requests, 0);
    while (counted() < calls && Date.now() < deadline) {
      rows = ((await (await srv.fetch('/v1/usage?group_by=model', { token })).json()) as { rows: typeof rows }).rows;
      if (counted() < calls) await delay(20);
    }
    return rows.map((row) => [row.requests, row.input_tokens, row.output_tokens]);
  }

  it("sends an OpenAI upstream's frames as they came, the model renamed to the catalog alias, then [DONE]; usage reaches the ledger", async () => {
    const token = await srv.tokenFor('alice');
    const res = await srv.fetch('/v1/chat/completions', { method: 'POST', token, json: { model: 'gpt-4.1', messages: [{ role: 'user', content: 'hi' }], stream: true } });
    assert.equal(res.status, 200);
    const events = (await res.text()).split('\n\n').filter(Boolean).map((e) => e.replace(/^data: /, ''));
    assert.deepEqual(events, [...FRAMES.map(renamed), '[DONE]']);
    assert.deepEqual(await usageRows(token, 1), [[1, 7, 3]]);
  });

  it("sends a whole answer as it came, the model renamed; its usage (not a usage in its text) reaches the ledger", async () => {
    const token = await srv.tokenFor('bob');
    for (const path of ['/v1/chat/completions', '/openai/v1/chat/completions']) {
      const res = await srv.fetch(path, { method: 'POST', token, json: { model: 'gpt-4.1', messages: [{ role: 'user', content: 'hi' }], stream: false } });
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
      assert.equal(await res.text(), renamed(COMPLETION));
    }
    assert.deepEqual(await usageRows(token, 2), [[2, 22, 10]]);
  });
});
