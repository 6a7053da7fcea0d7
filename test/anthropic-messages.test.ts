import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { startTestServer, type TestServer } from './support/server.ts';
import { eventually } from './support/wait.ts';
import { AnthropicUpstream } from './fakes/anthropic-upstream.ts';
import { startFakeChatUpstream, type FakeChatUpstream } from './fakes/openai-chat-upstream.ts';
import { GeminiUpstream } from './fakes/gemini-upstream.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const WEATHER_TOOL = { name: 'get_weather', description: 'The weather in a city', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] } };

/** A client of the gateway's /anthropic surface, with the key sent as x-api-key (as Claude Code does) or as a bearer token (as the SDK does with authToken). */
function clientOf(srv: TestServer, token: string, as: 'x-api-key' | 'bearer' = 'x-api-key'): Anthropic {
  // A timeout of its own, else the SDK refuses long non-streamed calls (max_tokens 32000) itself.
  return new Anthropic({ baseURL: `${srv.url}/anthropic`, maxRetries: 0, timeout: 60_000, ...(as === 'x-api-key' ? { apiKey: token } : { apiKey: null, authToken: token }) });
}

/** The events of a raw streamed answer: `event:` names checked against their data's type. */
async function rawEvents(res: Response): Promise<Json[]> {
  assert.equal(res.status, 200, `the stream answered ${res.status}`);
  assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
  assert.ok(res.headers.get('request-id'), 'a stream has its request-id too');
  const text = await res.text();
  const events: Json[] = [];
  for (const block of text.split('\n\n').filter((b) => b.trim() !== '')) {
    const event = /^event: (.+)$/m.exec(block)?.[1];
    const data = JSON.parse(/^data: (.+)$/m.exec(block)![1]!);
    assert.equal(event, data.type, 'each event line names its data\'s type');
    events.push(data);
  }
  return events;
}

/** The event types of a stream with pings left out and runs of deltas folded into one. */
function sequence(events: Json[]): string[] {
  const out: string[] = [];
  for (const event of events) {
    if (event.type === 'ping') continue;
    const name = event.type === 'content_block_delta' ? `delta:${event.delta.type}` : event.type === 'content_block_start' ? `start:${event.content_block.type}` : event.type;
    if (out.at(-1) !== name) out.push(name);
  }
  return out;
}

/** A Claude Code turn's body, with every field other targets do not know. */
function claudeCodeBody(model: string, extra: Json = {}): Json {
  return {
    model,
    max_tokens: 32000,
    stream: true,
    system: [
      { type: 'text', text: 'x-anthropic-billing-header: cc_version=2.1' },
      { type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } },
      { type: 'text', text: 'Be concise.', cache_control: { type: 'ephemeral', ttl: '1h' } },
    ],
    messages: [
      { role: 'system', content: 'Working directory: /tmp/x' },
      { role: 'user', content: [{ type: 'text', text: 'list the files', cache_control: { type: 'ephemeral' } }] },
    ],
    tools: [
      { name: 'Bash', description: 'Runs a command', input_schema: { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { command: { type: 'string' } }, required: ['command'], additionalProperties: false } },
      { name: 'WebFetch', description: 'Fetches a page', input_schema: { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { url: { type: 'string' } } }, defer_loading: true },
    ],
    tool_choice: { type: 'auto' },
    metadata: { user_id: '{"device_id":"d1","session_id":"s1"}' },
    thinking: { type: 'adaptive', display: 'omitted' },
    context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
    output_config: { effort: 'high' },
    ...extra,
  };
}

