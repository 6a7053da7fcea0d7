import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../support/server.ts';
import { AnthropicUpstream, anthropicError } from '../fakes/anthropic-upstream.ts';
import { agentEvents, chatStream, contentOf, runItems } from '../support/sse.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const KEY_ENV = 'ANTHROPIC_TEST_KEY';
const KEY = 'sk-ant-test-123';
const PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const WEATHER_TOOL = { type: 'function', function: { name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } };

/** The gateway configured with the `anthropic` provider on the fake (and the image models on the local engine, for the agent's tools). */
async function gatewayOn(fake: AnthropicUpstream, timeoutMs = 10_000): Promise<TestServer> {
  return startTestServer({
    GENGATE_CONFIG: JSON.stringify({
      providers: {
        anthropic: { base_url: `${fake.url}/v1`, api_key_env: KEY_ENV, timeout_ms: timeoutMs, retry: { attempts: 2, base_delay_ms: 1, max_delay_ms: 1500 } },
        openai: { adapter: 'local' },
      },
    }),
  });
}

describe('chat on Anthropic (Messages API)', () => {
  let fake: AnthropicUpstream;
  let srv: TestServer;
  let token: string;
  const chat = (body: Json) => srv.fetch('/v1/chat/completions', { method: 'POST', token, json: body });

  before(async () => {
    process.env[KEY_ENV] = KEY;
    fake = await new AnthropicUpstream(KEY).listen();
    srv = await gatewayOn(fake);
    token = await srv.tokenFor('alice');
  });
  after(async () => {
    await srv?.close();
    await fake?.close();
    delete process.env[KEY_ENV];
  });

  it('sends the exact Messages API request: system extracted, images inline and by URL, parameters mapped, and answers a chat.completion', async () => {
    const res = await chat({
      model: 'claude-sonnet-5-5',
      stream: false,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'developer', content: [{ type: 'text', text: 'Answer in English.' }] },
        { role: 'user', content: [
          { type: 'text', text: 'What are these?' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_BASE64}` } },
          { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } },
        ] },
        { role: 'assistant', content: 'Two pictures.' },
        { role: 'user', content: 'Say more' },
      ],
      temperature: 1.4,
      max_tokens: 300,
      stop: 'END',
      user: 'end-user-7',
      top_k: 5,
    });
    const body: Json = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));

    const [sent] = fake.requestsTo('/v1/messages').slice(-1);
    assert.equal(sent.headers['x-api-key'], KEY);
    assert.equal(sent.headers['anthropic-version'], '2023-06-01');
    assert.equal(sent.headers['content-type'], 'application/json');
    assert.equal(sent.headers.accept, 'application/json');
    assert.equal(sent.headers.authorization, undefined, 'no bearer key');
    assert.deepEqual(sent.json, {
      model: 'claude-sonnet-5-5',
      max_tokens: 300,
      system: [{ type: 'text', text: 'Be brief.' }, { type: 'text', text: 'Answer in English.' }],
      messages: [
        { role: 'user', content: [
          { type: 'text', text: 'What are these?' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_BASE64 } },
          { type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } },
        ] },
        { role: 'assistant', content: [{ type: 'text', text: 'Two pictures.' }] },
        { role: 'user', content: 'Say more' },
      ],
      temperature: 1,
      stop_sequences: ['END'],
      metadata: { user_id: 'end-user-7' },
      top_k: 5,
    });

    assert.equal(body.object, 'chat.completion');
    assert.equal(body.model, 'claude-sonnet-5-5', 'the catalog alias');
    assert.match(body.id, /^msg_fake/);
    assert.deepEqual(body.choices, [{ index: 0, message: { role: 'assistant', content: 'Echo: Say more' }, finish_reason: 'stop' }]);
    // The fake counts words (an image is one): 5 + 2 + 2 input, 3 output.
    assert.deepEqual(body.usage, { prompt_tokens: 9, completion_tokens: 3, total_tokens: 12, prompt_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 } });
  });

  it('streams Anthropic events as chat chunks: the role first, text deltas, the finish reason, then usage with the cache tokens and [DONE]', async () => {
    fake.script({ kind: 'text', text: 'Cached answer in four words', cache: { read: 100, write: 20 } });
    const res = await chat({ model: 'claude-haiku-5-5', messages: [{ role: 'user', content: 'Hello there' }] });
    const { chunks, done } = await chatStream(res);
    assert.ok(done);

    const sent = fake.bodies().at(-1)!;
    assert.equal(sent.stream, true);
    assert.equal(sent.max_tokens, 128000, 'without the client\'s limit, the model\'s output limit from the catalog');
    assert.equal(fake.requestsTo('/v1/messages').at(-1)!.headers.accept, 'text/event-stream');

    assert.deepEqual(chunks[0].choices[0].delta, { role: 'assistant', content: '' });
    assert.equal(contentOf(chunks), 'Cached answer in four words');
    assert.ok(chunks.filter((c) => c.choices?.[0]?.delta?.content).length >= 5, 'one chunk per text delta');
    for (const chunk of chunks) {
      assert.equal(chunk.object, 'chat.completion.chunk');
      assert.equal(chunk.model, 'claude-haiku-5-5');
      assert.equal(chunk.id, chunks[0].id);
    }
    assert.equal(chunks.at(-2).choices[0].finish_reason, 'stop');
    assert.deepEqual(chunks.at(-1).choices, []);
    // Input: 2 uncached + 100 read from the cache + 20 written to it.
    assert.deepEqual(chunks.at(-1).usage, { prompt_tokens: 122, completion_tokens: 5, total_tokens: 127, prompt_tokens_details: { cached_tokens: 100, cache_write_tokens: 20 } });
  });

  it('maps the tools and tool_choice, and answers tool_use as tool_calls, whole and streamed', async () => {
    fake.script({ kind: 'tool_use', name: 'get_weather', input: { city: 'Paris' }, text: 'Let me check.', thinking: 'Paris needs the weather tool.' });
    const res = await chat({ model: 'claude-opus-5-5', stream: false, messages: [{ role: 'user', content: 'Weather in Paris?' }], tools: [WEATHER_TOOL], tool_choice: 'required', parallel_tool_calls: false });
    const body: Json = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    const sent = fake.bodies().at(-1)!;
    assert.deepEqual(sent.tools, [{ name: 'get_weather', description: 'The weather in a city', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }]);
    assert.deepEqual(sent.tool_choice, { type: 'any', disable_parallel_tool_use: true });
    const { message, finish_reason: finish } = body.choices[0];
    assert.equal(finish, 'tool_calls');
    assert.equal(message.content, 'Let me check.');
    assert.equal(message.tool_calls.length, 1);
    assert.match(message.tool_calls[0].id, /^toolu_fake/);
    assert.deepEqual({ ...message.tool_calls[0], id: undefined }, { id: undefined, type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } });
    assert.deepEqual(message.thinking_blocks, [{ type: 'thinking', thinking: 'Paris needs the weather tool.', signature: message.thinking_blocks[0].signature }]);

    // The thinking block goes back unchanged before the tool_use it came with (the fake refuses the turn otherwise).
    const next = await chat({ model: 'claude-opus-5-5', stream: false, tools: [WEATHER_TOOL], messages: [{ role: 'user', content: 'Weather in Paris?' }, message, { role: 'tool', tool_call_id: message.tool_calls[0].id, content: 'sunny' }] });
    assert.equal(next.status, 200, await next.clone().text());
    assert.deepEqual((fake.bodies().at(-1)!.messages as Json[])[1].content[0], message.thinking_blocks[0]);

    fake.script({ kind: 'tool_use', name: 'get_weather', input: { city: 'Lyon', days: 3 } });
    const streamed = await chatStream(await chat({ model: 'claude-opus-5-5', messages: [{ role: 'user', content: 'And Lyon?' }], tools: [WEATHER_TOOL], tool_choice: { type: 'function', function: { name: 'get_weather' } } }));
    assert.deepEqual(fake.bodies().at(-1)!.tool_choice, { type: 'tool', name: 'get_weather' });
    const deltas = streamed.chunks.flatMap((c) => c.choices?.[0]?.delta?.tool_calls ?? []);
    assert.equal(deltas[0].index, 0);
    assert.match(deltas[0].id, /^toolu_fake/);
    assert.deepEqual(deltas[0].function, { name: 'get_weather', arguments: '' });
    assert.ok(deltas.length > 2, 'the arguments come in fragments');
    assert.ok(deltas.every((d) => d.index === 0));
    assert.deepEqual(JSON.parse(deltas.map((d) => d.function.arguments).join('')), { city: 'Lyon', days: 3 });
    assert.equal(streamed.chunks.at(-2).choices[0].finish_reason, 'tool_calls');
  });

  it('sends tool calls and their results back as tool_use and one user turn of tool_result blocks', async () => {
    const res = await chat({
      model: 'claude-sonnet-5-5',
      stream: false,
      messages: [
        { role: 'user', content: 'Weather in Paris and Rome?' },
        { role: 'assistant', content: null, tool_calls: [
          { id: 'toolu_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
          { id: 'toolu_b', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } },
        ] },
        { role: 'tool', tool_call_id: 'toolu_a', content: 'sunny' },
        { role: 'tool', tool_call_id: 'toolu_b', content: [{ type: 'text', text: 'rainy' }] },
      ],
      tools: [WEATHER_TOOL],
    });
    const body: Json = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    const sent = fake.bodies().at(-1)!;
    assert.deepEqual(sent.messages, [
      { role: 'user', content: 'Weather in Paris and Rome?' },
      { role: 'assistant', content: [
        { type: 'tool_use', id: 'toolu_a', name: 'get_weather', input: { city: 'Paris' } },
        { type: 'tool_use', id: 'toolu_b', name: 'get_weather', input: { city: 'Rome' } },
      ] },
      { role: 'user', content: [
        { type: 'tool_result', tool_use_id: 'toolu_a', content: 'sunny' },
        { type: 'tool_result', tool_use_id: 'toolu_b', content: [{ type: 'text', text: 'rainy' }] },
      ] },
    ]);
    assert.equal(sent.tool_choice, undefined, 'no tool_choice without the client\'s');
    assert.equal(body.choices[0].message.content, 'Echo: <tool_result sunny> <tool_result [{"type":"text","text":"rainy"}]>');
  });

  it('maps the stop reasons: max_tokens is length, refusal is content_filter', async () => {
    fake.script({ kind: 'text', text: 'cut short', stopReason: 'max_tokens' }, { kind: 'text', text: 'I cannot', stopReason: 'refusal' });
    const cut: Json = await (await chat({ model: 'claude-sonnet-5-5', stream: false, messages: [{ role: 'user', content: 'long story' }] })).json();
    assert.equal(cut.choices[0].finish_reason, 'length');
    const refused = await chatStream(await chat({ model: 'claude-sonnet-5-5', messages: [{ role: 'user', content: 'something bad' }] }));
    assert.equal(refused.chunks.at(-2).choices[0].finish_reason, 'content_filter');
  });

  it('refuses OpenAI parameters the Messages API has no counterpart for, before calling it', async () => {
    const before = fake.requests.length;
    const res = await chat({ model: 'claude-sonnet-5-5', messages: [{ role: 'user', content: 'hi' }], response_format: { type: 'json_object' } });
    const body: Json = await res.json();
    assert.equal(res.status, 400);
    assert.equal(body.error.code, 'unsupported_parameter');
    assert.equal(body.error.param, 'response_format');
    const many: Json = await (await chat({ model: 'claude-sonnet-5-5', messages: [{ role: 'user', content: 'hi' }], n: 2 })).json();
    assert.equal(many.error.param, 'n');
    assert.equal(fake.requests.length, before, 'nothing was sent');
  });

  it('runs the agent\'s tool loop on Claude: tool_use runs the tool, its result and thinking block go back, the answer streams as agent events', async () => {
    fake.script({ kind: 'tool_use', name: 'generate_image', input: { prompt: 'a red fox', size: '64x64' }, thinking: 'The user wants a picture.' });
    const res = await srv.fetch('/v1/responses', { method: 'POST', token, json: { model: 'claude-sonnet-5-5', input: 'Draw a red fox' } });
    const events = await agentEvents(res);
    const items = runItems(events);
    assert.deepEqual(items.map((i) => i.type), ['tool_call_item', 'tool_call_output_item', 'message_output_item']);
    const [call, output, message] = items;
    assert.equal(call.rawItem.name, 'generate_image');
    assert.deepEqual(JSON.parse(call.rawItem.arguments), { prompt: 'a red fox', size: '64x64' });
    const result = JSON.parse(output.rawItem.output);
    assert.equal(result.status, 'success', output.rawItem.output);

    const [first, second] = fake.bodies().slice(-2);
    assert.equal(first.stream, true);
    assert.ok((first.tools as Json[]).some((t) => t.name === 'generate_image' && t.input_schema.type === 'object'), 'the agent\'s tools as Anthropic tools');
    assert.deepEqual(first.tool_choice, { type: 'auto' });
    const turns = second.messages as Json[];
    assert.deepEqual(turns.at(-2), { role: 'assistant', content: [
      { type: 'thinking', thinking: 'The user wants a picture.', signature: (turns.at(-2).content[0] as Json).signature },
      { type: 'tool_use', id: call.rawItem.callId, name: 'generate_image', input: { prompt: 'a red fox', size: '64x64' } },
    ] }, 'the streamed thinking block goes back, whole, before the tool call');
    assert.match(turns.at(-2).content[0].signature, /^sig_fake/);
    assert.deepEqual(turns.at(-1), { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.rawItem.callId, content: output.rawItem.output }] });
    assert.ok(message.rawItem.content[0].text.includes(result.output[0]), 'Claude read the tool output');
    const deltas = events.filter((e) => e.type === 'raw_model_stream_event').map((e) => e.data.delta).join('');
    assert.equal(deltas, message.rawItem.content[0].text, 'the answer streamed as deltas');
  });
});

describe('Anthropic failures', () => {
  let fake: AnthropicUpstream;
  let srv: TestServer;
  let token: string;
  const chat = (body: Json) => srv.fetch('/v1/chat/completions', { method: 'POST', token, json: body });
  const messages = [{ role: 'user', content: 'hello' }];

  before(async () => {
    process.env[KEY_ENV] = KEY;
    fake = await new AnthropicUpstream(KEY).listen();
    srv = await gatewayOn(fake, 1000);
    token = await srv.tokenFor('bob');
  });
  after(async () => {
    await srv?.close();
    await fake?.close();
    delete process.env[KEY_ENV];
  });

  it('tries 529 overloaded_error, 429 and 5xx again, and gives up with 502 after the retries', async () => {
    let before = fake.requests.length;
    fake.inject('POST', '/v1/messages', anthropicError(529, 'overloaded_error', 'Overloaded'));
    fake.inject('POST', '/v1/messages', anthropicError(429, 'rate_limit_error', 'Number of requests has exceeded your rate limit', { 'retry-after': '0' }));
    const ok = await chat({ model: 'claude-sonnet-5-5', messages, stream: false });
    assert.equal(ok.status, 200);
    assert.equal(fake.requests.length - before, 3, 'two failures, then the answer');

    before = fake.requests.length;
    for (let i = 0; i < 3; i++) fake.inject('POST', '/v1/messages', anthropicError(500, 'api_error', 'Internal server error'));
    const failed = await chat({ model: 'claude-sonnet-5-5', messages, stream: false });
    const body: Json = await failed.json();
    assert.equal(failed.status, 502);
    assert.equal(body.error.code, 'upstream_error');
    assert.match(body.error.message, /HTTP 500: Internal server error/);
    assert.equal(fake.requests.length - before, 3, 'the first try and two retries');
  });

  it('does not try a 400 refusal again: the caller gets 400 with Anthropic\'s message', async () => {
    const before = fake.requests.length;
    fake.inject('POST', '/v1/messages', anthropicError(400, 'invalid_request_error', 'Output blocked by content filtering policy'));
    const res = await chat({ model: 'claude-sonnet-5-5', messages, stream: false });
    const body: Json = await res.json();
    assert.equal(res.status, 400);
    assert.equal(body.error.code, 'invalid_request');
    assert.match(body.error.message, /Output blocked by content filtering policy/);
    assert.equal(fake.requests.length - before, 1);
  });

  it('ends a stream with an error event when Anthropic sends an error event or stops without message_stop', async () => {
    fake.script({ kind: 'stream_error', afterDeltas: 2, type: 'overloaded_error', message: 'Overloaded' }, { kind: 'no_stop' });
    const overloaded = await chatStream(await chat({ model: 'claude-sonnet-5-5', messages: [{ role: 'user', content: 'one two three four' }] }));
    assert.equal(overloaded.done, false);
    assert.equal(overloaded.error.error.code, 'upstream_error');
    assert.match(overloaded.error.error.message, /overloaded_error: Overloaded/);
    assert.equal(contentOf(overloaded.chunks), 'Echo: one', 'what came before the error');

    const unfinished = await chatStream(await chat({ model: 'claude-sonnet-5-5', messages }));
    assert.equal(unfinished.done, false);
    assert.match(unfinished.error.error.message, /without message_stop/);
  });

  it('answers 504 when Anthropic does not answer in time', async () => {
    fake.script({ kind: 'hang' });
    const before = fake.requests.length;
    const res = await chat({ model: 'claude-sonnet-5-5', messages, stream: false });
    const body: Json = await res.json();
    assert.equal(res.status, 504);
    assert.equal(body.error.code, 'upstream_timeout');
    assert.equal(fake.requests.length - before, 1, 'a request that may have been acted on is not sent again');
  });
});
