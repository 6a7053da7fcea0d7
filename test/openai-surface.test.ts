import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import OpenAI, { toFile } from 'openai';
import { startTestServer, type TestServer } from './support/server.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const cosine = (a: number[], b: number[]) => a.reduce((sum, x, i) => sum + x * b[i]!, 0);
const WEATHER_TOOL = { type: 'function' as const, function: { name: 'get_weather', description: 'weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } };

describe('the official openai client against /openai/v1', () => {
  let srv: TestServer;
  let client: OpenAI;
  let token: string;

  before(async () => {
    srv = await startTestServer();
    token = await srv.tokenFor('olga');
    client = new OpenAI({ baseURL: `${srv.url}/openai/v1`, apiKey: token, maxRetries: 0 });
  });
  after(async () => srv?.close());

  it('answers a chat completion as one object when stream is not set', async () => {
    const completion = await client.chat.completions.create({ model: 'gpt-4.1-mini', messages: [{ role: 'user', content: 'Hello surface' }] });
    assert.equal(completion.object, 'chat.completion');
    assert.match(completion.choices[0]!.message.content!, /^You said: Hello surface/);
    assert.ok(completion.usage!.total_tokens > 0);
  });

  it('streams a chat completion when asked', async () => {
    const stream = await client.chat.completions.create({ model: 'gpt-4.1-mini', messages: [{ role: 'user', content: 'Hello stream' }], stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    assert.match(text, /^You said: Hello stream/);
  });

  it('calls tools in chat completions', async () => {
    const completion = await client.chat.completions.create({ model: 'gpt-4.1-mini', messages: [{ role: 'user', content: 'use get_weather {"city":"Oslo"}' }], tools: [WEATHER_TOOL] });
    const call = completion.choices[0]!.message.tool_calls![0]! as Json;
    assert.equal(completion.choices[0]!.finish_reason, 'tool_calls');
    assert.equal(call.function.name, 'get_weather');
    assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Oslo' });
  });

  it('answers the Responses API with output_text, and previous_response_id carries the conversation', async () => {
    const first = await client.responses.create({ model: 'gpt-4.1-mini', instructions: 'be brief', input: 'first question' });
    assert.equal(first.object, 'response');
    assert.equal(first.status, 'completed');
    assert.match(first.output_text, /^You said: first question \(message 1 of this conversation/);
    assert.ok(first.usage!.input_tokens > 0 && first.usage!.total_tokens === first.usage!.input_tokens + first.usage!.output_tokens);
    const second = await client.responses.create({ model: 'gpt-4.1-mini', input: [{ role: 'user', content: [{ type: 'input_text', text: 'second question' }] }], previous_response_id: first.id });
    assert.match(second.output_text, /^You said: second question \(message 2 of this conversation/);
    assert.equal(second.previous_response_id, first.id);
    assert.equal((await client.responses.retrieve(second.id)).id, second.id);
  });

  it('refuses an unknown previous_response_id with 404 in the OpenAI error shape', async () => {
    const res = await srv.fetch('/openai/v1/responses', { method: 'POST', token, json: { model: 'gpt-4.1-mini', input: 'x', previous_response_id: 'resp_nope' } });
    assert.equal(res.status, 404);
    const body = (await res.json()) as Json;
    assert.deepEqual(Object.keys(body.error).sort(), ['code', 'message', 'param', 'type']);
    assert.equal(body.error.code, 'previous_response_not_found');
    assert.equal(body.error.param, 'previous_response_id');
  });

  it('runs a function tool round trip through the Responses API', async () => {
    const tools = [{ type: 'function' as const, name: 'get_weather', parameters: WEATHER_TOOL.function.parameters, strict: false }];
    const asked = await client.responses.create({ model: 'gpt-4.1-mini', input: 'call get_weather {"city":"Lima"}', tools });
    const call = asked.output.find((item) => item.type === 'function_call') as Json;
    assert.equal(call.name, 'get_weather');
    assert.deepEqual(JSON.parse(call.arguments), { city: 'Lima' });
    const answered = await client.responses.create({
      model: 'gpt-4.1-mini',
      tools,
      previous_response_id: asked.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: '{"temp":21}' }],
    });
    assert.equal(answered.output_text, 'Tool results: get_weather returned {"temp":21}');
  });

  it('streams Responses events in OpenAI\'s order with increasing sequence numbers', async () => {
    const stream = await client.responses.create({ model: 'gpt-4.1-mini', input: 'stream me', stream: true });
    const events: Json[] = [];
    for await (const event of stream) events.push(event);
    const types = events.map((e) => e.type);
    assert.deepEqual(types.slice(0, 4), ['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
    assert.deepEqual(types.slice(-4), ['response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed']);
    assert.ok(events.every((e, i) => e.sequence_number === i));
    const text = events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('');
    assert.match(text, /^You said: stream me/);
    assert.equal(events.at(-1).response.output[0].content[0].text, text);
  });

  it('streams a function call as arguments deltas', async () => {
    const stream = await client.responses.create({ model: 'gpt-4.1-mini', input: 'get_weather {"city":"Rome"}', stream: true, tools: [{ type: 'function', name: 'get_weather', parameters: WEATHER_TOOL.function.parameters, strict: false }] });
    const events: Json[] = [];
    for await (const event of stream) events.push(event);
    const args = events.filter((e) => e.type === 'response.function_call_arguments.delta').map((e) => e.delta).join('');
    assert.deepEqual(JSON.parse(args), { city: 'Rome' });
    assert.equal(events.find((e) => e.type === 'response.function_call_arguments.done').arguments, args);
  });

  it('generates images as b64_json for a gpt-image model, and as URLs when asked', async () => {
    const b64 = await client.images.generate({ model: 'gpt-image-1', prompt: 'a red square', size: '1024x1024' });
    const png = Buffer.from(b64.data![0]!.b64_json!, 'base64');
    assert.equal(png.subarray(1, 4).toString(), 'PNG');
    const urls = await client.images.generate({ model: 'seedream-4.0', prompt: 'a blue circle', response_format: 'url' });
    assert.match(urls.data![0]!.url!, /\/files\//);
  });

  it('edits an image from a multipart upload', async () => {
    const image = await toFile(fs.readFileSync('docs/samples/photo.png'), 'photo.png', { type: 'image/png' });
    const edited = await client.images.edit({ model: 'gpt-image-1', image, prompt: 'make it blue' });
    assert.equal(Buffer.from(edited.data![0]!.b64_json!, 'base64').subarray(1, 4).toString(), 'PNG');
  });

  it('embeds texts (base64 by the client\'s default) so that similar texts score closer', async () => {
    const result = await client.embeddings.create({ model: 'text-embedding-3-small', input: ['the cat sat on the mat', 'a cat sat on a mat', 'quarterly revenue grew'] });
    const [a, b, c] = result.data.map((d) => d.embedding);
    assert.equal(a!.length, 1536);
    assert.ok(Math.abs(cosine(a!, a!) - 1) < 1e-5);
    assert.ok(cosine(a!, b!) > cosine(a!, c!) + 0.2, `${cosine(a!, b!)} vs ${cosine(a!, c!)}`);
    const short = await client.embeddings.create({ model: 'text-embedding-3-small', input: 'the cat sat on the mat', dimensions: 256, encoding_format: 'float' });
    assert.equal(short.data[0]!.embedding.length, 256);
    assert.equal(short.usage.prompt_tokens, 6);
    const again = await client.embeddings.create({ model: 'text-embedding-3-small', input: 'the cat sat on the mat', dimensions: 256, encoding_format: 'float' });
    assert.deepEqual(again.data[0]!.embedding, short.data[0]!.embedding);
  });

  it('refuses dimensions the model does not make', async () => {
    await assert.rejects(client.embeddings.create({ model: 'text-embedding-3-small', input: 'x', dimensions: 7 }), (err: Json) => err.status === 400 && err.param === 'dimensions');
  });

  it('speaks a text as audio bytes, then transcribes them reporting the duration', async () => {
    const speech = await client.audio.speech.create({ model: 'gpt-4o-mini-tts', voice: 'alloy', input: 'Hello from the gateway', response_format: 'wav' });
    assert.match(speech.headers.get('content-type')!, /^audio\/wav/);
    const wav = Buffer.from(await speech.arrayBuffer());
    assert.equal(wav.subarray(0, 4).toString(), 'RIFF');
    const transcription = await client.audio.transcriptions.create({ model: 'whisper-1', file: await toFile(wav, 'speech.wav'), response_format: 'verbose_json', language: 'en' });
    assert.equal(transcription.text, '');
    assert.equal(transcription.language, 'en');
    assert.ok(transcription.duration > 0.5 && transcription.duration < 5, String(transcription.duration));
    const json = await client.audio.transcriptions.create({ model: 'gpt-4o-transcribe', file: await toFile(wav, 'speech.wav') });
    assert.equal(json.text, '');
  });

  it('refuses a voice the model does not have, naming the OpenAI field', async () => {
    await assert.rejects(client.audio.speech.create({ model: 'gpt-4o-mini-tts', voice: 'nobody' as Json, input: 'hi' }), (err: Json) => err.status === 400 && err.param === 'voice');
  });

  it('lists models as OpenAI does', async () => {
    const ids: string[] = [];
    for await (const model of client.models.list()) ids.push(model.id);
    assert.ok(ids.includes('gpt-4.1-mini') && ids.includes('text-embedding-3-small'));
    assert.equal((await client.models.retrieve('whisper-1')).id, 'whisper-1');
  });

  it('needs a token', async () => {
    const res = await fetch(`${srv.url}/openai/v1/models`);
    assert.equal(res.status, 401);
    assert.equal(((await res.json()) as Json).error.type, 'authentication_error');
  });
});

describe('/v1/embeddings, /v1/rerank, /v1/audio/*', () => {
  let srv: TestServer;
  let token: string;

  before(async () => {
    srv = await startTestServer();
    token = await srv.tokenFor('vic');
  });
  after(async () => srv?.close());

  it('serves embeddings under /v1 too', async () => {
    const res = await srv.fetch('/v1/embeddings', { method: 'POST', token, json: { model: 'text-embedding-3-large', input: 'hello' } });
    assert.equal(res.status, 200);
    const body = (await res.json()) as Json;
    assert.equal(body.object, 'list');
    assert.equal(body.data[0].embedding.length, 3072);
  });

  it('reranks documents by lexical overlap, best first, cut to top_n', async () => {
    const documents = ['Bananas are yellow fruit', 'The capital of France is Paris', 'Paris is a city in France with many museums'];
    const res = await srv.fetch('/v1/rerank', { method: 'POST', token, json: { model: 'rerank-v3.5', query: 'What is the capital of France?', documents, top_n: 2, return_documents: true } });
    assert.equal(res.status, 200);
    const body = (await res.json()) as Json;
    assert.deepEqual(body.results.map((r: Json) => r.index), [1, 2]);
    assert.ok(body.results[0].relevance_score > body.results[1].relevance_score);
    assert.equal(body.results[0].document.text, documents[1]);
    assert.ok(body.usage.total_tokens > 0);
  });

  it('refuses a rerank model for embeddings', async () => {
    const res = await srv.fetch('/v1/embeddings', { method: 'POST', token, json: { model: 'rerank-v3.5', input: 'x' } });
    assert.equal(res.status, 400);
    assert.equal(((await res.json()) as Json).error.code, 'model_capability_mismatch');
  });

  it('refuses a transcription without a file', async () => {
    const form = new FormData();
    form.set('model', 'whisper-1');
    const res = await srv.fetch('/v1/audio/transcriptions', { method: 'POST', token, body: form });
    assert.equal(res.status, 400);
    assert.equal(((await res.json()) as Json).error.param, 'file');
  });

  it('transcribes to the text format', async () => {
    const form = new FormData();
    form.set('model', 'whisper-1');
    form.set('response_format', 'text');
    form.set('file', new Blob([fs.readFileSync('docs/samples/speech.mp3')], { type: 'audio/mpeg' }), 'speech.mp3');
    const res = await srv.fetch('/v1/audio/transcriptions', { method: 'POST', token, body: form });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type')!, /^text\/plain/);
    assert.equal(await res.text(), '');
  });
});