describe('Anthropic Messages API on the local engine', () => {
  let srv: TestServer;
  let token: string;
  let client: Anthropic;
  const post = (path: string, body: Json, headers: Record<string, string> = {}) => fetch(`${srv.url}/anthropic${path}`, {
    method: 'POST', headers: { 'x-api-key': token, 'anthropic-version': '2023-06-01', 'content-type': 'application/json', ...headers }, body: JSON.stringify(body),
  });

  before(async () => {
    srv = await startTestServer();
    token = await srv.tokenFor('alice');
    client = clientOf(srv, token);
  });
  after(async () => srv?.close());

  it('answers a message with the SDK (x-api-key and bearer, query string ignored), named by the alias, with request-id', async () => {
    for (const as of ['x-api-key', 'bearer'] as const) {
      const { data: message, response } = await clientOf(srv, token, as).messages.create({ model: 'claude-sonnet-5-5', max_tokens: 32000, messages: [{ role: 'user', content: 'hello there' }] }, { query: { beta: 'true' } }).withResponse();
      assert.match(message.id, /^msg_/);
      assert.equal(message.type, 'message');
      assert.equal(message.role, 'assistant');
      assert.equal(message.model, 'claude-sonnet-5-5');
      assert.deepEqual(message.content, [{ type: 'text', text: 'You said: hello there (message 1 of this conversation, answered by the local model claude-sonnet-5-5)' }]);
      assert.equal(message.stop_reason, 'end_turn');
      assert.equal(message.stop_sequence, null);
      assert.deepEqual(Object.keys(message.usage).sort(), ['cache_creation_input_tokens', 'cache_read_input_tokens', 'input_tokens', 'output_tokens']);
      assert.ok(message.usage.input_tokens > 0 && message.usage.output_tokens > 0);
      assert.ok(response.headers.get('request-id'), 'request-id header');
    }
  });

  it('streams Anthropic\'s exact event sequence, which the SDK assembles', async () => {
    const events = await rawEvents(await post('/v1/messages', { model: 'claude-sonnet-5-5', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'stream please' }] }));
    assert.deepEqual(sequence(events), ['message_start', 'start:text', 'delta:text_delta', 'content_block_stop', 'message_delta', 'message_stop']);
    const start = events[0].message;
    assert.deepEqual([start.type, start.role, start.model, start.content, start.stop_reason], ['message', 'assistant', 'claude-sonnet-5-5', [], null]);
    assert.ok(start.usage.input_tokens > 0, 'message_start tells the input usage');
    const delta = events.find((e) => e.type === 'message_delta');
    assert.equal(delta.delta.stop_reason, 'end_turn');
    assert.ok(delta.usage.output_tokens > 0);

    const stream = client.messages.stream({ model: 'claude-sonnet-5-5', max_tokens: 100, messages: [{ role: 'user', content: 'stream please' }] });
    const final = await stream.finalMessage();
    assert.equal(final.content[0]!.type === 'text' && final.content[0].text, 'You said: stream please (message 1 of this conversation, answered by the local model claude-sonnet-5-5)');
    assert.equal(final.stop_reason, 'end_turn');
  });

  it('runs a tool_use → tool_result round trip, streamed and not', async () => {
    const ask = { role: 'user' as const, content: 'call get_weather with {"city": "Paris"}' };
    const first = await client.messages.create({ model: 'claude-sonnet-5-5', max_tokens: 200, tools: [WEATHER_TOOL], messages: [ask] });
    assert.equal(first.stop_reason, 'tool_use');
    const use = first.content.find((b) => b.type === 'tool_use');
    assert.ok(use && use.type === 'tool_use');
    assert.equal(use.name, 'get_weather');
    assert.deepEqual(use.input, { city: 'Paris' });

    const streamed = await rawEvents(await post('/v1/messages', { model: 'claude-sonnet-5-5', max_tokens: 200, stream: true, tools: [WEATHER_TOOL], messages: [ask] }));
    assert.deepEqual(sequence(streamed), ['message_start', 'start:tool_use', 'delta:input_json_delta', 'content_block_stop', 'message_delta', 'message_stop']);
    const started = streamed.find((e) => e.type === 'content_block_start').content_block;
    assert.deepEqual([started.type, started.name, started.input], ['tool_use', 'get_weather', {}]);
    assert.deepEqual(JSON.parse(streamed.filter((e) => e.type === 'content_block_delta').map((e) => e.delta.partial_json).join('')), { city: 'Paris' });
    assert.equal(streamed.find((e) => e.type === 'message_delta').delta.stop_reason, 'tool_use');

    for (const [content, isError, said] of [['18 degrees', false, '18 degrees'], [[{ type: 'text', text: 'no such city' }], true, 'Error: no such city']] as const) {
      const answer: Anthropic.Message = await client.messages.create({
        model: 'claude-sonnet-5-5',
        max_tokens: 200,
        tools: [WEATHER_TOOL],
        messages: [ask, { role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: content as Json, is_error: isError, cache_control: { type: 'ephemeral' } } as Json] }],
      });
      assert.equal(answer.stop_reason, 'end_turn');
      assert.deepEqual(answer.content, [{ type: 'text', text: `Tool results: get_weather returned ${said}` }]);
    }
  });

  it('stops at a stop sequence and names it', async () => {
    const message = await client.messages.create({ model: 'claude-sonnet-5-5', max_tokens: 100, stop_sequences: ['nothing here', '(message'], messages: [{ role: 'user', content: 'cut me' }] });
    assert.deepEqual(message.content, [{ type: 'text', text: 'You said: cut me ' }]);
    assert.equal(message.stop_reason, 'stop_sequence');
    assert.equal(message.stop_sequence, '(message');
    const events = await rawEvents(await post('/v1/messages', { model: 'claude-sonnet-5-5', max_tokens: 100, stream: true, stop_sequences: ['(message'], messages: [{ role: 'user', content: 'cut me' }] }));
    assert.deepEqual(events.find((e) => e.type === 'message_delta').delta, { stop_reason: 'stop_sequence', stop_sequence: '(message' });
    const short = await client.messages.create({ model: 'claude-sonnet-5-5', max_tokens: 2, messages: [{ role: 'user', content: 'a long answer please' }] });
    assert.equal(short.stop_reason, 'max_tokens');
  });

  it('takes Claude Code\'s requests as they come (system turns, cache_control, defer_loading, adaptive thinking, unknown fields)', async () => {
    const events = await rawEvents(await post('/v1/messages?beta=true', claudeCodeBody('claude-sonnet-5-5'), { 'anthropic-beta': 'claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27' }));
    assert.equal(events.at(-1).type, 'message_stop');
    assert.equal(events.filter((e) => e.type === 'content_block_delta').map((e) => e.delta.text).join(''), 'You said: list the files (message 1 of this conversation, answered by the local model claude-sonnet-5-5)');
  });

  it('answers errors in Anthropic\'s shape, with request-id, naming the field of a bad input', async () => {
    const cases: [Json, number, string, RegExp][] = [
      [{ model: 'claude-sonnet-5-5', max_tokens: 10, messages: [{ role: 'robot', content: 'x' }] }, 400, 'invalid_request_error', /messages\[0\]\.role/],
      [{ model: 'claude-sonnet-5-5', messages: [{ role: 'user', content: 'x' }] }, 400, 'invalid_request_error', /max_tokens/],
      [{ model: 'claude-sonnet-5-5', max_tokens: 10, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png' } }] }] }, 400, 'invalid_request_error', /messages\[0\]\.content\[0\]\.source\.data/],
      [{ model: 'claude-sonnet-5-5', max_tokens: 10, tool_choice: { type: 'tool' }, tools: [WEATHER_TOOL], messages: [{ role: 'user', content: 'x' }] }, 400, 'invalid_request_error', /tool_choice\.name/],
      [{ model: 'no-such-model', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }, 404, 'not_found_error', /no-such-model/],
      [{ model: 'seedream-4.5', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }, 400, 'invalid_request_error', /seedream-4.5|capab/],
    ];
    for (const [body, status, type, message] of cases) {
      const res = await post('/v1/messages', body);
      const answer: Json = await res.json();
      assert.equal(res.status, status, JSON.stringify(answer));
      assert.equal(answer.type, 'error');
      assert.equal(answer.error.type, type);
      assert.match(answer.error.message, message);
      assert.ok(res.headers.get('request-id'));
      assert.equal(answer.request_id, res.headers.get('request-id'));
    }
    const notJson = await fetch(`${srv.url}/anthropic/v1/messages`, { method: 'POST', headers: { 'x-api-key': token, 'content-type': 'application/json' }, body: '{"model":' });
    assert.equal(notJson.status, 400);
    assert.equal(((await notJson.json()) as Json).error.type, 'invalid_request_error');

    await assert.rejects(clientOf(srv, 'not-a-token').messages.create({ model: 'claude-sonnet-5-5', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }), (err: Json) => {
      assert.ok(err instanceof Anthropic.AuthenticationError);
      assert.equal((err.error as Json).error.type, 'authentication_error');
      return true;
    });
    const none = await fetch(`${srv.url}/anthropic/v1/models`);
    assert.equal(none.status, 401);
    assert.ok(none.headers.get('request-id'));
    assert.equal(((await none.json()) as Json).error.type, 'authentication_error');
    const missing = await fetch(`${srv.url}/anthropic/v1/nowhere`, { headers: { 'x-api-key': token } });
    assert.equal(missing.status, 404);
    assert.equal(((await missing.json()) as Json).error.type, 'not_found_error');
  });

  it('answers 429 rate_limit_error with retry-after when the caller\'s limit is reached', async () => {
    assert.equal((await srv.fetch('/admin/users/limited/limits', { method: 'PUT', token: srv.adminToken, json: { requests_per_minute: 1 } })).status, 200);
    const limited = clientOf(srv, await srv.tokenFor('limited'));
    await limited.messages.create({ model: 'claude-sonnet-5-5', max_tokens: 10, messages: [{ role: 'user', content: 'one' }] });
    await assert.rejects(limited.messages.create({ model: 'claude-sonnet-5-5', max_tokens: 10, messages: [{ role: 'user', content: 'two' }] }), (err: Json) => {
      assert.ok(err instanceof Anthropic.RateLimitError);
      assert.equal((err.error as Json).error.type, 'rate_limit_error');
      assert.ok(Number(err.headers.get('retry-after')) > 0);
      return true;
    });
  });

  it('counts tokens (an estimate) and lists the enabled text models', async () => {
    const counted = await client.messages.countTokens({ model: 'claude-sonnet-5-5', system: 'Be brief.', messages: [{ role: 'user', content: 'how many tokens are these words here' }] });
    assert.ok(counted.input_tokens > 0);
    const page = await client.models.list();
    const ids = page.data.map((m) => m.id);
    assert.ok(ids.includes('claude-sonnet-5-5') && ids.includes('gpt-4.1'));
    assert.ok(!ids.includes('seedream-4.5'), 'only text_generate models');
    for (const model of page.data) {
      assert.equal(model.type, 'model');
      assert.ok(model.display_name);
      assert.ok(!Number.isNaN(Date.parse(model.created_at)) && /Z$/.test(model.created_at));
    }
    const raw: Json = await (await fetch(`${srv.url}/anthropic/v1/models`, { headers: { 'x-api-key': token } })).json();
    assert.deepEqual([raw.has_more, raw.first_id, raw.last_id], [false, ids[0], ids.at(-1)]);
    const one = await client.models.retrieve('claude-sonnet-5-5');
    assert.deepEqual([one.id, one.display_name], ['claude-sonnet-5-5', 'Claude Sonnet 5.5']);
    await assert.rejects(client.models.retrieve('no-such-model'), (err: Json) => err instanceof Anthropic.NotFoundError && (err.error as Json).error.type === 'not_found_error');
  });

  it('records each call in the ledger as anthropic.messages, with its tokens', async () => {
    const { data: message, response } = await client.messages.create({ model: 'claude-sonnet-5-5', max_tokens: 50, messages: [{ role: 'user', content: 'ledger me' }] }).withResponse();
    const id = response.headers.get('request-id');
    const row = await eventually('the ledger row', async () => {
      const ledger: Json = await (await srv.fetch('/admin/requests?user_id=alice&limit=200', { token: srv.adminToken })).json();
      return ledger.data.find((r: Json) => r.request_id === id);
    });
    assert.deepEqual([row.endpoint, row.model, row.status, row.input_tokens, row.output_tokens], ['anthropic.messages', 'claude-sonnet-5-5', 'success', message.usage.input_tokens, message.usage.output_tokens]);

    const res = await post('/v1/messages', { model: 'claude-sonnet-5-5', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'ledger my stream' }] });
    const usage = (await rawEvents(res)).find((e) => e.type === 'message_delta').usage;
    const streamed = await eventually('the streamed call\'s ledger row', async () => {
      const ledger: Json = await (await srv.fetch('/admin/requests?user_id=alice&limit=200', { token: srv.adminToken })).json();
      return ledger.data.find((r: Json) => r.request_id === res.headers.get('request-id'));
    });
    assert.deepEqual([streamed.endpoint, streamed.input_tokens, streamed.output_tokens], ['anthropic.messages', usage.input_tokens, usage.output_tokens]);
    assert.ok(streamed.output_tokens > 0);
  });
});

