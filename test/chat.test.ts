import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import http from 'node:http';
import { startTestServer, type TestServer } from './support/server.ts';
import { startFakeChatUpstream, type Behaviour, type FakeChatUpstream } from './fakes/openai-chat-upstream.ts';
import { contentOf, sseData } from './support/sse.ts';
import { eventually } from './support/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const API_KEY_ENV = 'CHAT_TEST_OPENAI_KEY';
const API_KEY = 'sk-test-chat-123';

async function allEvents(res: Response): Promise<string[]> {
  const events: string[] = [];
  for await (const data of sseData(res)) events.push(data);
  return events;
}

/** The chunks of a finished stream (without [DONE]) and whether it ended with [DONE]. */
async function stream(res: Response): Promise<{ chunks: Json[]; done: boolean }> {
  assert.equal(res.status, 200, `stream answered ${res.status}`);
  assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
  const events = await allEvents(res);
  const done = events[events.length - 1] === '[DONE]';
  assert.ok(events.slice(0, done ? -1 : undefined).every((e) => e !== '[DONE]'), '[DONE] only at the end');
  return { chunks: events.filter((e) => e !== '[DONE]').map((e) => JSON.parse(e)), done };
}

function assertApiError(body: Json, code: string, param: string | null): void {
  assert.deepEqual(Object.keys(body), ['error']);
  assert.equal(body.error.code, code, JSON.stringify(body));
  assert.equal(body.error.param, param, JSON.stringify(body));
  assert.equal(typeof body.error.message, 'string');
  assert.equal(typeof body.error.type, 'string');
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const WAV = Buffer.concat([Buffer.from('RIFF\x24\x00\x00\x00WAVEfmt ', 'latin1'), Buffer.alloc(24, 1)]);
const PDF = Buffer.from('%PDF-1.4\n1 0 obj <<>> endobj\n%%EOF\n');
const MP4 = Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypisom', 'latin1'), Buffer.alloc(12, 2)]);
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');

describe('chat completions through an OpenAI-compatible upstream', () => {
  let fake: FakeChatUpstream;
  let srv: TestServer;
  let token: string;
  let other: string;
  const chat = (body: Json, who = token, init: RequestInit = {}) => srv.fetch('/v1/chat/completions', { method: 'POST', token: who, json: body, ...init });

  before(async () => {
    process.env[API_KEY_ENV] = API_KEY;
    fake = await startFakeChatUpstream();
    const retry = { attempts: 2, base_delay_ms: 1, max_delay_ms: 1500 };
    srv = await startTestServer({
      GENGATE_CONFIG: JSON.stringify({
        providers: {
          openai: { base_url: fake.url, api_key_env: API_KEY_ENV, timeout_ms: 10_000, retry },
          qwen: { base_url: fake.url, timeout_ms: 10_000, retry },
          deepseek: { adapter: 'local' },
        },
        models: { 'gpt-4o-mini': { enabled: false, disabled_reason: 'quota exhausted' } },
      }),
    });
    token = await srv.tokenFor('alice');
    other = await srv.tokenFor('bob');
  });
  after(async () => {
    await srv?.close();
    await fake?.close();
    delete process.env[API_KEY_ENV];
  });

  it('streams by default: the exact body and headers go upstream, chunks come back one by one under the catalog alias, then usage and [DONE]', async () => {
    const before = fake.requests.length;
    const res = await chat({
      model: 'gpt-4.1',
      messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello there, upstream' }],
      temperature: 0.5,
      max_tokens: 20,
      stop: ['\n\n'],
      user: 'end-user-7',
      top_k: 5,
    });
    const { chunks, done } = await stream(res);
    assert.ok(done, 'the stream ends with [DONE]');
    assert.match(res.headers.get('x-request-id') ?? '', /.+/);

    const sent = fake.requests.slice(before);
    assert.equal(sent.length, 1);
    assert.equal(sent[0].path, '/v1/chat/completions');
    assert.equal(sent[0].headers.authorization, `Bearer ${API_KEY}`);
    assert.equal(sent[0].headers['content-type'], 'application/json');
    assert.equal(sent[0].headers.accept, 'text/event-stream');
    assert.deepEqual(sent[0].body, {
      model: 'gpt-4.1',
      messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello there, upstream' }],
      temperature: 0.5,
      stop: ['\n\n'],
      user: 'end-user-7',
      top_k: 5,
      // The catalog says gpt-4.1 takes max_completion_tokens.
      max_completion_tokens: 20,
      stream: true,
      stream_options: { include_usage: true },
    });

    assert.ok(chunks.length >= 5, `several chunks, got ${chunks.length}`);
    for (const chunk of chunks) {
      assert.equal(chunk.object, 'chat.completion.chunk');
      assert.equal(chunk.model, 'gpt-4.1', 'the catalog alias, not the upstream snapshot name');
      assert.equal(chunk.id, chunks[0].id);
      assert.equal(typeof chunk.created, 'number');
      assert.equal(chunk.system_fingerprint, 'fp_fake', 'upstream fields pass through');
    }
    assert.equal(contentOf(chunks), 'Echo: Hello there, upstream');
    const last = chunks[chunks.length - 1];
    assert.deepEqual(last.choices, []);
    assert.deepEqual(last.usage, { prompt_tokens: 5, completion_tokens: 4, total_tokens: 9 });
    assert.equal(chunks[chunks.length - 2].choices[0].finish_reason, 'stop');
  });

  it('names who served a call in its headers and its ledger row alike, streamed or not', async () => {
    for (const streamed of [true, false]) {
      const res = await chat({ model: 'gpt-4.1', messages: [{ role: 'user', content: 'who serves this?' }], stream: streamed });
      assert.equal(res.status, 200);
      await res.arrayBuffer();
      const served = ['x-gengate-model', 'x-gengate-provider', 'x-gengate-channel'].map((h) => res.headers.get(h));
      assert.equal(served[0], 'gpt-4.1');
      assert.equal(served[1], 'openai');
      assert.equal(typeof served[2], 'string');
      const row = await eventually('the call\'s ledger row', async () => {
        const ledger: Json = await (await srv.fetch('/admin/requests?user_id=alice&limit=200', { token: srv.adminToken })).json();
        return ledger.data.find((r: Json) => r.request_id === res.headers.get('x-request-id'));
      });
      assert.deepEqual([row.model, row.provider, row.channel], served, streamed ? 'streamed' : 'not streamed');
    }
  });

  it('answers a chat.completion with usage when stream is false, without stream options upstream', async () => {
    const before = fake.requests.length;
    const res = await chat({ model: 'gpt-4.1', messages: [{ role: 'user', content: 'one two three' }], stream: false, stream_options: { include_usage: true }, max_completion_tokens: 9 });
    assert.equal(res.status, 200);
    const body = await res.json();
    assert.equal(body.object, 'chat.completion');
    assert.equal(body.model, 'gpt-4.1');
    assert.deepEqual(body.choices[0].message, { role: 'assistant', content: 'Echo: one two three', refusal: null, annotations: [] });
    assert.equal(body.choices[0].finish_reason, 'stop');
    assert.deepEqual(body.usage, { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } });
    const sent = fake.requests.slice(before);
    assert.equal(sent[0].headers.accept, 'application/json');
    assert.deepEqual(sent[0].body, { model: 'gpt-4.1', messages: [{ role: 'user', content: 'one two three' }], max_completion_tokens: 9, stream: false });
  });

  it('sends an OpenAI upstream a conversation from a Claude model without its thinking blocks', async () => {
    const before = fake.requests.length;
    const thinking = [{ type: 'thinking', thinking: 'The user greets me.', signature: 'sig' }];
    const messages = [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'Hello.', thinking_blocks: thinking }, { role: 'user', content: 'again' }];
    const res = await chat({ model: 'gpt-4.1', messages, stream: false });
    assert.equal(res.status, 200);
    await res.arrayBuffer();
    assert.deepEqual(fake.requests[before].body.messages, [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'Hello.' }, { role: 'user', content: 'again' }]);
  });

  it('refuses wrong types and missing fields with 400 naming the field', async () => {
    const user = (content: Json) => [{ role: 'user', content }];
    const cases: [Json, string, string | null][] = [
      [{ messages: user('hi') }, 'missing_parameter', 'model'],
      [{ model: 'gpt-4.1' }, 'missing_parameter', 'messages'],
      [{ model: 'gpt-4.1', messages: [] }, 'invalid_parameter', 'messages'],
      [{ model: 'gpt-4.1', messages: user('hi'), temperature: 'hot' }, 'invalid_parameter', 'temperature'],
      [{ model: 'gpt-4.1', messages: user('hi'), temperature: 3 }, 'invalid_parameter', 'temperature'],
      [{ model: 'gpt-4.1', messages: user('hi'), stream: 'yes' }, 'invalid_parameter', 'stream'],
      [{ model: 'gpt-4.1', messages: user('hi'), n: 2 }, 'invalid_parameter', 'n'],
      [{ model: 'gpt-4.1', messages: user('hi'), max_tokens: 0 }, 'invalid_parameter', 'max_tokens'],
      [{ model: 'gpt-4.1', messages: user('hi'), stop: 7 }, 'invalid_parameter', 'stop'],
      [{ model: 'gpt-4.1', messages: user('hi'), tools: [{ type: 'function', function: {} }] }, 'missing_parameter', 'tools[0].function.name'],
      [{ model: 'gpt-4.1', messages: user('hi'), tool_choice: 'sometimes' }, 'invalid_parameter', 'tool_choice'],
      [{ model: 'gpt-4.1', messages: user('hi'), conversationId: 42 }, 'invalid_parameter', 'conversationId'],
      [{ model: 'gpt-4.1', messages: [{ role: 'robot', content: 'hi' }] }, 'invalid_parameter', 'messages[0].role'],
      [{ model: 'gpt-4.1', messages: [{ role: 'user' }] }, 'missing_parameter', 'messages[0].content'],
      [{ model: 'gpt-4.1', messages: [{ role: 'tool', content: 'x' }] }, 'missing_parameter', 'messages[0].tool_call_id'],
      [{ model: 'gpt-4.1', messages: user(5) }, 'invalid_parameter', 'messages[0].content'],
      [{ model: 'gpt-4.1', messages: user([{ type: 'text' }]) }, 'missing_parameter', 'messages[0].content[0].text'],
      [{ model: 'gpt-4.1', messages: user([{ type: 'hologram' }]) }, 'invalid_parameter', 'messages[0].content[0].type'],
      [{ model: 'gpt-4.1', messages: user([{ type: 'text', text: 'a' }, { type: 'image_url', image_url: {} }]) }, 'missing_parameter', 'messages[0].content[1].image_url.url'],
      [{ model: 'gpt-4.1', messages: user([{ type: 'input_audio', input_audio: { data: 'not base64!' } }]) }, 'invalid_parameter', 'messages[0].content[0].input_audio.data'],
      [{ model: 'gpt-4.1', messages: user([{ type: 'file', file: { file_id: 'file-abc' } }]) }, 'unsupported_parameter', 'messages[0].content[0].file.file_id'],
    ];
    for (const [body, code, param] of cases) {
      const res = await chat(body);
      assert.equal(res.status, 400, `${JSON.stringify(body)} → ${res.status}`);
      assertApiError(await res.json(), code, param);
    }
    const bad = await srv.fetch('/v1/chat/completions', { method: 'POST', token, headers: { 'content-type': 'application/json' }, body: '{"model": ' });
    assert.equal(bad.status, 400);
    assertApiError(await bad.json(), 'invalid_json', null);
  });

  it('answers 404 for an unknown model, 400 for a model that cannot chat or is disabled, 401 without a token', async () => {
    const messages = [{ role: 'user', content: 'hi' }];
    const unknown = await chat({ model: 'no-such-model', messages });
    assert.equal(unknown.status, 404);
    assertApiError(await unknown.json(), 'model_not_found', 'model');
    const image = await chat({ model: 'seedream-4.0', messages });
    assert.equal(image.status, 400);
    assertApiError(await image.json(), 'model_capability_mismatch', 'model');
    const disabled = await chat({ model: 'gpt-4o-mini', messages });
    assert.equal(disabled.status, 400);
    assertApiError(await disabled.json(), 'model_disabled', 'model');
    const anonymous = await srv.fetch('/v1/chat/completions', { method: 'POST', json: { model: 'gpt-4.1', messages } });
    assert.equal(anonymous.status, 401);
  });

  it('normalises content parts: urls become url, base64 media is uploaded for the caller, media the model cannot read becomes a text link', async () => {
    const parts = [
      { type: 'text', text: 'Look at these' },
      { type: 'image_url', image_url: { urls: ['https://img.example/a.png', 'https://img.example/b.png'] } },
      { type: 'input_audio', input_audio: { data: WAV.toString('base64'), format: 'wav' } },
      { type: 'file', file: { file_data: `data:application/pdf;base64,${PDF.toString('base64')}`, filename: 'report.pdf' } },
      { type: 'video_url', video_url: { url: `data:video/mp4;base64,${MP4.toString('base64')}` } },
      { type: 'audio_url', audio_url: { url: 'https://sound.example/s.mp3' } },
      { type: 'file_url', file_url: { url: 'https://docs.example/notes.txt', fileName: 'notes.txt' } },
    ];
    const before = fake.requests.length;
    // gpt-4.1 reads images only.
    const res = await chat({ model: 'gpt-4.1', stream: false, messages: [{ role: 'user', content: parts }] });
    assert.equal(res.status, 200, await res.clone().text());
    const content = fake.requests[before].body.messages[0].content;
    const fileLink = new RegExp(`^\\[(audio|file|video): (${srv.url.replace(/[.]/g, '\\.')}/files/[\\w-]+/([\\w.]+))\\]$`);
    assert.deepEqual(content.slice(0, 3), [
      { type: 'text', text: 'Look at these' },
      { type: 'image_url', image_url: { url: 'https://img.example/a.png' } },
      { type: 'image_url', image_url: { url: 'https://img.example/b.png' } },
    ]);
    const links = content.slice(3, 6).map((p: Json) => {
      assert.equal(p.type, 'text');
      const match = fileLink.exec(p.text);
      assert.ok(match, `a link to an uploaded file: ${p.text}`);
      return { kind: match[1], url: match[2], name: match[3] };
    });
    assert.deepEqual(links.map((l: Json) => [l.kind, l.name]), [['audio', 'audio.wav'], ['file', 'report.pdf'], ['video', 'video.mp4']]);
    for (const [link, bytes, type] of [[links[0], WAV, 'audio/wav'], [links[1], PDF, 'application/pdf'], [links[2], MP4, 'video/mp4']] as const) {
      const file = await fetch(link.url);
      assert.equal(file.status, 200);
      assert.equal(file.headers.get('content-type')?.split(';')[0], type);
      assert.deepEqual(Buffer.from(await file.arrayBuffer()), bytes);
    }
    assert.deepEqual(content.slice(6), [
      { type: 'text', text: '[audio: https://sound.example/s.mp3]' },
      { type: 'text', text: '[file: https://docs.example/notes.txt]' },
    ]);

    // An omni model reads audio and video natively (by URL); files stay links.
    const omni = await chat({ model: 'qwen3-omni-flash', stream: false, messages: [{ role: 'user', content: parts.slice(2, 5) }] });
    assert.equal(omni.status, 200);
    const native = fake.requests[fake.requests.length - 1].body.messages[0].content;
    assert.equal(native[0].type, 'input_audio');
    assert.deepEqual(Object.keys(native[0].input_audio), ['url', 'format']);
    assert.match(native[0].input_audio.url, /\/files\/[\w-]+\/audio\.wav$/);
    assert.equal(native[0].input_audio.format, 'wav');
    assert.match(native[1].text, /^\[file: .*\/report\.pdf\]$/);
    assert.equal(native[2].type, 'video_url');
    assert.match(native[2].video_url.url, /\/files\/[\w-]+\/video\.mp4$/);
  });

  it('relays a streamed tool call and returns one from a non-streamed call', async () => {
    const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
    fake.script({ kind: 'tool_call', name: 'get_weather', arguments: '{"city":"Paris"}' });
    const { chunks, done } = await stream(await chat({ model: 'gpt-4.1', messages: [{ role: 'user', content: 'weather?' }], tools, tool_choice: 'auto' }));
    assert.ok(done);
    const args = chunks.flatMap((c) => c.choices[0]?.delta?.tool_calls ?? []).map((t: Json) => t.function.arguments ?? '').join('');
    assert.equal(args, '{"city":"Paris"}');
    assert.equal(chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0].finish_reason, 'tool_calls');
    assert.deepEqual(fake.requests[fake.requests.length - 1].body.tools, tools);

    fake.script({ kind: 'tool_call', name: 'get_weather', arguments: '{"city":"Oslo"}' });
    const res = await chat({ model: 'gpt-4.1', stream: false, messages: [{ role: 'user', content: 'weather?' }], tools });
    const body = await res.json();
    assert.equal(body.choices[0].finish_reason, 'tool_calls');
    assert.deepEqual(body.choices[0].message.tool_calls, [{ id: 'call_fake1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }]);
  });

  it('passes chunks through as they arrive, without waiting for the end of the upstream answer', async () => {
    let release!: () => void;
    fake.script({ kind: 'hold', afterChunks: 1, release: new Promise<void>((resolve) => (release = resolve)) });
    const res = await chat({ model: 'gpt-4.1', messages: [{ role: 'user', content: 'alpha beta gamma delta' }] });
    assert.equal(res.status, 200);
    const events = sseData(res);
    const seen: Json[] = [];
    // The upstream holds after "Echo:"; that chunk must already be here.
    while (contentOf(seen) !== 'Echo:') {
      const next = await events.next();
      assert.ok(!next.done, 'the stream went on');
      seen.push(JSON.parse(next.value));
    }
    release();
    const rest: string[] = [];
    for await (const data of { [Symbol.asyncIterator]: () => events }) rest.push(data);
    assert.equal(rest[rest.length - 1], '[DONE]');
    assert.equal(contentOf([...seen, ...rest.slice(0, -1).map((e) => JSON.parse(e))]), 'Echo: alpha beta gamma delta');
  });

  it('retries 429 (honouring Retry-After) and 5xx before answering, and gives up with the contract errors', async () => {
    const messages = [{ role: 'user', content: 'retry me' }];
    let before = fake.requests.length;
    fake.script({ kind: 'status', status: 429, headers: { 'retry-after': '0' } }, { kind: 'status', status: 503 });
    const { done } = await stream(await chat({ model: 'gpt-4.1', messages }));
    assert.ok(done);
    assert.equal(fake.requests.length - before, 3, 'two failures, then the answer');
    assert.deepEqual(fake.requests[before].body, fake.requests[before + 2].body, 'the same body every time');

    before = fake.requests.length;
    fake.script({ kind: 'status', status: 429, headers: { 'retry-after': '1' } });
    const started = Date.now();
    const waited = await chat({ model: 'gpt-4.1', messages, stream: false });
    assert.equal(waited.status, 200);
    assert.ok(Date.now() - started >= 950, `the retry waited for Retry-After (${Date.now() - started} ms)`);
    assert.equal(fake.requests.length - before, 2);

    before = fake.requests.length;
    fake.script({ kind: 'status', status: 500, message: 'boom 1' }, { kind: 'status', status: 500, message: 'boom 2' }, { kind: 'status', status: 500, message: 'boom 3' });
    const failed = await chat({ model: 'gpt-4.1', messages });
    assert.equal(failed.status, 502);
    const failure = await failed.json();
    assertApiError(failure, 'upstream_error', null);
    assert.equal(failure.error.type, 'upstream_error');
    assert.match(failure.error.message, /openai answered HTTP 500: boom 3/);
    assert.equal(fake.requests.length - before, 3, 'the first try and two retries');

    before = fake.requests.length;
    fake.script({ kind: 'status', status: 429, headers: { 'retry-after': '3600' }, message: 'slow down' });
    const limited = await chat({ model: 'gpt-4.1', messages, stream: false });
    assert.equal(limited.status, 429);
    assert.equal(limited.headers.get('retry-after'), '3600');
    assertApiError(await limited.json(), 'rate_limited', null);
    assert.equal(fake.requests.length - before, 1, 'a wait longer than the retry policy is left to the client');

    before = fake.requests.length;
    fake.script({ kind: 'status', status: 400, message: "Invalid value for 'top_k'" });
    const refused = await chat({ model: 'gpt-4.1', messages, stream: false });
    assert.equal(refused.status, 400);
    const refusal = await refused.json();
    assertApiError(refusal, 'invalid_request', null);
    assert.match(refusal.error.message, /Invalid value for 'top_k'/);
    assert.equal(fake.requests.length - before, 1, 'a refusal is not retried');
    // The upstream refused a call that ran: an error in the ledger, not a refusal of the gateway.
    const ledger: Json = await (await srv.fetch('/admin/requests?user_id=alice&limit=200', { token: srv.adminToken })).json();
    const row = ledger.data.find((r: Json) => r.request_id === refused.headers.get('x-request-id'));
    assert.deepEqual([row?.status, row?.http_status, row?.model], ['error', 400, 'gpt-4.1']);
  });

  it('ends a stream that fails midway with an error event and no [DONE]', async () => {
    const messages = [{ role: 'user', content: 'one two three four five' }];
    const cases: [Parameters<FakeChatUpstream['script']>[0], RegExp][] = [
      [{ kind: 'reset_mid_stream', afterChunks: 2 }, /openai stream broke off/],
      [{ kind: 'error_frame', afterChunks: 2, message: 'model overloaded' }, /model overloaded/],
      [{ kind: 'bad_frame', afterChunks: 2 }, /not JSON/],
      [{ kind: 'no_done' }, /without \[DONE\]/],
    ];
    for (const [behaviour, message] of cases) {
      fake.script(behaviour);
      const { chunks, done } = await stream(await chat({ model: 'gpt-4.1', messages }));
      assert.equal(done, false, `${behaviour.kind}: no [DONE]`);
      const last = chunks[chunks.length - 1];
      assertApiError(last, 'upstream_error', null);
      assert.match(last.error.message, message);
      if (behaviour.kind !== 'no_done') assert.equal(contentOf(chunks.slice(0, -1)), 'Echo: one', `${behaviour.kind}: the chunks before the failure arrived`);
    }
  });

  it('always ends a stream with a usage chunk, estimated when the upstream sends none', async () => {
    fake.script({ kind: 'no_usage' });
    // Escaped in the upstream's JSON (quotes, a line break, a backslash) and beyond ASCII: counted as the decoded text.
    const question = 'count "these" words\nplease \\ café 😀 \u0001';
    const { chunks, done } = await stream(await chat({ model: 'gpt-4.1', messages: [{ role: 'user', content: question }] }));
    assert.ok(done);
    const last = chunks[chunks.length - 1];
    assert.deepEqual(last.choices, []);
    assert.equal(last.model, 'gpt-4.1');
    // Four characters to a token, of the prompt's text and of the streamed answer's.
    assert.equal(last.usage.prompt_tokens, Math.ceil(question.length / 4));
    assert.ok(contentOf(chunks).includes(question), 'the answer repeats the question');
    assert.equal(last.usage.completion_tokens, Math.ceil(contentOf(chunks).length / 4));
    assert.ok(last.usage.completion_tokens > 0);
    assert.equal(last.usage.total_tokens, last.usage.prompt_tokens + last.usage.completion_tokens);
  });

  it('aborts the upstream call when the client disconnects, streaming or not', async () => {
    let release!: () => void;
    fake.script({ kind: 'hold', afterChunks: 1, release: new Promise<void>((resolve) => (release = resolve)) });
    const client = new AbortController();
    const res = await chat({ model: 'gpt-4.1', messages: [{ role: 'user', content: 'long answer here' }] }, token, { signal: client.signal });
    const events = sseData(res);
    assert.ok(!(await events.next()).done);
    const abortSeen = fake.nextAbort();
    client.abort();
    const aborted = await abortSeen;
    assert.equal(aborted.body.messages[0].content, 'long answer here');
    release();

    fake.script({ kind: 'hang' });
    const waiting = new AbortController();
    const received = fake.nextRequest();
    const pending = chat({ model: 'gpt-4.1', stream: false, messages: [{ role: 'user', content: 'never answered' }] }, token, { signal: waiting.signal }).catch((err: Error) => err);
    // Abort once the upstream has the request.
    assert.equal((await received).body.messages[0].content, 'never answered');
    const hangSeen = fake.nextAbort();
    waiting.abort();
    assert.equal((await hangSeen).body.messages[0].content, 'never answered');
    assert.equal(((await pending) as Error).name, 'AbortError');
  });

  it('on a kept-alive connection, answers call after call and still aborts the upstream call of a client that goes away on it', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const sockets = new Set<net.Socket>();
    const post = (content: string, stream: boolean) => http.request(new URL('/v1/chat/completions', srv.url), {
      method: 'POST',
      agent,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    }).on('socket', (socket: net.Socket) => sockets.add(socket)).end(JSON.stringify({ model: 'gpt-4.1', stream, messages: [{ role: 'user', content }] }));
    const answer = (req: http.ClientRequest) => new Promise<{ status: number; text: string }>((resolve, reject) => {
      req.on('error', reject).on('response', (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (d: string) => (text += d)).on('end', () => resolve({ status: res.statusCode!, text }));
      });
    });
    try {
      for (let i = 0; i < 5; i++) {
        const { status, text } = await answer(post(`question ${i}`, i % 2 === 0));
        assert.equal(status, 200);
        assert.ok(i % 2 === 0 ? text.endsWith('data: [DONE]\n\n') : JSON.parse(text).choices[0].message.content, text);
      }
      assert.equal(sockets.size, 1, 'the calls shared one connection');

      let release!: () => void;
      fake.script({ kind: 'hold', afterChunks: 1, release: new Promise<void>((resolve) => (release = resolve)) });
      const req = post('the last question', true);
      const firstChunk = new Promise<void>((resolve) => req.on('response', (res) => res.once('data', () => resolve())));
      await firstChunk;
      assert.equal(sockets.size, 1, 'the stream went on the same connection');
      const abortSeen = fake.nextAbort();
      req.on('error', () => undefined).destroy();
      assert.equal((await abortSeen).body.messages[0].content, 'the last question');
      release();

      // A new connection's calls go on as before.
      const after = await chat({ model: 'gpt-4.1', stream: false, messages: [{ role: 'user', content: 'still here?' }] });
      assert.equal(after.status, 200);
    } finally {
      agent.destroy();
    }
  });

  it('keeps a named conversation per user: history goes first, the reply is stored after the call, streamed or not', async () => {
    const first = await stream(await chat({ model: 'gpt-4.1', conversationId: 'trip', messages: [{ role: 'user', content: 'I am in Rome' }] }));
    assert.ok(first.done);
    const before = fake.requests.length;
    const second = await chat({ model: 'gpt-4.1', conversationId: 'trip', stream: false, messages: [{ role: 'user', content: 'Where am I?' }] });
    assert.equal(second.status, 200);
    assert.deepEqual(fake.requests[before].body.messages, [
      { role: 'user', content: 'I am in Rome' },
      { role: 'assistant', content: 'Echo: I am in Rome' },
      { role: 'user', content: 'Where am I?' },
    ]);
    const third = await stream(await chat({ model: 'gpt-4.1', conversationId: 'trip', messages: [{ role: 'user', content: 'Thanks' }] }));
    assert.ok(third.done);
    assert.deepEqual(fake.requests[before + 1].body.messages.map((m: Json) => m.content), ['I am in Rome', 'Echo: I am in Rome', 'Where am I?', 'Echo: Where am I?', 'Thanks']);

    // Another user's conversation of the same name is its own.
    await chat({ model: 'gpt-4.1', conversationId: 'trip', stream: false, messages: [{ role: 'user', content: 'Hi' }] }, other);
    assert.deepEqual(fake.requests[fake.requests.length - 1].body.messages, [{ role: 'user', content: 'Hi' }]);

    // sessionId names a conversation too; stored media stay URLs, read as links by a model without audio.
    await chat({ model: 'qwen3-omni-flash', sessionId: 's-1', stream: false, messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: WAV.toString('base64'), format: 'wav' } }] }] });
    await chat({ model: 'gpt-4.1', sessionId: 's-1', stream: false, messages: [{ role: 'user', content: 'And now?' }] });
    const history = fake.requests[fake.requests.length - 1].body.messages;
    assert.equal(history.length, 3);
    assert.match(history[0].content[0].text, /^\[audio: http:\/\/127\.0\.0\.1:\d+\/files\/[\w-]+\/audio\.wav\]$/);
  });

  it('does not store a turn whose stream failed', async () => {
    fake.script({ kind: 'reset_mid_stream', afterChunks: 1 });
    const failed = await stream(await chat({ model: 'gpt-4.1', conversationId: 'flaky', messages: [{ role: 'user', content: 'lost words here' }] }));
    assert.equal(failed.done, false);
    const before = fake.requests.length;
    await chat({ model: 'gpt-4.1', conversationId: 'flaky', stream: false, messages: [{ role: 'user', content: 'again' }] });
    assert.deepEqual(fake.requests[before].body.messages, [{ role: 'user', content: 'again' }]);
  });
});

