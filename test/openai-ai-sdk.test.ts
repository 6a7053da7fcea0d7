import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { embed, embedMany, generateImage, generateText, jsonSchema, streamText, tool, cosineSimilarity } from 'ai';
import { createOpenAI, type OpenAIProvider } from '@ai-sdk/openai';
import { startTestServer, type TestServer } from './support/server.ts';

const weather = tool({
  description: 'weather of a city',
  inputSchema: jsonSchema<{ city: string }>({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false }),
});

describe('the Vercel AI SDK against /openai/v1', () => {
  let srv: TestServer;
  let openai: OpenAIProvider;

  before(async () => {
    srv = await startTestServer();
    openai = createOpenAI({ baseURL: `${srv.url}/openai/v1`, apiKey: await srv.tokenFor('aiko') });
  });
  after(async () => srv?.close());

  it('generateText with the chat model', async () => {
    const result = await generateText({ model: openai.chat('gpt-4.1-mini'), prompt: 'Hello SDK', maxRetries: 0 });
    assert.match(result.text, /^You said: Hello SDK/);
    assert.ok((result.usage.totalTokens ?? 0) > 0);
  });

  it('generateText with the default provider (the Responses API)', async () => {
    const result = await generateText({ model: openai('gpt-4.1-mini'), system: 'be brief', prompt: 'Hello responses', maxRetries: 0 });
    assert.match(result.text, /^You said: Hello responses/);
    assert.equal(result.finishReason, 'stop');
  });

  it('streamText with the chat model and with the Responses API', async () => {
    for (const model of [openai.chat('gpt-4.1-mini'), openai('gpt-4.1-mini')]) {
      const result = streamText({ model, prompt: 'Stream SDK', maxRetries: 0 });
      let text = '';
      for await (const piece of result.textStream) text += piece;
      assert.match(text, /^You said: Stream SDK/);
    }
  });

  it('tool calls through both APIs', async () => {
    for (const model of [openai.chat('gpt-4.1-mini'), openai('gpt-4.1-mini')]) {
      const result = await generateText({ model, prompt: 'get_weather {"city":"Kyiv"}', tools: { get_weather: weather }, maxRetries: 0 });
      assert.equal(result.finishReason, 'tool-calls');
      assert.equal(result.toolCalls[0]!.toolName, 'get_weather');
      assert.deepEqual(result.toolCalls[0]!.input, { city: 'Kyiv' });
    }
  });

  it('runs a tool and answers from its result (two steps)', async () => {
    const result = await generateText({
      model: openai('gpt-4.1-mini'),
      prompt: 'get_weather {"city":"Quito"}',
      tools: { get_weather: tool({ ...weather, execute: async ({ city }: { city: string }) => ({ city, temp: 19 }) }) },
      stopWhen: ({ steps }) => steps.length >= 2,
      maxRetries: 0,
    });
    assert.equal(result.text, 'Tool results: get_weather returned {"city":"Quito","temp":19}');
  });

  it('generateImage gets base64 images', async () => {
    const { images } = await generateImage({ model: openai.image('gpt-image-1'), prompt: 'a green triangle', size: '1024x1024', maxRetries: 0 });
    assert.equal(Buffer.from(images[0]!.uint8Array).subarray(1, 4).toString(), 'PNG');
  });

  it('embed and embedMany', async () => {
    const model = openai.embedding('text-embedding-3-small');
    const { embedding } = await embed({ model, value: 'sunny weather today', maxRetries: 0 });
    assert.equal(embedding.length, 1536);
    const { embeddings } = await embedMany({ model, values: ['sunny weather today', 'the weather is sunny', 'tax law reform'], maxRetries: 0 });
    assert.ok(cosineSimilarity(embeddings[0]!, embeddings[1]!) > cosineSimilarity(embeddings[0]!, embeddings[2]!));
  });
});