describe('Anthropic Messages API passed through to an anthropic upstream', () => {
  const KEY_ENV = 'ANTHROPIC_SURFACE_TEST_KEY';
  const KEY = 'sk-ant-surface-1';
  let fake: AnthropicUpstream;
  let srv: TestServer;
  let token: string;
  let client: Anthropic;
  const post = (body: Json, headers: Record<string, string> = {}) => fetch(`${srv.url}/anthropic/v1/messages?beta=true`, {
    method: 'POST', headers: { 'x-api-key': token, 'anthropic-version': '2023-06-01', 'content-type': 'application/json', ...headers }, body: JSON.stringify(body),
  });

  before(async () => {
    process.env[KEY_ENV] = KEY;
    fake = await new AnthropicUpstream(KEY).listen();
    srv = await startTestServer({ GENGATE_CONFIG: JSON.stringify({ providers: { anthropic: { base_url: `${fake.url}/v1`, api_key_env: KEY_ENV, retry: { attempts: 0 } } } }) });
    token = await srv.tokenFor('bob');
    client = clientOf(srv, token);
  });
  after(async () => {
    await srv?.close();
    await fake?.close();
    delete process.env[KEY_ENV];
  });

  it('sends the request as it came (only model replaced; cache_control, thinking, unknown fields and betas kept) and streams its events back unchanged but the model', async () => {
    const body = claudeCodeBody('claude-sonnet-5-5');
    const beta = 'claude-code-20250219,context-management-2025-06-27';
    const res = await post(body, { 'anthropic-beta': beta });
    assert.equal(res.headers.get('x-gengate-provider'), 'anthropic');
    const events = await rawEvents(res);
    const sent = fake.requests.at(-1)!;
    assert.deepEqual(sent.json, { ...body, model: 'claude-sonnet-5-5' });
    assert.equal(JSON.stringify(sent.json), JSON.stringify({ ...body, model: 'claude-sonnet-5-5' }), 'fields in the order they came');
    assert.equal(sent.headers['anthropic-beta'], beta);
    assert.equal(sent.path, '/v1/messages');

    assert.equal(events[0].message.model, 'claude-sonnet-5-5', 'the alias, not the upstream\'s snapshot name');
    assert.match(events[0].message.id, /^msg_fake/);
    assert.ok(events.some((e) => e.type === 'ping'), 'the upstream\'s ping passes');
    assert.deepEqual(sequence(events), ['message_start', 'start:text', 'delta:text_delta', 'content_block_stop', 'message_delta', 'message_stop']);
    assert.match(events.filter((e) => e.type === 'content_block_delta').map((e) => e.delta.text).join(''), /^Echo: list the files/);
  });

  it('answers a whole message as the upstream did, with its cache usage', async () => {
    fake.script({ kind: 'text', text: 'Cached hello', cache: { read: 100, write: 20 } });
    const message = await client.messages.create({ model: 'claude-sonnet-5-5', max_tokens: 64, system: [{ type: 'text', text: 'sys', cache_control: { type: 'ephemeral' } }], messages: [{ role: 'user', content: 'hi' }] });
    assert.match(message.id, /^msg_fake/);
    assert.equal(message.model, 'claude-sonnet-5-5');
    assert.deepEqual(message.content, [{ type: 'text', text: 'Cached hello' }]);
    assert.deepEqual(message.usage, { input_tokens: 1, cache_creation_input_tokens: 20, cache_read_input_tokens: 100, output_tokens: 2 });
    assert.deepEqual(fake.bodies().at(-1)!.system, [{ type: 'text', text: 'sys', cache_control: { type: 'ephemeral' } }]);
  });

  it('passes thinking (thinking_delta, signature_delta) and tool_use through, and the signed block back', async () => {
    fake.script({ kind: 'tool_use', name: 'get_weather', input: { city: 'Oslo' }, thinking: 'I should look it up' });
    const stream = client.messages.stream({ model: 'claude-sonnet-5-5', max_tokens: 2048, thinking: { type: 'enabled', budget_tokens: 1024 }, tools: [WEATHER_TOOL], messages: [{ role: 'user', content: 'weather in Oslo?' }] });
    const types: string[] = [];
    stream.on('streamEvent', (event) => void (event.type === 'content_block_delta' && types.push(event.delta.type)));
    const first = await stream.finalMessage();
    assert.ok(types.includes('thinking_delta') && types.includes('signature_delta'));
    assert.equal(first.stop_reason, 'tool_use');
    assert.deepEqual(first.content.map((b) => b.type), ['thinking', 'tool_use']);
    const use = first.content[1]!;
    assert.ok(use.type === 'tool_use');
    const answer = await client.messages.create({
      model: 'claude-sonnet-5-5', max_tokens: 2048, thinking: { type: 'enabled', budget_tokens: 1024 }, tools: [WEATHER_TOOL],
      messages: [{ role: 'user', content: 'weather in Oslo?' }, { role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'rainy' }] }],
    });
    assert.equal(answer.stop_reason, 'end_turn');
    assert.match((answer.content[0] as Json).text, /tool_result rainy/);
  });

  it('counts tokens with the upstream\'s count_tokens', async () => {
    const counted = await client.messages.countTokens({ model: 'claude-sonnet-5-5', system: 'one two', messages: [{ role: 'user', content: 'three four five' }] });
    assert.equal(counted.input_tokens, 5);
    assert.deepEqual(fake.countBodies().at(-1), { model: 'claude-sonnet-5-5', system: 'one two', messages: [{ role: 'user', content: 'three four five' }] });
  });

  it('ends a stream that fails midway with the upstream\'s error event, never message_stop', async () => {
    fake.script({ kind: 'stream_error', afterDeltas: 1, type: 'overloaded_error', message: 'Overloaded' });
    const events = await rawEvents(await post({ model: 'claude-sonnet-5-5', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'a b c d e' }] }));
    assert.deepEqual(events.at(-1), { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
    assert.ok(!events.some((e) => e.type === 'message_stop'));
    fake.script({ kind: 'stream_error', afterDeltas: 1, type: 'overloaded_error', message: 'Overloaded' });
    await assert.rejects(client.messages.stream({ model: 'claude-sonnet-5-5', max_tokens: 100, messages: [{ role: 'user', content: 'a b c d e' }] }).finalMessage(), /Overloaded/);
  });
});

