import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { UpstreamClient, UpstreamError, retryAfterMs } from '../src/providers/upstream-client.ts';
import { upstreamTaskEngine } from '../src/providers/upstream-task-engine.ts';
import { TaskCancelledError, TaskFailedError, type GenerationJob } from '../src/providers/spec.ts';
import { runContext } from './support/run-context.ts';

type Handler = (req: http.IncomingMessage, body: string, res: http.ServerResponse) => void;

/** A scripted upstream: each request is answered by the next handler (the last one repeats). */
async function scripted(handlers: Handler[]): Promise<{ url: string; hits: { method: string; url: string; body: string; at: number }[]; close(): Promise<void> }> {
  const hits: { method: string; url: string; body: string; at: number }[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      hits.push({ method: req.method!, url: req.url!, body, at: Date.now() });
      handlers[Math.min(hits.length - 1, handlers.length - 1)]!(req, body, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, hits, close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }) };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}): Handler => (_req, _body, res) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
};

const fastRetry = { attempts: 3, baseDelayMs: 5, maxDelayMs: 50 };

describe('upstream client', () => {
  it('retries 429 after the Retry-After delay and 5xx with backoff, then answers', async () => {
    const up = await scripted([json(429, { error: 'slow down' }, { 'retry-after': '0.2' }), json(503, { error: 'busy' }), json(200, { ok: true })]);
    try {
      const client = new UpstreamClient({ provider: 'fake', baseURL: up.url, retry: fastRetry, headers: { authorization: 'Bearer k' } });
      const res = await client.request({ path: '/v1/things', json: { a: 1 } });
      assert.deepEqual(res.json(), { ok: true });
      assert.equal(up.hits.length, 3);
      assert.ok(up.hits[1]!.at - up.hits[0]!.at >= 190, 'waited for Retry-After');
      assert.deepEqual(up.hits.map((h) => [h.method, h.url, h.body]), Array(3).fill(['POST', '/v1/things', '{"a":1}']));
    } finally {
      await up.close();
    }
  });

  it('does not retry a 4xx and reports the upstream text as the original error', async () => {
    const up = await scripted([json(400, { error: { message: 'prompt refused' } })]);
    try {
      const client = new UpstreamClient({ provider: 'fake', baseURL: up.url, retry: fastRetry });
      await assert.rejects(client.request({ path: '/x' }), (err: unknown) => {
        assert.ok(err instanceof UpstreamError);
        assert.equal(err.status, 400);
        assert.equal(err.message, 'fake answered HTTP 400');
        assert.match(err.originalMessage!, /prompt refused/);
        return true;
      });
      assert.equal(up.hits.length, 1);
    } finally {
      await up.close();
    }
  });

  it('gives up after the retry budget, and fails a timed-out request', async () => {
    const up = await scripted([json(500, { error: 'down' })]);
    const hang = await scripted([() => undefined]);
    try {
      const client = new UpstreamClient({ provider: 'fake', baseURL: up.url, retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 5 } });
      await assert.rejects(client.request({ path: '/x' }), /fake answered HTTP 500/);
      assert.equal(up.hits.length, 3, 'one try and two retries');
      const slow = new UpstreamClient({ provider: 'slow', baseURL: hang.url, timeoutMs: 100, retry: { attempts: 0, baseDelayMs: 1, maxDelayMs: 1 } });
      await assert.rejects(slow.request({ path: '/x', json: {} }), /slow timed out after 100 ms/);
    } finally {
      await up.close();
      await hang.close();
    }
  });

  it('reads Retry-After as seconds or a date', () => {
    assert.equal(retryAfterMs('3'), 3000);
    assert.equal(retryAfterMs(new Date(10_000).toUTCString(), 4_000), 6000);
    assert.equal(retryAfterMs(null), undefined);
  });
});

describe('upstream task engine', () => {
  const job = { taskId: 't1', ownerId: 'o', endpoint: 'images.generations', model: {} as GenerationJob['model'], input: { prompt: 'x' }, attempt: 1 } satisfies GenerationJob;

  it('submits once, saves the reference, polls with progress until success; a resumed run polls without submitting', async () => {
    let submits = 0;
    let polls = 0;
    const engine = upstreamTaskEngine<{ id: string }>({
      async submit() {
        submits++;
        return { id: 'up-1' };
      },
      async poll(ref) {
        polls++;
        assert.equal(ref.id, 'up-1');
        return polls < 3 ? { state: 'running', progress: polls * 30 } : { state: 'succeeded', output: { files: [] } };
      },
    }, { cancellable: false, pollIntervalMs: 1, maxWaitMs: 10_000 });
    const ctx = runContext();
    assert.deepEqual(await engine.run(job, ctx), { files: [] });
    assert.equal(submits, 1);
    assert.deepEqual(ctx.remembered, [{ upstream: { id: 'up-1' } }]);
    assert.deepEqual(ctx.progressSeen, [30, 60]);
    polls = 0;
    await engine.run({ ...job, attempt: 2, saved: { upstream: { id: 'up-1' } } }, runContext());
    assert.equal(submits, 1, 'the resumed run did not submit again');
  });

  it('fails with the upstream message; a cancel stops a workflow task upstream but a shutdown does not', async () => {
    const failing = upstreamTaskEngine({ submit: async () => ({ id: 'x' }), poll: async () => ({ state: 'failed', message: 'upstream task failed', original: 'NSFW' }) }, { cancellable: false, pollIntervalMs: 1, maxWaitMs: 1000 });
    await assert.rejects(failing.run(job, runContext()), (err: unknown) => err instanceof TaskFailedError && err.originalMessage === 'NSFW');

    const cancelled: string[] = [];
    const running = upstreamTaskEngine({ submit: async () => ({ id: 'w' }), poll: async () => ({ state: 'running' as const }), cancel: async (ref) => void cancelled.push(ref.id) }, { cancellable: true, pollIntervalMs: 5, maxWaitMs: 10_000 });
    const stop = new AbortController();
    const run = running.run(job, runContext({ signal: stop.signal }));
    setImmediate(() => stop.abort(new Error('worker shutting down')));
    await assert.rejects(run);
    assert.deepEqual(cancelled, [], 'a shutdown leaves the upstream task running for the resumed run');
    const cancel = new AbortController();
    const run2 = running.run(job, runContext({ signal: cancel.signal }));
    setImmediate(() => cancel.abort(new TaskCancelledError('cancelled')));
    await assert.rejects(run2);
    assert.deepEqual(cancelled, ['w']);
  });
});