describe('chat upstream failures before an answer', () => {
  let fake: FakeChatUpstream;
  let srv: TestServer;
  let token: string;

  before(async () => {
    fake = await startFakeChatUpstream();
    srv = await startTestServer({
      GENGATE_CONFIG: JSON.stringify({
        providers: {
          openai: { base_url: `http://127.0.0.1:${await closedPort()}/v1`, retry: { attempts: 2, base_delay_ms: 1, max_delay_ms: 10 } },
          qwen: { base_url: fake.url, timeout_ms: 300, retry: { attempts: 0 } },
        },
      }),
    });
    token = await srv.tokenFor('carol');
  });
  after(async () => {
    await srv?.close();
    await fake?.close();
  });

  it('answers 502 when the upstream cannot be reached, and 504 when it does not answer in time', async () => {
    const messages = [{ role: 'user', content: 'anyone?' }];
    const refused = await srv.fetch('/v1/chat/completions', { method: 'POST', token, json: { model: 'gpt-4.1', messages } });
    assert.equal(refused.status, 502);
    const body = await refused.json();
    assertApiError(body, 'upstream_error', null);
    assert.match(body.error.message, /openai could not be reached/);

    fake.script({ kind: 'hang' });
    const slow = await srv.fetch('/v1/chat/completions', { method: 'POST', token, json: { model: 'qwen-plus', messages, stream: false } });
    assert.equal(slow.status, 504);
    assertApiError(await slow.json(), 'upstream_timeout', null);

    // Accepted, but no chunk in time: still an error status, since nothing was streamed yet.
    fake.script({ kind: 'slow', delayMs: 1500 });
    const silent = await srv.fetch('/v1/chat/completions', { method: 'POST', token, json: { model: 'qwen-plus', messages } });
    assert.equal(silent.status, 504);
    assertApiError(await silent.json(), 'upstream_timeout', null);

    // A whole answer that stops halfway, by falling silent (the gap between its bytes is bounded
    // too) or by being cut (the upstream's failure): an error that says so, and not sent again (it ran).
    const brokenOff = async (behaviour: Behaviour, status: number, code: string) => {
      const before = fake.requests.length;
      fake.script(behaviour);
      const res = await srv.fetch('/v1/chat/completions', { method: 'POST', token, json: { model: 'qwen-plus', messages, stream: false } });
      assert.equal(res.status, status, behaviour.kind);
      const body = await res.json();
      assertApiError(body, code, null);
      assert.match(body.error.message, /answer broke off/);
      assert.equal(fake.requests.length - before, 1, behaviour.kind);
    };
    await brokenOff({ kind: 'hold', afterChunks: 0, release: new Promise<void>(() => undefined) }, 504, 'upstream_timeout');
    await brokenOff({ kind: 'reset_mid_stream', afterChunks: 0 }, 502, 'upstream_error');
  });

  it('ends a stream whose upstream falls silent midway with an upstream_timeout event', async () => {
    fake.script({ kind: 'hold', afterChunks: 1, release: new Promise<void>(() => undefined) });
    const res = await srv.fetch('/v1/chat/completions', { method: 'POST', token, json: { model: 'qwen-plus', messages: [{ role: 'user', content: 'one two three' }] } });
    assert.equal(res.status, 200);
    const events = await allEvents(res);
    assert.notEqual(events[events.length - 1], '[DONE]');
    const last = JSON.parse(events[events.length - 1]);
    assertApiError(last, 'upstream_timeout', null);
    assert.equal(contentOf(events.slice(0, -1).map((e) => JSON.parse(e))), 'Echo:');
  });
});