describe('Anthropic Messages API translated for an OpenAI-compatible upstream', () => {
  const KEY_ENV = 'OPENAI_SURFACE_TEST_KEY';
  let fake: FakeChatUpstream;
  let srv: TestServer;
  let token: string;
  let client: Anthropic;
  const post = (body: Json) => fetch(`${srv.url}/anthropic/v1/messages`, {
    method: 'POST', headers: { 'x-api-key': token, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' }, body: JSON.stringify(body),
  });

  before(async () => {
    process.env[KEY_ENV] = 'sk-openai-surface';
    fake = await startFakeChatUpstream();
    srv = await startTestServer({ GENGATE_CONFIG: JSON.stringify({
      providers: { openai: { base_url: fake.url, api_key_env: KEY_ENV, retry: { attempts: 0 } }, deepseek: { adapter: 'local' } },
      models: { 'gpt-4o-mini': { fallbacks: ['deepseek-chat'] } },
    }) });
    token = await srv.tokenFor('carol');
    client = clientOf(srv, token);
  });
  after(async () => {
    await srv?.close();
    await fake?.close();
    delete process.env[KEY_ENV];
  });

  it('translates system, turns, images, tools, tool results and parameters, dropping what chat does not know', async () => {
    fake.script({ kind: 'tool_call', name: 'get_weather', arguments: '{"city":"Rome"}' });
    const message = await client.messages.create({
      model: 'gpt-4o-mini',
      max_tokens: 32000,
      system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }, { type: 'text', text: 'Answer in English.' }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'What are these?' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_BASE64 } }, { type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } }] },
        { role: 'assistant', content: [{ type: 'text', text: 'Let me check.' }, { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'unknown city' }], is_error: true, cache_control: { type: 'ephemeral' } } as Json, { type: 'text', text: 'Try Rome.' }] },
        { role: 'system', content: 'The user is in Europe.' } as Json,
        { role: 'user', content: 'Well?' },
      ],
      tools: [{ ...WEATHER_TOOL, input_schema: { $schema: 'https://json-schema.org/draft/2020-12/schema', ...WEATHER_TOOL.input_schema }, defer_loading: true, cache_control: { type: 'ephemeral' } } as Json, { type: 'web_search_20250305', name: 'web_search' } as Json],
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
      stop_sequences: ['END'],
      temperature: 0.5,
      top_p: 0.9,
      top_k: 5,
      metadata: { user_id: 'end-user-7' },
      thinking: { type: 'enabled', budget_tokens: 2048 },
      context_management: { edits: [] },
      output_config: { effort: 'high' },
    } as Json);
    const sent = fake.requests.at(-1)!.body as Json;
    assert.deepEqual(sent, {
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'Be brief.\n\nAnswer in English.' },
        { role: 'user', content: [{ type: 'text', text: 'What are these?' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_BASE64}` } }, { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } }] },
        { role: 'assistant', content: 'Let me check.', tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
        { role: 'tool', tool_call_id: 'toolu_1', content: 'Error: unknown city' },
        { role: 'user', content: 'Try Rome.' },
        { role: 'system', content: 'The user is in Europe.' },
        { role: 'user', content: 'Well?' },
      ],
      max_completion_tokens: 16384,
      stop: ['END'],
      temperature: 0.5,
      top_p: 0.9,
      user: 'end-user-7',
      tools: [{ type: 'function', function: { name: 'get_weather', description: 'The weather in a city', parameters: WEATHER_TOOL.input_schema } }],
      tool_choice: 'required',
      parallel_tool_calls: false,
      stream: false,
    });
    assert.equal(message.model, 'gpt-4o-mini');
    assert.equal(message.stop_reason, 'tool_use');
    assert.deepEqual(message.content, [{ type: 'tool_use', id: 'call_fake1', name: 'get_weather', input: { city: 'Rome' } }]);
  });

  it('streams a translated tool call as input_json_delta and maps none and tool choices', async () => {
    fake.script({ kind: 'tool_call', name: 'get_weather', arguments: '{"city":"Lisbon"}' });
    const events = await rawEvents(await post({ model: 'gpt-4.1', max_tokens: 100, stream: true, tools: [WEATHER_TOOL], tool_choice: { type: 'tool', name: 'get_weather' }, messages: [{ role: 'user', content: 'weather?' }] }));
    assert.deepEqual((fake.requests.at(-1)!.body as Json).tool_choice, { type: 'function', function: { name: 'get_weather' } });
    assert.deepEqual(sequence(events), ['message_start', 'start:tool_use', 'delta:input_json_delta', 'content_block_stop', 'message_delta', 'message_stop']);
    assert.deepEqual(JSON.parse(events.filter((e) => e.type === 'content_block_delta').map((e) => e.delta.partial_json).join('')), { city: 'Lisbon' });
    const end = events.find((e) => e.type === 'message_delta');
    assert.equal(end.delta.stop_reason, 'tool_use');
    assert.ok(end.usage.input_tokens > 0 && end.usage.output_tokens > 0);

    await client.messages.create({ model: 'gpt-4.1', max_tokens: 100, tools: [WEATHER_TOOL], tool_choice: { type: 'none' }, messages: [{ role: 'user', content: 'no tools' }] });
    assert.equal((fake.requests.at(-1)!.body as Json).tool_choice, 'none');
  });

  it('reports an OpenAI upstream\'s cached tokens as cache_read_input_tokens, not again in input_tokens', async () => {
    const completion = {
      id: 'chatcmpl-cached', object: 'chat.completion', created: 1, model: 'gpt-4.1-2025-04-14',
      choices: [{ index: 0, message: { role: 'assistant', content: 'from cache' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 1200, completion_tokens: 3, total_tokens: 1203, prompt_tokens_details: { cached_tokens: 1024 } },
    };
    fake.script({ kind: 'status', status: 200, body: JSON.stringify(completion) });
    const message = await client.messages.create({ model: 'gpt-4.1', max_tokens: 100, messages: [{ role: 'user', content: 'cached?' }] });
    assert.deepEqual(message.usage, { input_tokens: 176, output_tokens: 3, cache_creation_input_tokens: 0, cache_read_input_tokens: 1024 });
    assert.deepEqual(message.content, [{ type: 'text', text: 'from cache' }]);
  });

  it('answers an upstream\'s reasoning as a thinking block', async () => {
    const completion = {
      id: 'chatcmpl-thought', object: 'chat.completion', created: 1, model: 'gpt-4.1',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Four.', reasoning_content: 'Two and two make four.' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 5, completion_tokens: 9, total_tokens: 14 },
    };
    fake.script({ kind: 'status', status: 200, body: JSON.stringify(completion) });
    const message = await client.messages.create({ model: 'gpt-4.1', max_tokens: 100, thinking: { type: 'enabled', budget_tokens: 1024 }, messages: [{ role: 'user', content: '2+2?' }] });
    assert.deepEqual(message.content, [{ type: 'thinking', thinking: 'Two and two make four.', signature: '' }, { type: 'text', text: 'Four.' }]);
    assert.equal((fake.requests.at(-1)!.body as Json).reasoning_effort, undefined, 'gpt-4.1 lists no effort levels: thinking is dropped');
    for (const [budget, effort] of [[2048, 'low'], [8192, 'medium'], [32000, 'high']] as const) {
      await client.messages.create({ model: 'gpt-5-mini', max_tokens: 64000, thinking: { type: 'enabled', budget_tokens: budget }, messages: [{ role: 'user', content: 'think' }] });
      assert.equal((fake.requests.at(-1)!.body as Json).reasoning_effort, effort);
    }
  });

  it('ends a stream that fails midway with an error event, never message_stop', async () => {
    fake.script({ kind: 'error_frame', afterChunks: 2, message: 'upstream broke' });
    const events = await rawEvents(await post({ model: 'gpt-4.1', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'one two three four five' }] }));
    assert.equal(events[0].type, 'message_start');
    assert.ok(events.some((e) => e.type === 'content_block_delta'));
    assert.equal(events.at(-1).type, 'error');
    assert.equal(events.at(-1).error.type, 'api_error');
    assert.ok(!events.some((e) => e.type === 'message_stop'));
  });

  it('answers an upstream refusal before the stream starts as an error status', async () => {
    fake.script({ kind: 'status', status: 500, message: 'boom' });
    const res = await post({ model: 'gpt-4.1', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'x' }] });
    assert.equal(res.status, 502);
    const body: Json = await res.json();
    assert.deepEqual([body.type, body.error.type], ['error', 'api_error']);
  });

  it('moves a stream that fails before its first event to the model\'s fallback', async () => {
    fake.script({ kind: 'status', status: 500, message: 'down' });
    const res = await post({ model: 'gpt-4o-mini', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'anyone there?' }] });
    assert.equal(res.headers.get('x-gengate-model'), 'deepseek-chat');
    const events = await rawEvents(res);
    assert.equal(events.at(-1).type, 'message_stop');
    assert.match(events.filter((e) => e.type === 'content_block_delta').map((e) => e.delta.text).join(''), /answered by the local model deepseek-chat/);
  });

  it('estimates count_tokens for a non-Anthropic upstream without calling it', async () => {
    const before = fake.requests.length;
    const counted = await client.messages.countTokens({ model: 'gpt-4.1', messages: [{ role: 'user', content: 'twelve characters and more' }] });
    assert.ok(counted.input_tokens > 0);
    assert.equal(fake.requests.length, before);
  });
});

describe('Anthropic Messages API translated for Gemini', () => {
  const KEY_ENV = 'GEMINI_SURFACE_TEST_KEY';
  let fake: GeminiUpstream;
  let srv: TestServer;
  let token: string;

  before(async () => {
    process.env[KEY_ENV] = 'gemini-surface-key';
    fake = await new GeminiUpstream('gemini-surface-key').listen();
    srv = await startTestServer({ GENGATE_CONFIG: JSON.stringify({ providers: { google: { base_url: `${fake.url}/v1beta`, api_key_env: KEY_ENV, retry: { attempts: 0 } } } }) });
    token = await srv.tokenFor('dave');
  });
  after(async () => {
    await srv?.close();
    await fake?.close();
    delete process.env[KEY_ENV];
  });

  it('serves a Claude Code turn and a tool call on Gemini', async () => {
    fake.script({ kind: 'function_call', name: 'Bash', args: { command: 'ls' } });
    const res = await fetch(`${srv.url}/anthropic/v1/messages?beta=true`, {
      method: 'POST', headers: { 'x-api-key': token, 'anthropic-version': '2023-06-01', 'anthropic-beta': 'claude-code-20250219', 'content-type': 'application/json' }, body: JSON.stringify(claudeCodeBody('gemini-2.5-flash')),
    });
    const events = await rawEvents(res);
    assert.deepEqual(sequence(events), ['message_start', 'start:tool_use', 'delta:input_json_delta', 'content_block_stop', 'message_delta', 'message_stop']);
    const use = events.find((e) => e.type === 'content_block_start').content_block;
    assert.equal(use.name, 'Bash');
    assert.deepEqual(JSON.parse(events.filter((e) => e.type === 'content_block_delta').map((e) => e.delta.partial_json).join('')), { command: 'ls' });
    assert.equal(events.find((e) => e.type === 'message_delta').delta.stop_reason, 'tool_use');
    const sent = fake.calls('gemini-2.5-flash', 'streamGenerateContent').at(-1)!.json as Json;
    assert.equal(JSON.stringify(sent).includes('cache_control'), false);
    assert.deepEqual(sent.tools[0].functionDeclarations.map((d: Json) => d.name), ['Bash', 'WebFetch']);
  });
});
