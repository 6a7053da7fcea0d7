import { after, before, describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import pino from 'pino';
import sharp from 'sharp';
import { RedisEventBus } from '../src/storage/redis-event-bus.ts';
import type { BusTopics, TaskStatusEvent } from '../src/storage/event-bus.ts';
import { dropSchema, postgresEnv, redisEnv, REDIS_URL, startTestServer, type TestServer } from './support/server.ts';
import { eventually, within } from './support/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const IMAGE = { prompt: 'a lighthouse at dusk', model: 'seedream-4.0', size: '64x64' };

async function recordOf(srv: TestServer, token: string, taskId: string): Promise<Json> {
  const res = await srv.fetch(`/v1/ai/result/${taskId}`, { token });
  assert.equal(res.status, 200);
  return res.json();
}

function waitForStatus(srv: TestServer, token: string, taskId: string, match: (status: string) => boolean, timeoutMs?: number): Promise<Json> {
  return eventually(`task ${taskId} status`, async () => {
    const record = await recordOf(srv, token, taskId);
    return match(record.queue_status.status) ? record : undefined;
  }, timeoutMs);
}

function submitAsync(srv: TestServer, token: string): Promise<string> {
  return srv.fetch('/v1/images/generations', { method: 'POST', token, json: IMAGE, headers: { 'x-async': '1' } }).then(async (res) => {
    assert.equal(res.status, 200);
    const body = (await res.json()) as Json;
    assert.equal(body.status, 'submitted');
    return body.task_id as string;
  });
}

/** The task.status events a server's bus delivers, as they arrive. */
function recordEvents(srv: TestServer): TaskStatusEvent[] {
  const events: TaskStatusEvent[] = [];
  srv.server.services.bus.subscribe('task.status', (e) => events.push(e));
  return events;
}

describe('Redis mode', () => {
  let skip: string | undefined;
  const servers: TestServer[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  let redis: Redis;

  before(async () => {
    const pg = await postgresEnv();
    if ('skip' in pg) skip = pg.skip;
    const found = await redisEnv();
    if ('skip' in found) skip = found.skip;
    if (skip) process.stdout.write(`# ${skip}\n`);
    else redis = new Redis(REDIS_URL);
  });

  after(async () => {
    await Promise.allSettled(servers.map((s) => s.close()));
    for (const cleanup of cleanups) await cleanup().catch(() => undefined);
    await redis?.quit();
  });

  /**
   * A deployment of its own: a fresh PostgreSQL schema and Redis prefix, removed at the end;
   * `clearRedis` deletes the prefix's keys at once.
   */
  async function deployment(extra: Record<string, string> = {}): Promise<{ env: Record<string, string>; clearRedis(): Promise<void> }> {
    const pg = await postgresEnv();
    const found = await redisEnv();
    if ('skip' in pg || 'skip' in found) throw new Error('services went away during the run');
    cleanups.push(() => dropSchema(pg.env.DATABASE_SCHEMA!), found.cleanup);
    return { env: { ...pg.env, ...found.env, ...extra }, clearRedis: found.cleanup };
  }

  async function start(env: Record<string, string>): Promise<TestServer> {
    const srv = await startTestServer(env);
    servers.push(srv);
    return srv;
  }

  async function stop(srv: TestServer): Promise<void> {
    servers.splice(servers.indexOf(srv), 1);
    await srv.close();
  }

  const test = (name: string, fn: (t: TestContext) => Promise<void>) =>
    it(name, async (t) => {
      if (skip) return t.skip(skip);
      await fn(t);
    });

  test('delivers each bus message once to every instance of the prefix, the publisher included (at once, its copy from Redis dropped)', async () => {
    const found = await redisEnv();
    if ('skip' in found) throw new Error(found.skip);
    cleanups.push(found.cleanup);
    const logger = pino({ level: 'silent' });
    const prefix = found.env.REDIS_PREFIX!;
    const a = await RedisEventBus.connect({ url: REDIS_URL, prefix, timeoutMs: 1000, logger });
    const b = await RedisEventBus.connect({ url: REDIS_URL, prefix, timeoutMs: 1000, logger });
    const other = await RedisEventBus.connect({ url: REDIS_URL, prefix: `${prefix}-other`, timeoutMs: 1000, logger });
    try {
      const got = { a: [] as unknown[], b: [] as unknown[], other: [] as unknown[] };
      a.subscribe('task.cancel', (m) => got.a.push(m));
      b.subscribe('task.cancel', (m) => got.b.push(m));
      other.subscribe('task.cancel', (m) => got.other.push(m));
      const unsubscribe = b.subscribe('agent.approval', () => assert.fail('unsubscribed handler was called'));
      unsubscribe();
      // A marker published last: Redis keeps one publisher's order, so once it arrives, all did.
      const markers = [a, b].map((bus) => new Promise<void>((resolve) => bus.subscribe('token.revoked', () => resolve())));
      const message: BusTopics['task.cancel'] = { taskId: 'task_1' };
      await a.publish('task.cancel', message);
      // The publisher's own handlers have it before the publish answers.
      assert.deepEqual(got.a, [message]);
      await a.publish('agent.approval', { taskId: 'task_1', userId: 'u', approved: true });
      await a.publish('token.revoked', { tokenId: 'tok_1' });
      await within(Promise.all(markers), 5000, 'the marker message');
      // b's answer reaches a through Redis after a's own messages did: a has dropped their copies by then.
      const answered = new Promise<void>((resolve) => a.subscribe('task.status', () => resolve()));
      await b.publish('task.status', { taskId: 'task_1', ownerId: 'u', clientId: null, status: 'success', version: 3, record: {} as never, events: [] });
      await within(answered, 5000, "b's answer");
      assert.deepEqual(got.a, [message]);
      assert.deepEqual(got.b, [message]);
      assert.deepEqual(got.other, []);
    } finally {
      await Promise.all([a.close(), b.close(), other.close()]);
    }
  });

  test('runs sync and async image generations through the Redis queue', async () => {
    const { env } = await deployment({ INSTANCE_ID: 'redis-e2e', LOCAL_ENGINE_MIN_DURATION_MS: '0' });
    const srv = await start(env);
    const token = await srv.tokenFor('alice');
    const events = recordEvents(srv);

    const sync = await srv.fetch('/v1/images/generations', { method: 'POST', token, json: IMAGE });
    assert.equal(sync.status, 200);
    const body = (await sync.json()) as Json;
    assert.equal(body.status, 'success');
    assert.equal(body.data.length, 1);
    const image = await fetch(body.data[0].url);
    assert.equal(image.status, 200);
    const meta = await sharp(Buffer.from(await image.arrayBuffer())).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ['png', 64, 64]);

    const taskId = await submitAsync(srv, token);
    const record = await waitForStatus(srv, token, taskId, (s) => s === 'success');
    assert.equal(record.queue_status.server, 'redis-e2e');
    assert.equal(record.queue_status.progress, 100);
    assert.equal(record.queue_status.data.output.length, 1);
    assert.equal((await fetch(record.queue_status.data.output[0])).status, 200);

    // Both ran as BullMQ jobs named after their tasks, finished and removed.
    const finished = new Set<string>();
    for (const [, fields] of await redis.xrange(`${env.REDIS_PREFIX}:tasks:events`, '-', '+')) {
      const entry = Object.fromEntries(Array.from({ length: fields.length / 2 }, (_, i) => [fields[2 * i], fields[2 * i + 1]]));
      if (entry.event === 'completed') finished.add(entry.jobId!);
    }
    assert.ok(finished.has(body.task_id) && finished.has(taskId), `completed jobs: ${[...finished].join(', ')}`);
    assert.equal(await redis.exists(`${env.REDIS_PREFIX}:tasks:${taskId}`), 0);

    // Each update came back through Redis exactly once, none twice from a local shortcut.
    await eventually('the success event', async () => (events.some((e) => e.taskId === taskId && e.status === 'success') ? true : undefined));
    const versions = events.filter((e) => e.taskId === taskId).map((e) => e.version);
    assert.deepEqual(versions, [...new Set(versions)].sort((x, y) => x - y));
    assert.equal(versions[0], 1);
  });

  test('cancels a running task and it stays cancelled', async () => {
    const { env } = await deployment({ INSTANCE_ID: 'redis-cancel', LOCAL_ENGINE_MIN_DURATION_MS: '3000' });
    const srv = await start(env);
    const token = await srv.tokenFor('bob');
    const events = recordEvents(srv);
    const taskId = await submitAsync(srv, token);
    await waitForStatus(srv, token, taskId, (s) => s === 'process');

    const res = await srv.fetch(`/v1/ai/cancel/${taskId}`, { token });
    assert.equal(res.status, 200);
    assert.equal(((await res.json()) as Json).queue_status.status, 'cancelled');

    // The worker is done with it once its job has left Redis; the record is unchanged then.
    await eventually('the job to leave Redis', async () => ((await redis.exists(`${env.REDIS_PREFIX}:tasks:${taskId}`)) === 0 ? true : undefined));
    const record = await recordOf(srv, token, taskId);
    assert.equal(record.queue_status.status, 'cancelled');
    assert.deepEqual(record.queue_status.data.output, []);
    const statuses = events.filter((e) => e.taskId === taskId).map((e) => e.status);
    assert.equal(statuses.at(-1), 'cancelled');
    assert.ok(!statuses.includes('success'));
  });

  test('resumes on another instance a task whose worker went away', async () => {
    const { env } = await deployment({ TASK_LEASE_MS: '1000', LOCAL_ENGINE_MIN_DURATION_MS: '3000' });
    const a = await start({ ...env, INSTANCE_ID: 'redis-a' });
    const token = await a.tokenFor('carol');
    const taskId = await submitAsync(a, token);
    const running = await waitForStatus(a, token, taskId, (s) => s === 'process');
    assert.equal(running.queue_status.server, 'redis-a');

    // A stops without finishing: the job stays active in Redis under a lock nobody renews.
    await stop(a);
    assert.deepEqual(await redis.lrange(`${env.REDIS_PREFIX}:tasks:active`, 0, -1), [taskId]);

    const b = await start({ ...env, INSTANCE_ID: 'redis-b' });
    const done = await waitForStatus(b, token, taskId, (s) => s === 'success' || s === 'failed', 20_000);
    assert.equal(done.queue_status.status, 'success');
    assert.equal(done.queue_status.server, 'redis-b');
    assert.equal(done.queue_status.data.output.length, 1);
  });

  test('queues again at start a live task that Redis does not hold', async () => {
    const { env, clearRedis } = await deployment({ LOCAL_ENGINE_MIN_DURATION_MS: '3000' });
    const a = await start({ ...env, INSTANCE_ID: 'redis-lost-a' });
    const token = await a.tokenFor('frank');
    const taskId = await submitAsync(a, token);
    await waitForStatus(a, token, taskId, (s) => s === 'process');
    await stop(a);
    // As if the task was stored and its process died before queueing it (or Redis lost its data).
    await clearRedis();
    assert.equal(await redis.exists(`${env.REDIS_PREFIX}:tasks:${taskId}`), 0);

    const b = await start({ ...env, INSTANCE_ID: 'redis-lost-b' });
    const done = await waitForStatus(b, token, taskId, (s) => s === 'success' || s === 'failed', 20_000);
    assert.equal(done.queue_status.status, 'success');
    assert.equal(done.queue_status.server, 'redis-lost-b');
    assert.equal(done.queue_status.data.output.length, 1);
  });

  test('a token revoked through one instance is refused by another at once', async () => {
    const { env } = await deployment();
    const a = await start({ ...env, INSTANCE_ID: 'redis-tok-a' });
    const b = await start({ ...env, INSTANCE_ID: 'redis-tok-b', ADMIN_TOKEN: a.adminToken });
    const created = await a.fetch('/admin/tokens', { method: 'POST', token: a.adminToken, json: { user_id: 'dave' } });
    assert.equal(created.status, 201);
    const { id, token } = (await created.json()) as { id: string; token: string };
    // B now holds the token in its cache, trusted for a minute without the database.
    assert.equal((await b.fetch('/v1/models', { token })).status, 200);

    const revoked = new Promise<void>((resolve) => b.server.services.bus.subscribe('token.revoked', (m) => m.tokenId === id && resolve()));
    assert.equal((await a.fetch(`/admin/tokens/${id}`, { method: 'DELETE', token: a.adminToken })).status, 204);
    await within(revoked, 5000, 'the revocation to reach the other instance');
    assert.equal((await b.fetch('/v1/models', { token })).status, 401);
    assert.equal((await a.fetch('/v1/models', { token })).status, 401);
  });
});