describe('chat on the local engine', () => {
  let srv: TestServer;
  let token: string;
  const chat = (body: Json) => srv.fetch('/v1/chat/completions', { method: 'POST', token, json: body });

  before(async () => {
    srv = await startTestServer();
    token = await srv.tokenFor('dave');
  });
  after(async () => {
    await srv?.close();
  });

  it('answers deterministically from the conversation, streamed in several chunks with counted usage', async () => {
    const body = { model: 'deepseek-chat', messages: [{ role: 'user', content: 'Hello local model' }] };
    const { chunks, done } = await stream(await chat(body));
    assert.ok(done);
    const expected = 'You said: Hello local model (message 1 of this conversation, answered by the local model deepseek-chat)';
    assert.equal(contentOf(chunks), expected);
    assert.ok(chunks.filter((c) => c.choices[0]?.delta?.content).length >= 3, 'several content chunks');
    assert.equal(chunks[0].choices[0].delta.role, 'assistant');
    const usage = chunks[chunks.length - 1].usage;
    assert.deepEqual(usage, { prompt_tokens: 6, completion_tokens: 22, total_tokens: 28 });

    const whole = await (await chat({ ...body, stream: false })).json();
    assert.equal(whole.object, 'chat.completion');
    assert.equal(whole.model, 'deepseek-chat');
    assert.equal(whole.choices[0].message.content, expected);
    assert.deepEqual(whole.usage, usage);

    const cut = await (await chat({ ...body, stream: false, max_tokens: 3 })).json();
    assert.equal(cut.choices[0].message.content, 'You said:');
    assert.equal(cut.choices[0].finish_reason, 'length');
  });

  it('calls a tool the last user message names, then reports the tool result', async () => {
    const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }, { type: 'function', function: { name: 'get_time' } }];
    const ask = { role: 'user', content: 'Please use get_weather with {"city": "Paris"}' };
    const res = await (await chat({ model: 'deepseek-chat', stream: false, tools, messages: [ask] })).json();
    assert.equal(res.choices[0].finish_reason, 'tool_calls');
    const [call] = res.choices[0].message.tool_calls;
    assert.equal(call.function.name, 'get_weather');
    assert.equal(call.function.arguments, '{"city":"Paris"}');
    assert.match(call.id, /^call_[0-9a-f]{24}$/);

    const { chunks } = await stream(await chat({ model: 'deepseek-chat', tools, messages: [ask] }));
    const pieces = chunks.flatMap((c) => c.choices[0]?.delta?.tool_calls ?? []);
    assert.equal(pieces[0].id, call.id, 'the same call, deterministically');
    assert.equal(pieces.map((p: Json) => p.function.arguments ?? '').join(''), call.function.arguments);

    const answered = await (await chat({
      model: 'deepseek-chat', stream: false, tools,
      messages: [ask, { role: 'assistant', content: null, tool_calls: [call] }, { role: 'tool', tool_call_id: call.id, content: '18 C and sunny' }],
    })).json();
    assert.equal(answered.choices[0].message.content, 'Tool results: get_weather returned 18 C and sunny');

    const none = await (await chat({ model: 'deepseek-chat', stream: false, tools, tool_choice: 'none', messages: [ask] })).json();
    assert.equal(none.choices[0].finish_reason, 'stop');
  });

  it('without JSON in the message, fills the tool\'s required text parameters with the message', async () => {
    const tools = [{ type: 'function', function: { name: 'draw', parameters: { type: 'object', required: ['prompt', 'n'], properties: { prompt: { type: 'string' }, n: { type: 'integer' } } } } }];
    const said = 'draw a red fox in the snow';
    const res = await (await chat({ model: 'deepseek-chat', stream: false, tools, messages: [{ role: 'user', content: said }] })).json();
    assert.deepEqual(JSON.parse(res.choices[0].message.tool_calls[0].function.arguments), { prompt: said });
  });

  it('gives a model without image understanding an inline image as a link to the uploaded file', async () => {
    const res = await (await chat({
      model: 'deepseek-chat', stream: false,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG.toString('base64')}` } }] }],
    })).json();
    const link = /\[image: (http:\/\/127\.0\.0\.1:\d+\/files\/[\w-]+\/image\.png)\]/.exec(res.choices[0].message.content);
    assert.ok(link, res.choices[0].message.content);
    assert.deepEqual(Buffer.from(await (await fetch(link[1])).arrayBuffer()), PNG);
  });
});
