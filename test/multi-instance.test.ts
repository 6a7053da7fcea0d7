import { after, before, describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { Redis } from 'ioredis';
import WebSocket from 'ws';
import { CallbackReceiver, type ReceivedCallback } from './fakes/callback-receiver.ts';
import { dropSchema, postgresEnv, redisEnv, REDIS_URL, tempDataDir } from './support/server.ts';
import { eventually } from './support/wait.ts';
import { spawnServer, type ServerProcess } from './support/process.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const IMAGE = { prompt: 'two harbours, one ship', model: 'seedream-4.0', size: '64x64' };
const START_TIMEOUT_MS = 60_000;


/** One `gengate serve` process of the deployment. */
class Instance {
  private constructor(
    readonly name: string,
    private readonly proc: ServerProcess,
  ) {}

  static async spawn(name: string, env: Record<string, string>): Promise<Instance> {
    return new Instance(name, await spawnServer(env, START_TIMEOUT_MS));
  }

  get url(): string {
    return this.proc.url;
  }

  output(): string {
    return this.proc.output();
  }

  fetch(pathname: string, token: string, init: RequestInit & { json?: unknown } = {}): Promise<Response> {
    const { json, ...rest } = init;
    const headers = new Headers(rest.headers);
    headers.set('authorization', `Bearer ${token}`);
    if (json !== undefined) headers.set('content-type', 'application/json');
    return fetch(this.url + pathname, { ...rest, headers, body: json === undefined ? rest.body : JSON.stringify(json) });
  }

  /** Dies at once, as a crashed machine would: no shutdown, nothing handed back. */
  kill(): Promise<void> {
    return this.proc.stop('SIGKILL');
  }

  /** SIGTERM, then SIGKILL when it has not exited within a few seconds. */
  async stop(): Promise<void> {
    const timer = setTimeout(() => void this.proc.stop('SIGKILL'), 5000);
    await this.proc.stop('SIGTERM');
    clearTimeout(timer);
  }
}

/** A realtime session on channel `draw`, past the handshake, collecting what the server pushes. */
class RealtimeClient {
  readonly messages: Json[] = [];

  private constructor(private readonly ws: WebSocket) {}

  static async open(baseUrl: string, token: string): Promise<RealtimeClient> {
    const ws = new WebSocket(`${baseUrl.replace(/^http/, 'ws')}/realtime?channel=draw`);
    const client = new RealtimeClient(ws);
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      const text = data.toString();
      if (text === 'pong') return;
      const message = JSON.parse(text) as Json;
      client.messages.push(message);
      if (message.type === 'session.challenge') ws.send(JSON.stringify({ type: 'session.initialize', protocolVersion: '1.0' }));
      if (message.type === 'session.initialized') ws.send(JSON.stringify({ type: 'session.authenticate', method: 'bearer', credential: `Bearer ${token}` }));
    });
    await client.until('session.ready', (m) => m.type === 'session.ready' || m.type === 'session.error');
    const last = client.messages.at(-1);
    if (last.type !== 'session.ready') throw new Error(`realtime handshake failed: ${JSON.stringify(last)}`);
    return client;
  }

  /** The task.status pushes of one task, in arrival order. */
  statusesOf(taskId: string): Json[] {
    return this.messages.filter((m) => m.type === 'task.status' && m.taskId === taskId).map((m) => m.data);
  }

  until(what: string, match: (message: Json) => boolean, timeoutMs = 15_000): Promise<Json> {
    return eventually(`realtime message: ${what}`, () => this.messages.find(match), timeoutMs);
  }

  close(): void {
    this.ws.close();
  }
}

const statusOf = (record: Json): string => record.queue_status.status;

