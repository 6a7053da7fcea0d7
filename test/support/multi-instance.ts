/**
 * Two `gengate serve` processes on one PostgreSQL schema, one DATA_DIR and a callback receiver
 * (test/multi-instance*.test.ts): the deployment, a realtime client, and the cases both queues share.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import WebSocket from 'ws';
import { CallbackReceiver, type ReceivedCallback } from '../fakes/callback-receiver.ts';
import { dropSchema, postgresEnv, redisEnv, tempDataDir } from './server.ts';
import { eventually } from './wait.ts';
import { spawnServer, type ServerProcess } from './process.ts';
import { updatesAnnouncedTwice } from './task-updates.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const IMAGE = { prompt: 'two harbours, one ship', model: 'seedream-4.0', size: '64x64' };
const START_TIMEOUT_MS = 60_000;

/** One `gengate serve` process of the deployment. */
export class Instance {
  readonly name: string;
  readonly id: string;
  private readonly proc: ServerProcess;

  private constructor(
    name: string,
    /** Its INSTANCE_ID, the `server` of the tasks it runs. */
    id: string,
    proc: ServerProcess,
  ) {
    this.name = name;
    this.id = id;
    this.proc = proc;
  }

  static async spawn(name: string, id: string, env: Record<string, string>): Promise<Instance> {
    return new Instance(name, id, await spawnServer({ ...env, INSTANCE_ID: id }, START_TIMEOUT_MS));
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

  /** Stops the process (SIGSTOP) for `ms`, as a long pause or a stalled host would, then lets it go on. */
  async freeze(ms: number): Promise<void> {
    this.proc.child.kill('SIGSTOP');
    await delay(ms);
    this.proc.child.kill('SIGCONT');
  }

  /** SIGTERM, then SIGKILL when it has not exited within a few seconds. */
  async stop(): Promise<void> {
    const timer = setTimeout(() => void this.proc.stop('SIGKILL'), 5000);
    await this.proc.stop('SIGTERM');
    clearTimeout(timer);
  }
}

/** A realtime session on channel `draw`, past the handshake, collecting what the server pushes. */
export class RealtimeClient {
  readonly messages: Json[] = [];

  private readonly ws: WebSocket;

  private constructor(ws: WebSocket) {
    this.ws = ws;
  }

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

export const statusOf = (record: Json): string => record.queue_status.status;

/**
 * Instances A and B on one PostgreSQL schema (and one Redis prefix when `redis` is given), one
 * shared DATA_DIR, a callback receiver, and a user's token. The heartbeat settings are the
 * defaults and TASK_LEASE_MS is left at its 30 s: a dead instance's tasks must move sooner.
 */
export class Deployment {
  readonly instances: Instance[] = [];
  private readonly cleanups: (() => Promise<void>)[] = [];
  token = '';
  /** The instances' REDIS_PREFIX, when they share Redis. */
  redisPrefix: string | undefined;
  readonly receiver: CallbackReceiver;

  private constructor(receiver: CallbackReceiver) {
    this.receiver = receiver;
  }

  /** The deployment, or why it cannot run here. */
  static async start(withRedis: boolean): Promise<Deployment | { skip: string }> {
    const pg = await postgresEnv();
    if ('skip' in pg) return pg;
    const found = withRedis ? await redisEnv() : { env: {}, cleanup: async () => undefined };
    if ('skip' in found) return found;
    const deployment = new Deployment(await CallbackReceiver.start());
    deployment.redisPrefix = found.env.REDIS_PREFIX;
    const dataDir = tempDataDir();
    deployment.cleanups.push(() => dropSchema(pg.env.DATABASE_SCHEMA!), found.cleanup, async () => fs.rmSync(dataDir, { recursive: true, force: true }));
    const adminToken = `multi-admin-${randomBytes(8).toString('hex')}`;
    const env = {
      ...pg.env,
      ...found.env,
      // One shared volume, as instances behind one public address would have.
      DATA_DIR: dataDir,
      ADMIN_TOKEN: adminToken,
      LOCAL_ENGINE_MIN_DURATION_MS: '2500',
      GENGATE_CONFIG: JSON.stringify({ callback: { callback_url: deployment.receiver.url } }),
    };
    const spawned = await Promise.allSettled([Instance.spawn('A', 'multi-a', env), Instance.spawn('B', 'multi-b', env)]);
    for (const s of spawned) if (s.status === 'fulfilled') deployment.instances.push(s.value);
    for (const s of spawned) if (s.status === 'rejected') {
      await deployment.stop();
      throw s.reason;
    }
    const res = await deployment.a.fetch('/admin/tokens', adminToken, { method: 'POST', json: { user_id: 'erin' } });
    assert.equal(res.status, 201);
    deployment.token = ((await res.json()) as Json).token;
    return deployment;
  }

