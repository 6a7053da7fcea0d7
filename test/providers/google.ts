import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../support/server.ts';
import { GeminiUpstream, geminiError } from '../fakes/gemini-upstream.ts';
import { agentEvents, chatStream, contentOf, runItems } from '../support/sse.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const KEY_ENV = 'GEMINI_TEST_KEY';
const KEY = 'AIza-test-123';
const PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const WAV_BASE64 = Buffer.concat([Buffer.from('RIFF\x24\x00\x00\x00WAVEfmt ', 'latin1'), Buffer.alloc(24, 1)]).toString('base64');
const MODEL = 'gemini-2.5-flash';
const WEATHER_TOOL = { type: 'function', function: { name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } };

async function gatewayOn(fake: GeminiUpstream, timeoutMs = 10_000): Promise<TestServer> {
  return startTestServer({
    GENGATE_CONFIG: JSON.stringify({
      providers: {
        google: { base_url: `${fake.url}/v1beta`, api_key_env: KEY_ENV, timeout_ms: timeoutMs, retry: { attempts: 2, base_delay_ms: 1, max_delay_ms: 1500 } },
        openai: { adapter: 'local' },
      },
    }),
  });
}

describe('chat on Gemini (generateContent)', () => {
  let fake: GeminiUpstream;
  let srv: TestServer;
  let token: string;
  const chat = (body: Json) => srv.fetch('/v1/chat/completions', { method: 'POST', token, json: body });

  before(async () => {
    process.env[KEY_ENV] = KEY;
    fake = await new GeminiUpstream(KEY).listen();
    srv = await gatewayOn(fake);
    token = await srv.tokenFor('alice');
  });
  after(async () => {
    await srv?.close();
    await fake?.close();
    delete process.env[KEY_ENV];
  });

  it('sends the exact generateContent request: system instruction, inline and fetched media, generation config, and answers a chat.completion', async () => {
    const res = await chat({
      model: MODEL,
      stream: false,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: [
          { type: 'text', text: 'What is in these?' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_BASE64}` } },
          { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } },
          { type: 'video_url', video_url: { url: 'https://example.com/clip.mp4' } },
          { type: 'input_audio', input_audio: { data: WAV_BASE64, format: 'wav' } },
        ] },
        { role: 'assistant', content: 'A cat, a clip and a sound.' },
        { role: 'user', content: 'Say more' },
      ],
      temperature: 0.4,
      top_p: 0.9,
      max_tokens: 200,
      stop: ['END'],
      seed: 7,
      user: 'end-user-7',
      response_format: { type: 'json_schema', json_schema: { name: 'answer', schema: { type: 'object', properties: { text: { type: 'string' } } } } },
      safetySettings: [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_ONLY_HIGH' }],
    });
    const body: Json = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));

    const [sent] = fake.calls(MODEL, 'generateContent');
    assert.equal(sent.headers['x-goog-api-key'], KEY);
    assert.equal(sent.headers.authorization, undefined, 'no bearer key');
    assert.equal(sent.headers['content-type'], 'application/json');
    const request = sent.json as Json;
    // The base64 audio was stored by the gateway first and goes as a URL Gemini fetches.
    const audio = request.contents[0].parts[4];
    assert.match(audio.fileData.fileUri, new RegExp(`^${srv.url}/files/.+\\.wav$`));
    assert.deepEqual(request, {
      contents: [
        { role: 'user', parts: [
          { text: 'What is in these?' },
          { inlineData: { mimeType: 'image/png', data: PNG_BASE64 } },
          { fileData: { mimeType: 'image/png', fileUri: 'https://example.com/cat.png' } },
          { fileData: { mimeType: 'video/mp4', fileUri: 'https://example.com/clip.mp4' } },
          { fileData: { mimeType: 'audio/wav', fileUri: audio.fileData.fileUri } },
        ] },
        { role: 'model', parts: [{ text: 'A cat, a clip and a sound.' }] },
        { role: 'user', parts: [{ text: 'Say more' }] },
      ],
      systemInstruction: { parts: [{ text: 'Be brief.' }] },
      generationConfig: {
        maxOutputTokens: 200,
        temperature: 0.4,
        topP: 0.9,
        stopSequences: ['END'],
        seed: 7,
        responseMimeType: 'application/json',
        responseJsonSchema: { type: 'object', properties: { text: { type: 'string' } } },
      },
      safetySettings: [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_ONLY_HIGH' }],
    });
    const media = await fetch(audio.fileData.fileUri);
    assert.equal(Buffer.from(await media.arrayBuffer()).toString('base64'), WAV_BASE64, 'the URL serves the audio');

    assert.equal(body.object, 'chat.completion');
    assert.equal(body.model, MODEL);
    assert.equal(body.id, 'resp-fake1');
    assert.deepEqual(body.choices, [{ index: 0, message: { role: 'assistant', content: 'Echo: Say more' }, finish_reason: 'stop' }]);
    // The fake counts words (a media part is one): 8 + 7 + 2 input, 3 output.
    assert.deepEqual(body.usage, { prompt_tokens: 17, completion_tokens: 3, total_tokens: 20, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } });
  });

  it('streams with alt=sse: frames without an end marker become chunks, the finish reason, then the last usage and [DONE]', async () => {
    fake.script({ kind: 'text', text: 'Streaming from Gemini in six words' });
    const { chunks, done } = await chatStream(await chat({ model: MODEL, messages: [{ role: 'user', content: 'Hello there' }] }));
    assert.ok(done);
    const [sent] = fake.calls(MODEL, 'streamGenerateContent').slice(-1);
    assert.deepEqual(sent.query, { alt: 'sse' });
    assert.equal(sent.headers.accept, 'text/event-stream');
    assert.deepEqual(sent.json, { contents: [{ role: 'user', parts: [{ text: 'Hello there' }] }] });

    assert.deepEqual(chunks[0].choices[0].delta, { role: 'assistant', content: '' });
    assert.equal(contentOf(chunks), 'Streaming from Gemini in six words');
    assert.ok(chunks.filter((c) => c.choices?.[0]?.delta?.content).length >= 6, 'one chunk per frame');
    for (const chunk of chunks) assert.equal(chunk.model, MODEL);
    assert.equal(chunks.at(-2).choices[0].finish_reason, 'stop');
    assert.deepEqual(chunks.at(-1).choices, []);
    assert.deepEqual(chunks.at(-1).usage, { prompt_tokens: 2, completion_tokens: 6, total_tokens: 8, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } });
  });

  it('declares the tools, answers a function call as tool_calls (whole and streamed), and sends results back as function responses', async () => {
    fake.script({ kind: 'function_call', name: 'get_weather', args: { city: 'Paris' } });
    const res = await chat({ model: MODEL, stream: false, messages: [{ role: 'user', content: 'Weather in Paris?' }], tools: [WEATHER_TOOL], tool_choice: 'required' });
    const body: Json = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    const sent = fake.calls(MODEL, 'generateContent').at(-1)!.json as Json;
    assert.deepEqual(sent.tools, [{ functionDeclarations: [{ name: 'get_weather', description: 'The weather in a city', parametersJsonSchema: WEATHER_TOOL.function.parameters }] }]);
    assert.deepEqual(sent.toolConfig, { functionCallingConfig: { mode: 'ANY' } });
    const { message, finish_reason: finish } = body.choices[0];
    assert.equal(finish, 'tool_calls', 'a function call is tool_calls though Gemini says STOP');
    assert.equal(message.content, null);
    assert.match(message.tool_calls[0].id, /^call_[0-9a-f]{24}$/);
    assert.deepEqual(message.tool_calls[0].function, { name: 'get_weather', arguments: '{"city":"Paris"}' });

    fake.script({ kind: 'function_call', name: 'get_weather', args: { city: 'Lyon' } });
    const streamed = await chatStream(await chat({ model: MODEL, messages: [{ role: 'user', content: 'And Lyon?' }], tools: [WEATHER_TOOL], tool_choice: { type: 'function', function: { name: 'get_weather' } } }));
    assert.deepEqual((fake.calls(MODEL, 'streamGenerateContent').at(-1)!.json as Json).toolConfig, { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] } });
    const deltas = streamed.chunks.flatMap((c) => c.choices?.[0]?.delta?.tool_calls ?? []);
    assert.equal(deltas.length, 1);
    assert.equal(deltas[0].index, 0);
    assert.deepEqual(deltas[0].function, { name: 'get_weather', arguments: '{"city":"Lyon"}' });
    assert.equal(streamed.chunks.at(-2).choices[0].finish_reason, 'tool_calls');

    const back = await chat({
      model: MODEL,
      stream: false,
      messages: [
        { role: 'user', content: 'Weather in Paris and Rome?' },
        { role: 'assistant', content: null, tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
          { id: 'call_b', type: 'function', function: { name: 'get_forecast', arguments: '{"city":"Rome"}' } },
        ] },
        { role: 'tool', tool_call_id: 'call_a', content: '{"sky":"sunny"}' },
        { role: 'tool', tool_call_id: 'call_b', content: 'rainy' },
      ],
      tools: [WEATHER_TOOL],
    });
    const answer: Json = await back.json();
    assert.equal(back.status, 200, JSON.stringify(answer));
    assert.deepEqual((fake.calls(MODEL, 'generateContent').at(-1)!.json as Json).contents, [
      { role: 'user', parts: [{ text: 'Weather in Paris and Rome?' }] },
      { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }, { functionCall: { name: 'get_forecast', args: { city: 'Rome' } } }] },
      { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { sky: 'sunny' } } }, { functionResponse: { name: 'get_forecast', response: { output: 'rainy' } } }] },
    ]);
  });

  it('maps the finish reasons and a blocked prompt to length and content_filter', async () => {
    fake.script({ kind: 'text', text: 'cut short', finishReason: 'MAX_TOKENS' }, { kind: 'text', text: 'unsafe', finishReason: 'SAFETY' }, { kind: 'blocked', reason: 'PROHIBITED_CONTENT' });
    const cut: Json = await (await chat({ model: MODEL, stream: false, messages: [{ role: 'user', content: 'long story' }] })).json();
    assert.equal(cut.choices[0].finish_reason, 'length');
    const unsafe = await chatStream(await chat({ model: MODEL, messages: [{ role: 'user', content: 'something' }] }));
    assert.equal(unsafe.chunks.at(-2).choices[0].finish_reason, 'content_filter');
    const blocked: Json = await (await chat({ model: MODEL, stream: false, messages: [{ role: 'user', content: 'something worse' }] })).json();
    assert.deepEqual(blocked.choices, [{ index: 0, message: { role: 'assistant', content: null }, finish_reason: 'content_filter' }]);
  });

  it('refuses a tool result that answers no earlier call, and parameters Gemini has no counterpart for', async () => {
    const before = fake.requests.length;
    const orphan: Json = await (await chat({ model: MODEL, messages: [{ role: 'user', content: 'hi' }, { role: 'tool', tool_call_id: 'call_x', content: 'sunny' }] })).json();
    assert.equal(orphan.error.code, 'invalid_parameter');
    assert.equal(orphan.error.param, 'messages[1].tool_call_id');
    const bias: Json = await (await chat({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], logit_bias: { 50256: -100 } })).json();
    assert.equal(bias.error.code, 'unsupported_parameter');
    assert.equal(bias.error.param, 'logit_bias');
    assert.equal(fake.requests.length, before, 'nothing was sent');
  });

  it('runs the agent\'s tool loop on Gemini: the function call runs the tool, its result goes back as a function response', async () => {
    fake.script({ kind: 'function_call', name: 'generate_image', args: { prompt: 'a red fox', size: '64x64' } });
    const events = await agentEvents(await srv.fetch('/v1/responses', { method: 'POST', token, json: { model: MODEL, input: 'Draw a red fox' } }));
    const items = runItems(events);
    assert.deepEqual(items.map((i) => i.type), ['tool_call_item', 'tool_call_output_item', 'message_output_item']);
    const [call, output, message] = items;
    assert.equal(call.rawItem.name, 'generate_image');
    const result = JSON.parse(output.rawItem.output);
    assert.equal(result.status, 'success', output.rawItem.output);

    const [first, second] = fake.calls(MODEL, 'streamGenerateContent').slice(-2).map((r) => r.json as Json);
    assert.ok(first.tools[0].functionDeclarations.some((d: Json) => d.name === 'generate_image'), 'the agent\'s tools as function declarations');
    assert.deepEqual(first.toolConfig, { functionCallingConfig: { mode: 'AUTO' } });
    assert.deepEqual(second.contents.slice(-2), [
      { role: 'model', parts: [{ functionCall: { name: 'generate_image', args: { prompt: 'a red fox', size: '64x64' } } }] },
      { role: 'user', parts: [{ functionResponse: { name: 'generate_image', response: result } }] },
    ]);
    assert.ok(message.rawItem.content[0].text.includes(result.output[0]), 'Gemini read the tool output');
  });
});

describe('Gemini failures', () => {
  let fake: GeminiUpstream;
  let srv: TestServer;
  let token: string;
  const chat = (body: Json) => srv.fetch('/v1/chat/completions', { method: 'POST', token, json: body });
  const messages = [{ role: 'user', content: 'hello' }];

  before(async () => {
    process.env[KEY_ENV] = KEY;
    fake = await new GeminiUpstream(KEY).listen();
    srv = await gatewayOn(fake, 1000);
    token = await srv.tokenFor('bob');
  });
  after(async () => {
    await srv?.close();
    await fake?.close();
    delete process.env[KEY_ENV];
  });

  it('tries 429 RESOURCE_EXHAUSTED and 503 UNAVAILABLE again, and gives up with 502 after the retries', async () => {
    const path = `/v1beta/models/${MODEL}:generateContent`;
    let before = fake.requests.length;
    fake.inject('POST', path, geminiError(429, 'RESOURCE_EXHAUSTED', 'Resource has been exhausted (e.g. check quota).'));
    fake.inject('POST', path, geminiError(503, 'UNAVAILABLE', 'The model is overloaded. Please try again later.'));
    const ok = await chat({ model: MODEL, messages, stream: false });
    assert.equal(ok.status, 200);
    assert.equal(fake.requests.length - before, 3);

    before = fake.requests.length;
    for (let i = 0; i < 3; i++) fake.inject('POST', path, geminiError(500, 'INTERNAL', 'An internal error has occurred.'));
    const failed = await chat({ model: MODEL, messages, stream: false });
    const body: Json = await failed.json();
    assert.equal(failed.status, 502);
    assert.match(body.error.message, /HTTP 500: An internal error has occurred/);
    assert.equal(fake.requests.length - before, 3);
  });

  it('does not try a 400 INVALID_ARGUMENT again: the caller gets 400 with Google\'s message', async () => {
    const before = fake.requests.length;
    fake.inject('POST', `/v1beta/models/${MODEL}:generateContent`, geminiError(400, 'INVALID_ARGUMENT', 'Request contains an invalid argument.'));
    const res = await chat({ model: MODEL, messages, stream: false });
    const body: Json = await res.json();
    assert.equal(res.status, 400);
    assert.equal(body.error.code, 'invalid_request');
    assert.match(body.error.message, /Request contains an invalid argument/);
    assert.equal(fake.requests.length - before, 1);
  });

  it('ends a stream that closes without a finish reason with an error event', async () => {
    fake.script({ kind: 'cut' });
    const cut = await chatStream(await chat({ model: MODEL, messages: [{ role: 'user', content: 'one two three' }] }));
    assert.equal(cut.done, false);
    assert.equal(cut.error.error.code, 'upstream_error');
    assert.match(cut.error.error.message, /without a finish reason/);
    assert.equal(contentOf(cut.chunks), 'Echo: one two', 'what came before the cut');
  });

  it('answers 504 when Gemini does not answer in time', async () => {
    fake.script({ kind: 'hang' });
    const res = await chat({ model: MODEL, messages, stream: false });
    assert.equal(res.status, 504);
    assert.equal(((await res.json()) as Json).error.code, 'upstream_timeout');
  });
});
