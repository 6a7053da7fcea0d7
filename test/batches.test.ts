import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import OpenAI, { toFile } from 'openai';
import { startTestServer, type TestServer } from './support/server.ts';
import { eventually } from './support/wait.ts';
import { startGatedChatUpstream, type GatedChatUpstream } from './fakes/gated-chat-upstream.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const ENDED = ['completed', 'failed', 'expired', 'cancelled'];

function clientFor(srv: TestServer, token: string): OpenAI {
  return new OpenAI({ baseURL: `${srv.url}/openai/v1`, apiKey: token, maxRetries: 0 });
}

function chatLine(customId: string, model: string, text: string): Json {
  return { custom_id: customId, method: 'POST', url: '/v1/chat/completions', body: { model, messages: [{ role: 'user', content: text }] } };
}

async function upload(client: OpenAI, lines: (Json | string)[]): Promise<OpenAI.FileObject> {
  const text = lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n';
  return client.files.create({ file: await toFile(Buffer.from(text), 'input.jsonl'), purpose: 'batch' });
}

async function ended(client: OpenAI, id: string, timeoutMs = 20_000): Promise<OpenAI.Batch> {
  return eventually(`batch ${id} ended`, async () => {
    const batch = await client.batches.retrieve(id);
    return ENDED.includes(batch.status) ? batch : undefined;
  }, timeoutMs);
}

