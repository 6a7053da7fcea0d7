import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { startTestServer, type TestServer } from '../support/server.ts';
import { FakeSyncModelsUpstream } from '../fakes/sync-models-upstream.ts';
import { eventually } from '../support/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

describe('embeddings, transcription and rerank adapters', () => {
  let openai: FakeSyncModelsUpstream;
  let cohere: FakeSyncModelsUpstream;
  let jina: FakeSyncModelsUpstream;
  let srv: TestServer;
  let token: string;

  before(async () => {
    [openai, cohere, jina] = await Promise.all([new FakeSyncModelsUpstream().listen(), new FakeSyncModelsUpstream('cohere').listen(), new FakeSyncModelsUpstream('jina').listen()]);
    process.env.SYNC_TEST_OPENAI_KEY = 'sk-openai';
    process.env.SYNC_TEST_COHERE_KEY = 'co-key';
    srv = await startTestServer({
      GENGATE_CONFIG: JSON.stringify({
        providers: {
          openai: { base_url: openai.url, api_key_env: 'SYNC_TEST_OPENAI_KEY', retry: { attempts: 0 } },
          cohere: { base_url: cohere.url, api_key_env: 'SYNC_TEST_COHERE_KEY' },
          jina: { base_url: jina.url },
        },
      }),
    });
    token = await srv.tokenFor('sam');
  });
  after(async () => {
    await srv?.close();
    await Promise.all([openai, cohere, jina].map((fake) => fake?.close()));
  });

  it('sends OpenAI embeddings the upstream model name, the texts, dimensions and float encoding, and keeps the input order', async () => {
    const res = await srv.fetch('/openai/v1/embeddings', { method: 'POST', token, json: { model: 'text-embedding-3-small', input: ['a', 'b'], dimensions: 256, encoding_format: 'base64', user: 'u1' } });
    assert.equal(res.status, 200);
    const sent = openai.requestsTo('/embeddings').at(-1)!;
    assert.equal(sent.headers.authorization, 'Bearer sk-openai');
    assert.deepEqual(sent.json, { model: 'text-embedding-3-small', input: ['a', 'b'], dimensions: 256, user: 'u1', encoding_format: 'float' });
    const body = (await res.json()) as Json;
    const second = Buffer.from(body.data[1].embedding, 'base64');
    assert.equal(second.length, 256 * 4);
    assert.equal(second.readFloatLE(0), 1);
    assert.equal(body.usage.prompt_tokens, 7);
    // The ledger counts the embedded tokens as input, none of it cached.
    const row = await eventually('the ledger row', async () => {
      const page = (await (await srv.fetch('/admin/requests?user_id=sam', { token: srv.adminToken })).json()) as Json;
      return page.data.find((r: Json) => r.request_id === res.headers.get('x-request-id'));
    });
    assert.deepEqual([row.endpoint, row.input_tokens, row.cached_input_tokens, row.cache_write_tokens, row.output_tokens], ['/openai/v1/embeddings', 7, 0, 0, 0]);
  });

  it('sends a transcription as multipart with the file, the upstream model and json answers', async () => {
    const form = new FormData();
    form.set('model', 'whisper-1');
    form.set('language', 'en');
    form.set('prompt', 'a greeting');
    form.set('file', new Blob([fs.readFileSync('docs/samples/speech.mp3')], { type: 'audio/mpeg' }), 'speech.mp3');
    const res = await srv.fetch('/v1/audio/transcriptions', { method: 'POST', token, body: form });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { text: 'hello from upstream', usage: { type: 'duration', seconds: 2 } });
    const sent = openai.requestsTo('/audio/transcriptions').at(-1)!;
    assert.deepEqual(sent.fields, [['model', 'whisper-1'], ['language', 'en'], ['prompt', 'a greeting'], ['response_format', 'json']]);
    assert.equal(sent.files![0]!.fileName, 'speech.mp3');
    assert.deepEqual(sent.files![0]!.data, fs.readFileSync('docs/samples/speech.mp3'));
  });

  it('sends rerank in the Cohere v2 shape and maps Cohere\'s meta to usage', async () => {
    const res = await srv.fetch('/v1/rerank', { method: 'POST', token, json: { model: 'rerank-v3.5', query: 'q', documents: ['x', 'y', 'z'], top_n: 2 } });
    assert.equal(res.status, 200);
    assert.deepEqual(cohere.requestsTo('/rerank').at(-1)!.json, { model: 'rerank-v3.5', query: 'q', documents: ['x', 'y', 'z'], top_n: 2 });
    assert.equal(cohere.requestsTo('/rerank').at(-1)!.headers.authorization, 'Bearer co-key');
    assert.deepEqual(await res.json(), { model: 'rerank-v3.5', results: [{ index: 2, relevance_score: 0.3 }, { index: 1, relevance_score: 0.2 }], usage: { total_tokens: 42, search_units: 1 } });
  });

  it('reads Jina\'s usage', async () => {
    const res = await srv.fetch('/v1/rerank', { method: 'POST', token, json: { model: 'jina-reranker-v2-base-multilingual', query: 'q', documents: [{ text: 'x' }, 'y'] } });
    assert.equal(res.status, 200);
    assert.deepEqual(jina.requestsTo('/rerank').at(-1)!.json, { model: 'jina-reranker-v2-base-multilingual', query: 'q', documents: ['x', 'y'] });
    assert.deepEqual(((await res.json()) as Json).usage, { total_tokens: 42 });
  });

  it('answers an upstream refusal as 400 and an upstream failure as 502', async () => {
    openai.inject('POST', '/embeddings', { status: 400, body: { error: { message: 'bad input' } } });
    const refused = await srv.fetch('/v1/embeddings', { method: 'POST', token, json: { model: 'text-embedding-3-small', input: 'x' } });
    assert.equal(refused.status, 400);
    assert.match(((await refused.json()) as Json).error.message, /bad input/);
    // The upstream refused a call that ran: an error in the ledger, not a refusal of the gateway.
    const ledger: Json = await (await srv.fetch('/admin/requests?user_id=sam&limit=200', { token: srv.adminToken })).json();
    assert.equal(ledger.data.find((r: Json) => r.request_id === refused.headers.get('x-request-id'))?.status, 'error');
    openai.inject('POST', '/embeddings', { status: 500, body: { error: { message: 'boom' } } });
    const failed = await srv.fetch('/v1/embeddings', { method: 'POST', token, json: { model: 'text-embedding-3-small', input: 'x' } });
    assert.equal(failed.status, 502);
    assert.equal(((await failed.json()) as Json).error.type, 'upstream_error');
  });
});
