/**
 * Idempotency-Key on creating POSTs: the first answer is replayed with Idempotent-Replayed, a
 * different body is 422, a retry of a running sync call joins its task, and answers made before
 * anything was created are not kept. On SQLite, and on PostgreSQL + Redis with two instances.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dropSchema, postgresEnv, redisEnv, startTestServer, type TestServer } from './support/server.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const BODY = { model: 'seedream-4.0', prompt: 'a lighthouse', size: '32x32' };

function submit(srv: TestServer, token: string, key: string, body: Json = BODY, sync = false): Promise<Response> {
  return srv.fetch('/v1/images/generations', { method: 'POST', token, json: body, headers: { 'idempotency-key': key, ...(sync ? {} : { 'x-async': '1' }) } });
}

async function taskCount(srv: TestServer, token: string): Promise<number> {
  const res = await srv.fetch('/v1/tasks?limit=200', { token });
  assert.equal(res.status, 200);
  return ((await res.json()) as Json).data.length;
}

/** The same checks for one instance (`a` = `b`) or two sharing the store. */
function idempotencyChecks(servers: () => { a: TestServer; b: TestServer } | undefined, skipped: () => string | undefined): void {
  it('a retry with the same key and body replays the first answer and creates nothing', async (t) => {
    const s = servers();
    if (!s) return t.skip(skipped());
    const token = await s.a.tokenFor('ida');
    const first = await submit(s.a, token, 'order-1');
    assert.equal(first.status, 200);
    assert.equal(first.headers.get('idempotent-replayed'), null);
    const body: Json = await first.json();
    const again = await submit(s.b, token, 'order-1');
    assert.equal(again.status, 200);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(await again.json(), body);
    assert.equal(await taskCount(s.a, token), 1);
  });

  it('the same key with another body is 422 idempotency_key_reused; another user has keys of its own', async (t) => {
    const s = servers();
    if (!s) return t.skip(skipped());
    const token = await s.a.tokenFor('ivo');
    assert.equal((await submit(s.a, token, 'k')).status, 200);
    const other = await submit(s.b, token, 'k', { ...BODY, prompt: 'a boat' });
    assert.equal(other.status, 422);
    assert.equal(((await other.json()) as Json).error.code, 'idempotency_key_reused');
    assert.equal((await submit(s.b, await s.a.tokenFor('someone-else'), 'k', { ...BODY, prompt: 'a boat' })).status, 200);
  });

  it('a sync retry while the first call still waits joins its task and answers as it does', async (t) => {
    const s = servers();
    if (!s) return t.skip(skipped());
    const token = await s.a.tokenFor('ivy');
    const [first, retry] = await Promise.all([submit(s.a, token, 'sync-1', BODY, true), submit(s.b, token, 'sync-1', BODY, true)]);
    assert.equal(first.status, 200);
    assert.equal(retry.status, 200);
    const [one, two]: Json[] = [await first.json(), await retry.json()];
    assert.equal(one.task_id, two.task_id);
    assert.equal([first, retry].filter((r) => r.headers.get('idempotent-replayed') === 'true').length, 1);
    assert.equal(await taskCount(s.a, token), 1);
  });

  it('an answer made before anything was created is not kept, and a malformed key is 400', async (t) => {
    const s = servers();
    if (!s) return t.skip(skipped());
    const token = await s.a.tokenFor('ike');
    const bad = await submit(s.a, token, 'k2', { ...BODY, model: 'no-such-model' });
    assert.equal(bad.status, 404);
    const fixed = await submit(s.b, token, 'k2', { ...BODY, model: 'no-such-model' });
    assert.equal(fixed.status, 404);
    assert.equal(fixed.headers.get('idempotent-replayed'), null);
    const malformed = await submit(s.a, token, 'é'.repeat(3));
    assert.equal(malformed.status, 400);
    assert.equal(((await malformed.json()) as Json).error.code, 'invalid_idempotency_key');
  });
}

describe('idempotency keys (SQLite)', () => {
  let srv: TestServer | undefined;
  before(async () => {
    srv = await startTestServer({ LOCAL_ENGINE_MIN_DURATION_MS: '300' });
  });
  after(() => srv?.close());
  idempotencyChecks(() => (srv ? { a: srv, b: srv } : undefined), () => undefined);
});

describe('idempotency keys (PostgreSQL + Redis, two instances)', () => {
  let pair: { a: TestServer; b: TestServer } | undefined;
  let skip: string | undefined;
  const cleanups: (() => Promise<void>)[] = [];
  before(async () => {
    const pg = await postgresEnv();
    if ('skip' in pg) return void (skip = pg.skip);
    const redis = await redisEnv();
    if ('skip' in redis) return void (skip = redis.skip);
    cleanups.push(() => dropSchema(pg.env.DATABASE_SCHEMA!), redis.cleanup);
    const env = { ...pg.env, ...redis.env, ADMIN_TOKEN: 'idem-admin', LOCAL_ENGINE_MIN_DURATION_MS: '300' };
    const a = await startTestServer(env);
    pair = { a, b: await startTestServer(env) };
  });
  after(async () => {
    await pair?.b.close();
    await pair?.a.close();
    for (const cleanup of cleanups) await cleanup();
  });
  idempotencyChecks(() => pair, () => skip);
});
