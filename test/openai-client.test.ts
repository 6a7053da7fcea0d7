import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { createParser } from 'eventsource-parser';
import { startTestServer, type TestServer } from './support/server.ts';
import { startFakeChatUpstream, type FakeChatUpstream } from './fakes/openai-chat-upstream.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

describe('the official openai client against Gengate', () => {
  let fake: FakeChatUpstream;
  let srv: TestServer;
  let client: OpenAI;
  let token: string;

  before(async () => {
    fake = await startFakeChatUpstream();
    // gpt-4.1 goes to the fake upstream; deepseek and the image models run on the local engine.
    srv = await startTestServer({
      GENGATE_CONFIG: JSON.stringify({ providers: { openai: { base_url: fake.url }, deepseek: { adapter: 'local' }, volcengine: { adapter: 'local' } } }),
    });
    token = await srv.tokenFor('erin');
    client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: token, maxRetries: 0 });
  });
  after(async () => {
    await srv?.close();
    await fake?.close();
  });

  it('streams a chat completion', async () => {
    const stream = await client.chat.completions.create({ model: 'deepseek-chat', messages: [{ role: 'user', content: 'Hello client' }], stream: true });
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    assert.equal(chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), 'You said: Hello client (message 1 of this conversation, answered by the local model deepseek-chat)');
    assert.ok(chunks.every((c) => c.object === 'chat.completion.chunk' && c.model === 'deepseek-chat'));
    const usage = chunks[chunks.length - 1].usage;
    assert.ok(usage && usage.total_tokens === usage.prompt_tokens + usage.completion_tokens && usage.completion_tokens > 0);
  });

  it('answers a non-streamed chat completion when stream is false', async () => {
    const completion = await client.chat.completions.create({ model: 'gpt-4.1', messages: [{ role: 'user', content: 'Hi upstream' }], stream: false });
    assert.equal(completion.object, 'chat.completion');
    assert.equal(completion.model, 'gpt-4.1');
    assert.equal(completion.choices[0].message.content, 'Echo: Hi upstream');
    assert.deepEqual([completion.usage?.prompt_tokens, completion.usage?.completion_tokens, completion.usage?.total_tokens], [2, 3, 5]);
  });

  it('puts a streamed tool call back together with the client helper', async () => {
    const runner = client.chat.completions.stream({
      model: 'deepseek-chat',
      messages: [{ role: 'user', content: 'call get_time for {"zone": "UTC"}' }],
      tools: [{ type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: { zone: { type: 'string' } } } } }],
    });
    const final = await runner.finalChatCompletion();
    assert.equal(final.choices[0].finish_reason, 'tool_calls');
    const call = final.choices[0].message.tool_calls?.[0];
    assert.ok(call?.type === 'function');
    assert.equal(call.function.name, 'get_time');
    assert.deepEqual(JSON.parse(call.function.arguments), { zone: 'UTC' });
  });

  it('raises the gateway errors as the client error classes, before and during a stream', async () => {
    await assert.rejects(client.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] }), (err: unknown) => {
      assert.ok(err instanceof OpenAI.NotFoundError);
      assert.equal(err.code, 'model_not_found');
      assert.equal(err.param, 'model');
      return true;
    });
    fake.script({ kind: 'error_frame', afterChunks: 1, message: 'model overloaded' });
    const stream = await client.chat.completions.create({ model: 'gpt-4.1', messages: [{ role: 'user', content: 'one two three' }], stream: true });
    const seen: string[] = [];
    await assert.rejects(async () => {
      for await (const chunk of stream) seen.push(chunk.choices[0]?.delta.content ?? '');
    }, (err: unknown) => err instanceof OpenAI.APIError && /model overloaded/.test(err.message));
    assert.equal(seen.join(''), 'Echo:', 'the chunks before the failure arrived');
  });

  it('generates an image on the local engine', async () => {
    const image = await client.images.generate({ model: 'seedream-4.0', prompt: 'a red fox', size: '256x256' });
    assert.equal(typeof image.created, 'number');
    const url = image.data?.[0]?.url;
    assert.ok(url, 'data[0].url');
    const file = await fetch(url);
    assert.equal(file.status, 200);
    assert.match(file.headers.get('content-type') ?? '', /^image\//);
  });

  it('lists the models', async () => {
    const ids: string[] = [];
    for await (const model of client.models.list()) {
      assert.equal(model.object, 'model');
      ids.push(model.id);
    }
    assert.ok(ids.includes('gpt-4.1') && ids.includes('seedream-4.0'), ids.join(', '));
  });

  it('sends exactly the OpenAI chunk shapes, read with a standard SSE parser', async () => {
    const res = await fetch(`${srv.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'deepseek-chat', messages: [{ role: 'user', content: 'shape check' }] }),
    });
    assert.equal(res.headers.get('content-type'), 'text/event-stream; charset=utf-8');
    const events: { event?: string; data: string }[] = [];
    const parser = createParser({ onEvent: (e) => void events.push(e) });
    parser.feed(await res.text());
    assert.ok(events.every((e) => e.event === undefined), 'plain data events');
    assert.equal(events[events.length - 1].data, '[DONE]');
    const chunks: Json[] = events.slice(0, -1).map((e) => JSON.parse(e.data));
    for (const chunk of chunks.slice(0, -1)) {
      assert.deepEqual(Object.keys(chunk), ['id', 'object', 'created', 'model', 'choices', 'usage']);
      assert.equal(chunk.usage, null);
      assert.equal(chunk.choices.length, 1);
      assert.deepEqual(Object.keys(chunk.choices[0]), ['index', 'delta', 'finish_reason', 'logprobs']);
    }
    assert.deepEqual(chunks[0].choices[0].delta, { role: 'assistant', content: '' });
    assert.deepEqual(chunks[chunks.length - 2].choices[0], { index: 0, delta: {}, finish_reason: 'stop', logprobs: null });
    const usageChunk = chunks[chunks.length - 1];
    assert.deepEqual(Object.keys(usageChunk), ['id', 'object', 'created', 'model', 'choices', 'usage']);
    assert.deepEqual(usageChunk.choices, []);
    assert.deepEqual(Object.keys(usageChunk.usage), ['prompt_tokens', 'completion_tokens', 'total_tokens']);
  });
});