async function linesOf(client: OpenAI, fileId: string | null | undefined): Promise<Json[]> {
  if (!fileId) return [];
  const text = await (await client.files.content(fileId)).text();
  return text.split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

async function notFound(promise: Promise<unknown>): Promise<void> {
  await assert.rejects(promise, (err: Json) => err instanceof OpenAI.NotFoundError);
}

describe('OpenAI batches', () => {
  let fake: GatedChatUpstream;
  let srv: TestServer;
  let client: OpenAI;
  let other: OpenAI;

  before(async () => {
    fake = await startGatedChatUpstream();
    // deepseek-chat goes to the gated fake; gpt-4.1, the embedding models and seedream run on the local engine.
    srv = await startTestServer({
      BATCH_CONCURRENCY: '2',
      GENGATE_CONFIG: JSON.stringify({ providers: { deepseek: { base_url: fake.url }, volcengine: { adapter: 'local' }, openai: { adapter: 'local' } } }),
    });
    client = clientFor(srv, await srv.tokenFor('batcher'));
    other = clientFor(srv, await srv.tokenFor('stranger'));
  });
  after(async () => {
    await srv?.close();
    await fake?.stop();
  });

  it('runs a chat batch on the local engine: output lines in order, malformed lines and refused bodies in the error file', async () => {
    const input = await upload(client, [
      chatLine('first', 'gpt-4.1', 'Hello one'),
      'this is not json',
      chatLine('second', 'gpt-4.1', 'Hello two'),
      '',
      { custom_id: 'no-body', method: 'POST', url: '/v1/chat/completions' },
      { custom_id: 'bad-body', method: 'POST', url: '/v1/chat/completions', body: { model: 'gpt-4.1' } },
      chatLine('third', 'gpt-4.1', 'Hello three'),
    ]);
    assert.equal(input.object, 'file');
    assert.equal(input.purpose, 'batch');
    assert.ok(Number.isInteger(input.created_at) && Math.abs(input.created_at - Date.now() / 1000) < 60, `created_at ${input.created_at} is in unix seconds`);

    const created = await client.batches.create({ input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: '24h', metadata: { purpose: 'test' } });
    assert.equal(created.object, 'batch');
    assert.equal(created.status, 'validating');
    assert.deepEqual(created.metadata, { purpose: 'test' });
    assert.ok(Math.abs(created.expires_at! - created.created_at - 24 * 3600) <= 1);

    const batch = await ended(client, created.id);
    assert.equal(batch.status, 'completed', JSON.stringify(batch));
    assert.deepEqual(batch.request_counts, { total: 6, completed: 3, failed: 3 });
    for (const field of ['in_progress_at', 'finalizing_at', 'completed_at'] as const) assert.ok(Number.isInteger(batch[field]) && batch[field]! >= batch.created_at, field);

    const output = await linesOf(client, batch.output_file_id);
    assert.deepEqual(output.map((l) => l.custom_id), ['first', 'second', 'third']);
    for (const [i, line] of output.entries()) {
      assert.match(line.id, /^batch_req_/);
      assert.equal(line.error, null);
      assert.equal(line.response.status_code, 200);
      assert.equal(line.response.request_id, line.id);
      assert.equal(line.response.body.object, 'chat.completion');
      assert.match(line.response.body.choices[0].message.content, new RegExp(`You said: Hello ${['one', 'two', 'three'][i]}`));
    }
    const errors = await linesOf(client, batch.error_file_id);
    assert.deepEqual(errors.map((l) => l.custom_id), [null, 'no-body', 'bad-body']);
    assert.deepEqual([errors[0].response, errors[0].error.code], [null, 'invalid_json_line']);
    assert.deepEqual([errors[1].response, errors[1].error.code], [null, 'invalid_request']);
    assert.equal(errors[2].error, null);
    assert.equal(errors[2].response.status_code, 400);
    assert.equal(errors[2].response.body.error.param, 'messages');

    const outputFile = await client.files.retrieve(batch.output_file_id!);
    assert.equal(outputFile.purpose, 'batch_output');
    const listed = await client.files.list();
    const ids = listed.data.map((f) => f.id);
    for (const id of [input.id, batch.output_file_id, batch.error_file_id]) assert.ok(ids.includes(id!), `${id} listed`);

    // The ledger: one row per line that ran (malformed lines never did), each naming the batch.
    const res = await srv.fetch(`/admin/requests?batch_id=${batch.id}`, { token: srv.adminToken });
    assert.equal(res.status, 200);
    const rows = ((await res.json()) as Json).data as Json[];
    assert.equal(rows.length, 4, JSON.stringify(rows));
    assert.ok(rows.every((r) => r.batch_id === batch.id && r.endpoint === '/openai/v1/chat/completions'));
    assert.deepEqual(rows.map((r) => r.status).sort(), ['refused', 'success', 'success', 'success']);
    assert.deepEqual(rows.map((r) => r.request_id).sort(), [...output.map((l) => l.id), errors[2].id].sort());
    const success = rows.find((r) => r.status === 'success');
    assert.ok(success.input_tokens > 0 && success.output_tokens > 0, 'tokens counted');
    // A direct call has no batch.
    await client.chat.completions.create({ model: 'gpt-4.1', messages: [{ role: 'user', content: 'direct' }] });
    const all = ((await (await srv.fetch('/admin/requests?limit=200', { token: srv.adminToken })).json()) as Json).data as Json[];
    assert.ok(all.some((r) => r.batch_id === null && r.endpoint === '/openai/v1/chat/completions'));
  });

  it('runs embeddings, responses and image batches through the same services', async () => {
    const embeddings = await upload(client, [1, 2, 3].map((i) => ({ custom_id: `e${i}`, method: 'POST', url: '/v1/embeddings', body: { model: 'text-embedding-3-small', input: `text ${i}`, dimensions: 256 } })));
    const responses = await upload(client, [{ custom_id: 'r1', method: 'POST', url: '/v1/responses', body: { model: 'gpt-4.1', input: 'Hello responses', stream: true } }]);
    const images = await upload(client, [{ custom_id: 'i1', method: 'POST', url: '/v1/images/generations', body: { model: 'seedream-4.0', prompt: 'a lighthouse', size: '32x32' } }]);
    const [e, r, i] = await Promise.all([
      client.batches.create({ input_file_id: embeddings.id, endpoint: '/v1/embeddings', completion_window: '24h' }),
      client.batches.create({ input_file_id: responses.id, endpoint: '/v1/responses', completion_window: '24h' }),
      client.batches.create({ input_file_id: images.id, endpoint: '/v1/images/generations', completion_window: '24h' }),
    ]);

    const eb = await ended(client, e.id);
    assert.deepEqual([eb.status, eb.request_counts], ['completed', { total: 3, completed: 3, failed: 0 }]);
    const vectors = await linesOf(client, eb.output_file_id);
    assert.deepEqual(vectors.map((l) => l.custom_id), ['e1', 'e2', 'e3']);
    for (const line of vectors) {
      assert.equal(line.response.body.object, 'list');
      assert.equal(line.response.body.data[0].embedding.length, 256);
    }

    // Lines never stream: stream true in a line's body still answers one response object.
    const rb = await ended(client, r.id);
    assert.equal(rb.status, 'completed', JSON.stringify(rb));
    const [response] = await linesOf(client, rb.output_file_id);
    assert.equal(response.response.body.object, 'response');
    assert.match(response.response.body.output_text ?? JSON.stringify(response.response.body.output), /Hello responses/);

    const ib = await ended(client, i.id, 30_000);
    assert.equal(ib.status, 'completed', JSON.stringify(ib));
    const [image] = await linesOf(client, ib.output_file_id);
    assert.equal(image.response.status_code, 200, JSON.stringify(image));
    assert.match(image.response.body.data[0].url, /^http/);
    const rows = ((await (await srv.fetch(`/admin/requests?batch_id=${i.id}`, { token: srv.adminToken })).json()) as Json).data as Json[];
    assert.equal(rows.length, 1, JSON.stringify(rows));
    assert.equal(rows[0].kind, 'task');
    assert.equal(rows[0].status, 'success');
  });

  it('fails a batch whose lines name another endpoint, repeat a custom_id, or hold no JSON object', async () => {
    const cases: [(Json | string)[], string, number | null][] = [
      [[chatLine('a', 'gpt-4.1', 'x'), { ...chatLine('b', 'gpt-4.1', 'y'), url: '/v1/embeddings' }], 'mismatched_url', 2],
      [[chatLine('a', 'gpt-4.1', 'x'), chatLine('b', 'gpt-4.1', 'y'), chatLine('a', 'gpt-4.1', 'z')], 'duplicate_custom_id', 3],
      [['not json', '[1, 2]', '"text"'], 'empty_file', null],
      [[''], 'empty_file', null],
    ];
    for (const [lines, code, line] of cases) {
      const input = await upload(client, lines);
      const created = await client.batches.create({ input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
      const batch = await ended(client, created.id);
      assert.equal(batch.status, 'failed', code);
      assert.ok(Number.isInteger(batch.failed_at));
      assert.equal(batch.errors?.data?.[0]?.code, code, JSON.stringify(batch.errors));
      assert.equal(batch.errors?.data?.[0]?.line ?? null, line);
      assert.deepEqual([batch.output_file_id, batch.error_file_id], [null, null]);
    }
  });

  it('refuses a bad create or upload with a 4xx naming the field', async () => {
    const input = await upload(client, [chatLine('a', 'gpt-4.1', 'x')]);
    const refused = async (promise: Promise<unknown>, status: number, param: string) => {
      await assert.rejects(promise, (err: Json) => {
        assert.equal(err.status, status, err.message);
        assert.equal(err.param ?? err.error?.param, param);
        return true;
      });
    };
    await refused(client.batches.create({ input_file_id: input.id, endpoint: '/v1/moderations' as Json, completion_window: '24h' }), 400, 'endpoint');
    await refused(client.batches.create({ input_file_id: input.id, endpoint: '/v1/embeddings', completion_window: '1h' as Json }), 400, 'completion_window');
    await refused(client.batches.create({ input_file_id: 'file_missing', endpoint: '/v1/embeddings', completion_window: '24h' }), 404, 'input_file_id');
    await refused(client.files.create({ file: await toFile(Buffer.from('{}\n'), 'x.jsonl'), purpose: 'fine-tune' }), 400, 'purpose');
    await refused(client.batches.list({ limit: 0 }) as unknown as Promise<unknown>, 400, 'limit');
  });

  it('refuses a file over 200 MB with 413, keeping nothing of it', async () => {
    const before = (await client.files.list()).data.length;
    const boundary = 'gengate-boundary';
    const head = Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="purpose"\r\n\r\nbatch\r\n--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="big.jsonl"\r\ncontent-type: application/octet-stream\r\n\r\n`);
    const chunk = Buffer.alloc(1024 * 1024, 0x20);
    async function* body() {
      yield head;
      for (let i = 0; i < 200; i++) yield chunk;
      yield Buffer.from(` \r\n--${boundary}--\r\n`);
    }
    const res = await srv.fetch('/openai/v1/files', {
      method: 'POST',
      token: await srv.tokenFor('batcher'),
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
      body: Readable.toWeb(Readable.from(body())) as ReadableStream,
      duplex: 'half',
    } as RequestInit);
    assert.equal(res.status, 413);
    const error = ((await res.json()) as Json).error;
    assert.deepEqual([error.code, error.param], ['file_too_large', 'file']);
    assert.equal((await client.files.list()).data.length, before);
  });

  it('keeps files and batches to their user: others get 404', async () => {
    const input = await upload(client, [chatLine('a', 'gpt-4.1', 'mine')]);
    const batch = await ended(client, (await client.batches.create({ input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: '24h' })).id);
    await notFound(other.files.retrieve(input.id));
    await notFound(other.files.content(batch.output_file_id!));
    await notFound(other.files.delete(input.id));
    await notFound(other.batches.retrieve(batch.id));
    await notFound(other.batches.cancel(batch.id));
    await notFound(other.batches.create({ input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: '24h' }));
    assert.ok(!(await other.batches.list()).data.some((b) => b.id === batch.id));
    assert.ok(!(await other.files.list()).data.some((f) => f.id === input.id));
    // The owner still has it, and can delete it.
    assert.equal((await client.files.retrieve(input.id)).id, input.id);
    assert.deepEqual(await client.files.delete(input.id), { id: input.id, object: 'file', deleted: true });
    await notFound(client.files.retrieve(input.id));
  });

  it('lists batches newest first with after and limit', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const input = await upload(client, ['no json']);
      ids.push((await client.batches.create({ input_file_id: input.id, endpoint: '/v1/embeddings', completion_window: '24h' })).id);
    }
    const page = await client.batches.list({ limit: 2 });
    assert.deepEqual(page.data.map((b) => b.id), [ids[2], ids[1]]);
    assert.equal(page.has_more, true);
    const next = await client.batches.list({ limit: 2, after: ids[1] });
    assert.equal(next.data[0]!.id, ids[0]);
    const all: string[] = [];
    for await (const b of client.batches.list({ limit: 2 })) all.push(b.id);
    assert.deepEqual(all.slice(0, 3), [ids[2], ids[1], ids[0]]);
    assert.equal(new Set(all).size, all.length);
  });

  it('cancels: no line starts after, running lines finish into the output, lines never started are in neither file', async () => {
    fake.close();
    const texts = Array.from({ length: 6 }, (_, i) => `cancel-${i}`);
    const input = await upload(client, texts.map((t) => chatLine(t, 'deepseek-chat', t)));
    const created = await client.batches.create({ input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    const before = fake.received.length;
    // BATCH_CONCURRENCY is 2: two lines reach the upstream, the others wait.
    await eventually('two lines held upstream', () => fake.held().length === 2);
    const cancelling = await client.batches.cancel(created.id);
    assert.equal(cancelling.status, 'cancelling');
    assert.ok(Number.isInteger(cancelling.cancelling_at));
    assert.equal((await client.batches.retrieve(created.id)).status, 'cancelling');
    const running = fake.held().map((c) => c.text).sort();
    for (const call of fake.held()) call.answer();
    const batch = await ended(client, created.id);
    assert.equal(batch.status, 'cancelled');
    assert.ok(Number.isInteger(batch.cancelled_at));
    assert.deepEqual(batch.request_counts, { total: 6, completed: 2, failed: 0 });
    const output = await linesOf(client, batch.output_file_id);
    assert.deepEqual(output.map((l) => l.custom_id).sort(), running);
    assert.ok(output.every((l) => l.response.status_code === 200 && l.response.body.choices[0].message.content === `Answer to ${l.custom_id}`));
    assert.equal(batch.error_file_id, null);
    assert.deepEqual(fake.received.slice(before).sort(), running, 'no line started after the cancel');
    assert.ok(fake.maxInFlight() <= 2, `${fake.maxInFlight()} lines at once`);
    // Cancelling again answers the batch as it is; a completed one cannot be cancelled.
    assert.equal((await client.batches.cancel(batch.id)).status, 'cancelled');
    fake.open();
  });

  it('runs at most BATCH_CONCURRENCY lines of a batch at once', async () => {
    fake.close();
    const input = await upload(client, Array.from({ length: 8 }, (_, i) => chatLine(`c${i}`, 'deepseek-chat', `concurrent-${i}`)));
    const created = await client.batches.create({ input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    let answered = 0;
    while (answered < 8) {
      const held = await eventually('lines held', () => (fake.held().length > 0 ? fake.held() : undefined));
      assert.ok(held.length <= 2, `${held.length} lines at once`);
      held[0]!.answer();
      answered += 1;
    }
    const batch = await ended(client, created.id);
    assert.deepEqual(batch.request_counts, { total: 8, completed: 8, failed: 0 });
    assert.equal(fake.maxInFlight(), 2);
    fake.open();
    await assert.rejects(client.batches.cancel(batch.id), (err: Json) => err.status === 409);
  });
});

describe('OpenAI batches past their completion window', () => {
  let fake: GatedChatUpstream;
  let srv: TestServer;
  let client: OpenAI;
  const WINDOW_MS = 1500;

  before(async () => {
    fake = await startGatedChatUpstream();
    srv = await startTestServer({
      BATCH_CONCURRENCY: '1',
      BATCH_COMPLETION_WINDOW_MS: String(WINDOW_MS),
      GENGATE_CONFIG: JSON.stringify({ providers: { deepseek: { base_url: fake.url } } }),
    });
    client = clientFor(srv, await srv.tokenFor('slowpoke'));
  });
  after(async () => {
    await srv?.close();
    await fake?.stop();
  });

  it('expires: the running line finishes into the output, lines not started go to the error file as batch_expired', async () => {
    const input = await upload(client, [1, 2, 3, 4].map((i) => chatLine(`x${i}`, 'deepseek-chat', `expiring-${i}`)));
    const createdAt = Date.now();
    const created = await client.batches.create({ input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    (await eventually('first line held', () => fake.held()[0])).answer();
    const second = await eventually('second line held', () => fake.held().find((c) => c.text === 'expiring-2'));
    await eventually('the window over', () => Date.now() > createdAt + WINDOW_MS + 300);
    second.answer();
    const batch = await ended(client, created.id);
    assert.equal(batch.status, 'expired');
    assert.ok(Number.isInteger(batch.expired_at));
    assert.deepEqual(batch.request_counts, { total: 4, completed: 2, failed: 2 });
    assert.deepEqual((await linesOf(client, batch.output_file_id)).map((l) => l.custom_id), ['x1', 'x2']);
    const errors = await linesOf(client, batch.error_file_id);
    assert.deepEqual(errors.map((l) => [l.custom_id, l.error.code, l.response]), [['x3', 'batch_expired', null], ['x4', 'batch_expired', null]]);
    assert.deepEqual(fake.received, ['expiring-1', 'expiring-2']);
  });
});
