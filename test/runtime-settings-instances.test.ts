/**
 * Two instances on one PostgreSQL schema (and one Redis prefix, or none): a change made through
 * one instance's admin API is applied by the other within 2 seconds, with Redis through its
 * announcement, without through the version check.
 */
import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { startFakeChatUpstream } from './fakes/openai-chat-upstream.ts';
import { dropSchema, postgresEnv, redisEnv, startTestServer, type TestServer } from './support/server.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const MODEL = 'gpt-4.1-mini';

async function admin(server: TestServer, method: string, pathname: string, body?: unknown): Promise<{ status: number; body: Json }> {
  const res = await server.fetch(pathname, { method, token: server.adminToken, ...(body !== undefined ? { json: body } : {}) });
  return { status: res.status, body: await res.json().catch(() => null) };
}

/** Milliseconds from the answer of `change` on one instance until `seen` holds on the other (polled every 10 ms). */
async function propagation(change: () => Promise<void>, seen: () => Promise<boolean>, limitMs = 5000): Promise<number> {
  await change();
  const answered = performance.now();
  while (!(await seen())) {
    if (performance.now() - answered > limitMs) throw new Error(`the other instance did not apply the change within ${limitMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return performance.now() - answered;
}

async function run(t: TestContext, withRedis: boolean): Promise<void> {
  const pg = await postgresEnv();
  if ('skip' in pg) return void t.skip(pg.skip);
  const redis = withRedis ? await redisEnv() : undefined;
  if (redis && 'skip' in redis) return void t.skip(redis.skip);
  const upstream = await startFakeChatUpstream();
  const env = {
    ...pg.env,
    ...(redis ? redis.env : {}),
    ADMIN_TOKEN: `admin-${randomBytes(6).toString('hex')}`,
    GENGATE_SECRET_KEY: randomBytes(32).toString('base64'),
    GENGATE_CONFIG: JSON.stringify({ providers: { openai: { base_url: upstream.url, retry: { attempts: 0 } } } }),
  };
  const first = await startTestServer({ ...env, INSTANCE_ID: 'first' });
  const second = await startTestServer({ ...env, INSTANCE_ID: 'second' });
  try {
    const token = await first.tokenFor('dora');
    const figures: number[] = [];
    for (const price of [1, 2, 3]) {
      figures.push(await propagation(
        async () => assert.equal((await admin(first, 'PATCH', `/admin/models/${MODEL}`, { pricing: { per_request: price } })).status, 200),
        async () => (await admin(second, 'GET', '/admin/models')).body.data.find((m: Json) => m.alias === MODEL).pricing?.per_request === price,
      ));
    }
    // A stored key reaches the other instance too, and its calls use it.
    const apiKey = `sk-${randomBytes(12).toString('hex')}`;
    figures.push(await propagation(
      async () => assert.equal((await admin(first, 'POST', '/admin/providers/openai/channels', { name: 'keyed', api_key: apiKey, priority: -1 })).status, 201),
      async () => (await admin(second, 'GET', '/admin/providers')).body.data[0].channels.some((c: Json) => c.name === 'keyed'),
    ));
    const res = await second.fetch('/v1/chat/completions', { method: 'POST', token, json: { model: MODEL, messages: [{ role: 'user', content: 'hi' }] } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-gengate-channel'), 'keyed');
    assert.equal(upstream.requests.at(-1)!.headers.authorization, `Bearer ${apiKey}`);
    const worst = Math.max(...figures);
    const line = `${withRedis ? 'PostgreSQL + Redis' : 'PostgreSQL alone'}: the other instance applied each change within ${figures.map((f) => f.toFixed(0)).join(', ')} ms (worst ${worst.toFixed(0)} ms)`;
    t.diagnostic(line);
    assert.ok(worst < 2000, line);
    // Both instances wrote one audit log: each change is one row, seen from either.
    const rows = (await admin(second, 'GET', '/admin/audit?action=model.update')).body.data;
    assert.equal(rows.length, 3);
  } finally {
    await second.close();
    await first.close();
    await upstream.close();
    await dropSchema(pg.env.DATABASE_SCHEMA!);
    if (redis && !('skip' in redis)) await redis.cleanup();
  }
}

describe('runtime settings across instances', () => {
  it('PostgreSQL + Redis: the other instance applies a change within 2 s', (t) => run(t, true));
  it('PostgreSQL alone: the version check applies it within 2 s', (t) => run(t, false));
});