  get a(): Instance {
    return this.instances[0]!;
  }

  get b(): Instance {
    return this.instances[1]!;
  }

  async submitToA(): Promise<string> {
    const res = await this.a.fetch('/v1/images/generations', this.token, { method: 'POST', json: IMAGE, headers: { 'x-async': '1' } });
    assert.equal(res.status, 200);
    return ((await res.json()) as Json).task_id;
  }

  async recordOf(instance: Instance, taskId: string): Promise<Json> {
    const res = await instance.fetch(`/v1/ai/result/${taskId}`, this.token);
    assert.equal(res.status, 200);
    return res.json();
  }

  callbacksOf(taskId: string): ReceivedCallback[] {
    return this.receiver.requests.filter((r) => r.json?.queue_status?.task_id === taskId);
  }

  /** A task submitted to A, once under way, with the instance running it and the other one. */
  async runningTask(): Promise<{ taskId: string; runner: Instance; other: Instance }> {
    const taskId = await this.submitToA();
    const record = await eventually(`progress of ${taskId}`, async () => {
      const r = await this.recordOf(this.a, taskId);
      return statusOf(r) === 'process' ? r : undefined;
    }, 30_000);
    const runner = this.instances.find((i) => i.id === record.queue_status.server)!;
    return { taskId, runner, other: runner === this.a ? this.b : this.a };
  }

  async ended(instance: Instance, taskId: string): Promise<Json> {
    return eventually(`the end of ${taskId}`, async () => {
      const r = await this.recordOf(instance, taskId);
      return ['success', 'failed', 'cancelled'].includes(statusOf(r)) ? r : undefined;
    }, 30_000);
  }

  /** Every instance's output, for a failure message. */
  dumpOutputs(): void {
    for (const i of this.instances) process.stdout.write(`# output of ${i.name}:\n${i.output().replace(/^/gm, '#   ')}\n`);
  }

  async stop(): Promise<void> {
    await Promise.allSettled(this.instances.map((i) => i.stop()));
    await this.receiver.close();
    for (const cleanup of this.cleanups) await cleanup().catch(() => undefined);
  }
}

/** Runs `fn` unless the deployment could not start, dumping the instances' output when it fails. */
export function deploymentTest(deployment: () => Deployment | { skip: string } | undefined, name: string, fn: (d: Deployment) => Promise<void>) {
  it(name, async (t) => {
    const d = deployment();
    if (!d || 'skip' in d) return t.skip(d?.skip);
    try {
      await fn(d);
    } catch (err) {
      d.dumpOutputs();
      throw err;
    }
  });
}

/** An instance frozen for less than the heartbeat TTL (5 s by default) keeps its task: nothing runs it a second time. */
export async function frozenInstanceKeepsItsTask(d: Deployment): Promise<void> {
  const { taskId, runner, other } = await d.runningTask();
  await runner.freeze(2000);
  const record = await d.ended(other, taskId);
  assert.equal(statusOf(record), 'success');
  assert.equal(record.queue_status.server, runner.id);
  const callbacks = await eventually('the success callback', () => {
    const got = d.callbacksOf(taskId);
    return got.some((c) => statusOf(c.json) === 'success') ? got : undefined;
  });
  const statuses = callbacks.map((c) => `${statusOf(c.json)} ${c.json.queue_status.message}`);
  assert.equal(statuses.filter((s) => s.startsWith('started')).length, 1, statuses.join(', '));
  assert.ok(!statuses.some((s) => s.includes('resumed after an interruption')), statuses.join(', '));
}

/** The survivor takes over the task of a killed instance within 10 s, and announces no update twice. */
export async function survivorTakesOverWithin10s(d: Deployment): Promise<void> {
  const { taskId, runner: victim, other: survivor } = await d.runningTask();
  await victim.kill();
  const killedAt = Date.now();
  await eventually('the survivor to take the task over', async () => (await d.recordOf(survivor, taskId)).queue_status.server === survivor.id, 30_000);
  const tookMs = Date.now() - killedAt;
  assert.ok(tookMs <= 10_000, `taken over ${tookMs} ms after the kill`);

  const record = await d.ended(survivor, taskId);
  assert.equal(statusOf(record), 'success');
  assert.equal(record.queue_status.server, survivor.id);
  assert.equal(record.queue_status.data.output.length, 1);
  const resumed = await eventually('the resumed callback', () => d.callbacksOf(taskId).find((c) => c.json.queue_status.message === 'resumed after an interruption'));
  assert.equal(resumed.json.queue_status.server, survivor.id);
  await eventually('the success callback', () => d.callbacksOf(taskId).some((c) => statusOf(c.json) === 'success'));
  assert.deepEqual(updatesAnnouncedTwice(d.receiver.requests, taskId), []);
}
