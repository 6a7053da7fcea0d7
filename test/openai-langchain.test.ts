import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ChatOpenAI, OpenAIEmbeddings } from '@langchain/openai';
import { startTestServer, type TestServer } from './support/server.ts';

describe('LangChain (@langchain/openai) against /openai/v1', () => {
  let srv: TestServer;
  let configuration: { baseURL: string };
  let apiKey: string;

  before(async () => {
    srv = await startTestServer();
    configuration = { baseURL: `${srv.url}/openai/v1` };
    apiKey = await srv.tokenFor('lena');
  });
  after(async () => srv?.close());

  it('invoke', async () => {
    const chat = new ChatOpenAI({ model: 'gpt-4.1-mini', apiKey, configuration, maxRetries: 0 });
    const message = await chat.invoke('Hello chain');
    assert.match(String(message.content), /^You said: Hello chain/);
  });

  it('stream', async () => {
    const chat = new ChatOpenAI({ model: 'gpt-4.1-mini', apiKey, configuration, maxRetries: 0 });
    let text = '';
    for await (const chunk of await chat.stream('Stream chain')) text += String(chunk.content);
    assert.match(text, /^You said: Stream chain/);
  });

  it('binds tools and gets their calls', async () => {
    const chat = new ChatOpenAI({ model: 'gpt-4.1-mini', apiKey, configuration, maxRetries: 0 }).bindTools([{
      type: 'function',
      function: { name: 'get_weather', description: 'weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
    }]);
    const message = await chat.invoke('get_weather {"city":"Bern"}');
    assert.equal(message.tool_calls?.[0]?.name, 'get_weather');
    assert.deepEqual(message.tool_calls?.[0]?.args, { city: 'Bern' });
  });

  it('invokes through the Responses API', async () => {
    const chat = new ChatOpenAI({ model: 'gpt-4.1-mini', apiKey, configuration, maxRetries: 0, useResponsesApi: true });
    const message = await chat.invoke('Hello responses chain');
    assert.match(message.text, /^You said: Hello responses chain/);
  });

  it('embeds documents and a query', async () => {
    const embeddings = new OpenAIEmbeddings({ model: 'text-embedding-3-small', apiKey, configuration, maxRetries: 0 });
    const [doc] = await embeddings.embedDocuments(['a document about rivers']);
    const query = await embeddings.embedQuery('rivers');
    assert.equal(doc!.length, 1536);
    assert.equal(query.length, 1536);
  });
});