describe('two instances on one PostgreSQL schema and one Redis prefix', () => {
  let skip: string | undefined;
  const instances: Instance[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  let a: Instance;
  let b: Instance;
  let redis: Redis;
  let prefix: string;
  let receiver: CallbackReceiver;
  let token: string;
  let realtime: RealtimeClient | undefined;

  before(async () => {
    const pg = await postgresEnv();
    if ('skip' in pg) skip = pg.skip;
    const found = await redisEnv();
    if ('skip' in found) skip = found.skip;
    if (skip || 'skip' in pg || 'skip' in found) {
      process.stdout.write(`# ${skip}\n`);
      return;
    }
    cleanups.push(() => dropSchema(pg.env.DATABASE_SCHEMA!), found.cleanup);
    prefix = found.env.REDIS_PREFIX!;
    redis = new Redis(REDIS_URL);
    receiver = await CallbackReceiver.start();
    const dataDir = tempDataDir();
    cleanups.push(async () => fs.rmSync(dataDir, { recursive: true, force: true }));
    const adminToken = `multi-admin-${randomBytes(8).toString('hex')}`;
    const env = {
      ...pg.env,
      ...found.env,
      // One shared volume, as instances behind one public address would have.
      DATA_DIR: dataDir,
      ADMIN_TOKEN: adminToken,
      TASK_LEASE_MS: '2000',
      LOCAL_ENGINE_MIN_DURATION_MS: '2500',
      GENGATE_CONFIG: JSON.stringify({ callback: { callback_url: receiver.url } }),
    };
    const spawned = await Promise.allSettled([Instance.spawn('A', { ...env, INSTANCE_ID: 'multi-a' }), Instance.spawn('B', { ...env, INSTANCE_ID: 'multi-b' })]);
    for (const s of spawned) if (s.status === 'fulfilled') instances.push(s.value);
    for (const s of spawned) if (s.status === 'rejected') throw s.reason;
    [a, b] = instances as [Instance, Instance];
    const res = await a.fetch('/admin/tokens', adminToken, { method: 'POST', json: { user_id: 'erin' } });
    assert.equal(res.status, 201);
    token = ((await res.json()) as Json).token;
    // Opened before anything is submitted, on the instance that does not take the submits.
    realtime = await RealtimeClient.open(b.url, token);
  });

  after(async () => {
    realtime?.close();
    await Promise.allSettled(instances.map((i) => i.stop()));
    await receiver?.close();
    await redis?.quit();
    for (const cleanup of cleanups) await cleanup().catch(() => undefined);
  });

  const test = (name: string, fn: (t: TestContext) => Promise<void>) =>
    it(name, async (t) => {
      if (skip) return t.skip(skip);
      try {
        await fn(t);
      } catch (err) {
        for (const i of instances) process.stdout.write(`# output of ${i.name}:\n${i.output().replace(/^/gm, '#   ')}\n`);
        throw err;
      }
    });

  async function submitToA(): Promise<string> {
    const res = await a.fetch('/v1/images/generations', token, { method: 'POST', json: IMAGE, headers: { 'x-async': '1' } });
    assert.equal(res.status, 200);
    return ((await res.json()) as Json).task_id;
  }

  async function recordOf(instance: Instance, taskId: string): Promise<Json> {
    const res = await instance.fetch(`/v1/ai/result/${taskId}`, token);
    assert.equal(res.status, 200);
    return res.json();
  }

  /** Whether the task's BullMQ job is gone, i.e. no worker holds or waits for it any more. */
  async function jobGone(taskId: string): Promise<true | undefined> {
    return (await redis.exists(`${prefix}:tasks:${taskId}`)) === 0 ? true : undefined;
  }

  const callbacksOf = (taskId: string): ReceivedCallback[] => receiver.requests.filter((r) => r.json?.queue_status?.task_id === taskId);

  test('a task submitted to A runs exactly once and its pushes reach a session on B', async () => {
    const taskId = await submitToA();
    const pushed = await realtime!.until(`success of ${taskId}`, (m) => m.type === 'task.status' && m.taskId === taskId && statusOf(m.data) === 'success', 30_000);
    await eventually('the job to leave Redis', () => jobGone(taskId));

    const record = await recordOf(b, taskId);
    assert.equal(statusOf(record), 'success');
    assert.ok(['multi-a', 'multi-b'].includes(record.queue_status.server), `server: ${record.queue_status.server}`);
    assert.equal(record.queue_status.data.output.length, 1, 'one output, stored once');
    assert.deepEqual(pushed.data.queue_status.data.output, record.queue_status.data.output);

    const pushes = realtime!.statusesOf(taskId).map(statusOf);
    assert.equal(pushes[0], 'submitted');
    assert.equal(pushes.filter((s) => s === 'started').length, 1, `pushes: ${pushes.join(' ')}`);
    assert.equal(pushes.filter((s) => s === 'success').length, 1);
    // Every update after the start names the same server: no second run took over.
    const servers = new Set(realtime!.statusesOf(taskId).flatMap((d) => (d.queue_status.server ? [d.queue_status.server] : [])));
    assert.deepEqual([...servers], [record.queue_status.server]);

    // One callback per update, whichever instance's dispatcher sent it.
    const callbacks = await eventually('the success callback', () => {
      const got = callbacksOf(taskId);
      return got.some((c) => statusOf(c.json) === 'success') ? got : undefined;
    });
    const ids = callbacks.map((c) => c.id);
    assert.equal(new Set(ids).size, ids.length, `a callback was sent twice: ${ids.join(' ')}`);
    assert.deepEqual(callbacks.map((c) => statusOf(c.json)), pushes);
  });

  test('a cancel through one instance stops the task running on the other', async () => {
    const taskId = await submitToA();
    const running = await realtime!.until(`progress of ${taskId}`, (m) => m.type === 'task.status' && m.taskId === taskId && statusOf(m.data) === 'process', 30_000);
    const runner = running.data.queue_status.server as string;
    const other = runner === 'multi-a' ? b : a;

    const res = await other.fetch(`/v1/ai/cancel/${taskId}`, token);
    assert.equal(res.status, 200);
    assert.equal(statusOf(await res.json()), 'cancelled');

    // The runner lets go of the job once its engine stopped; the task must still be cancelled then.
    await eventually('the job to leave Redis', () => jobGone(taskId));
    for (const instance of [a, b]) {
      const record = await recordOf(instance, taskId);
      assert.equal(statusOf(record), 'cancelled');
      assert.deepEqual(record.queue_status.data.output, []);
    }
    await realtime!.until(`cancelled of ${taskId}`, (m) => m.type === 'task.status' && m.taskId === taskId && statusOf(m.data) === 'cancelled');
    const pushes = realtime!.statusesOf(taskId).map(statusOf);
    assert.equal(pushes.at(-1), 'cancelled');
    assert.ok(!pushes.includes('success'), `pushes: ${pushes.join(' ')}`);
    const callbacks = await eventually('the cancelled callback', () => {
      const got = callbacksOf(taskId);
      return got.some((c) => statusOf(c.json) === 'cancelled') ? got : undefined;
    });
    assert.ok(!callbacks.some((c) => statusOf(c.json) === 'success'));
  });

  // Last: it leaves one instance standing.
  test('the task of an instance that dies is resumed by the other', async () => {
    const taskId = await submitToA();
    const running = await realtime!.until(`progress of ${taskId}`, (m) => m.type === 'task.status' && m.taskId === taskId && statusOf(m.data) === 'process', 30_000);
    const runner = running.data.queue_status.server as string;
    const [victim, survivor, survivorId] = runner === 'multi-a' ? [a, b, 'multi-b'] : [b, a, 'multi-a'];
    await victim.kill();

    // Its job's lock lapses after TASK_LEASE_MS; the survivor's stalled check hands it over.
    const record = await eventually('the task to end on the survivor', async () => {
      const r = await recordOf(survivor, taskId);
      return ['success', 'failed', 'cancelled'].includes(statusOf(r)) ? r : undefined;
    }, 30_000);
    assert.equal(statusOf(record), 'success');
    assert.equal(record.queue_status.server, survivorId);
    assert.equal(record.queue_status.data.output.length, 1);
    const resumed = await eventually('the resumed callback', () => callbacksOf(taskId).find((c) => c.json.queue_status.message === 'resumed after an interruption'));
    assert.equal(resumed.json.queue_status.server, survivorId);
  });
});
