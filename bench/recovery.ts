// Recovery after kill -9, with tasks of 20 s on the local engine: how soon the running tasks of an
// embedded server restarted on the same DATA_DIR are resumed, and how soon the surviving one of
// two instances on PostgreSQL + Redis takes over the tasks of the one killed.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { createToken, onPostgres, startBenchServer, type BenchServer } from './support.ts';

const TASK_MS = 20_000;
const TASKS = 4;
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const BODY = JSON.stringify({ prompt: 'recovery', model: 'seedream-4.0', size: '64x64' });

interface QueueStatus {
  task_id: string;
  status: string;
  progress: number;
  server: string | null;
}

async function submit(server: BenchServer, token: string): Promise<string> {
  const res = await fetch(`${server.url}/v1/images/generations`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-async': '1' }, body: BODY });
  return ((await res.json()) as { task_id: string }).task_id;
}

async function statusOf(server: BenchServer, token: string, taskId: string): Promise<QueueStatus> {
  const res = await fetch(`${server.url}/v1/ai/result/${taskId}`, { headers: { authorization: `Bearer ${token}` } });
  return ((await res.json()) as { queue_status: QueueStatus }).queue_status;
}

/** Polls until `done` holds for every task; answers their last statuses. */
async function until(server: BenchServer, token: string, ids: readonly string[], done: (q: QueueStatus) => boolean, timeoutMs: number): Promise<QueueStatus[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const all = await Promise.all(ids.map((id) => statusOf(server, token, id)));
    if (all.every(done)) return all;
    if (Date.now() > deadline) throw new Error(`tasks not there within ${timeoutMs} ms: ${JSON.stringify(all)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Watches the tasks from `since` until each was taken over by `taker` (its record names that
 * server) and then moved (a progress beyond the takeover's, or the end); answers the slowest of each.
 */
async function watchTakeover(server: BenchServer, token: string, ids: readonly string[], taker: (q: QueueStatus) => boolean, since: number): Promise<{ takenMs: number; movedMs: number }> {
  const taken = new Map<string, { ms: number; progress: number }>();
  const moved = new Map<string, number>();
  const deadline = since + 120_000;
  while (moved.size < ids.length) {
    if (Date.now() > deadline) throw new Error('the tasks were not taken over within 120 s');
    for (const id of ids) {
      if (moved.has(id)) continue;
      const q = await statusOf(server, token, id);
      const ms = Date.now() - since;
      const at = taken.get(id);
      if (!at && taker(q)) taken.set(id, { ms, progress: q.progress });
      else if (at && (q.progress > at.progress || q.status === 'success')) moved.set(id, ms);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { takenMs: Math.max(...[...taken.values()].map((t) => t.ms)), movedMs: Math.max(...moved.values()) };
}

/** kill -9: no shutdown, nothing handed back. */
async function crash(server: BenchServer): Promise<void> {
  server.child.kill('SIGKILL');
  await server.stop();
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

async function embeddedRestart(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gengate-bench-recovery-'));
  const env = { DATA_DIR: dataDir, LOCAL_ENGINE_MIN_DURATION_MS: String(TASK_MS), WORKER_CONCURRENCY: String(TASKS) };
  let server = await startBenchServer(env);
  try {
    const token = await createToken(server, 'bench');
    const ids: string[] = [];
    for (let i = 0; i < TASKS; i++) ids.push(await submit(server, token));
    const before = await until(server, token, ids, (q) => q.status === 'process' && q.progress > 0, 60_000);
    const oldServer = before[0]!.server;
    await crash(server);
    server = await startBenchServer(env);
    const ready = Date.now();
    const { takenMs, movedMs } = await watchTakeover(server, token, ids, (q) => q.server !== oldServer, ready);
    process.stdout.write(
      `recovery (SQLite, restarted on the same DATA_DIR): ${TASKS} running tasks resumed ${seconds(takenMs)} after the restart was ready (target ≤ 3 s); ` +
      `each moved on (a new progress or the end) within ${seconds(movedMs)} (a progress step of these tasks is ${seconds(TASK_MS / 6)})\n`,
    );
  } finally {
    await server.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Runs `bench` with the env of an instance on Redis under a key prefix of its own, deleted afterwards; skips without Redis. */
async function onRedis(bench: (env: Record<string, string>) => Promise<void>): Promise<void> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, connectTimeout: 2000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
  } catch (err) {
    process.stdout.write(`recovery (PostgreSQL + Redis): skipped, Redis not reachable at ${REDIS_URL} (${(err as Error).message})\n`);
    return;
  }
  const prefix = `bench-recovery-${process.pid}`;
  try {
    await bench({ REDIS_URL, REDIS_PREFIX: prefix });
  } finally {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.unlink(...keys);
    redis.disconnect();
  }
}

async function survivorTakeover(env: Record<string, string>): Promise<void> {
  const common = { ...env, LOCAL_ENGINE_MIN_DURATION_MS: String(TASK_MS), WORKER_CONCURRENCY: String(TASKS) };
  const [a, b] = await Promise.all([startBenchServer({ ...common, INSTANCE_ID: 'bench-a' }), startBenchServer({ ...common, INSTANCE_ID: 'bench-b' })]);
  try {
    const token = await createToken(a, 'bench');
    const ids: string[] = [];
    for (let i = 0; i < TASKS; i++) ids.push(await submit(a, token));
    const running = await until(a, token, ids, (q) => q.status === 'process' && q.progress > 0, 60_000);
    const onA = running.filter((q) => q.server === 'bench-a').map((q) => q.task_id);
    if (onA.length === 0) throw new Error('instance A runs none of the tasks');
    await crash(a);
    const killed = Date.now();
    const { takenMs, movedMs } = await watchTakeover(b, token, onA, (q) => q.server === 'bench-b', killed);
    process.stdout.write(
      `recovery (PostgreSQL + Redis, one of two instances killed): the survivor took over the ${onA.length} running task(s) of the killed one ${seconds(takenMs)} after the kill (target ≤ 10 s); ` +
      `each moved on within ${seconds(movedMs)}\n`,
    );
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
}

await embeddedRestart();
await onPostgres('recovery', (pg) => onRedis((redis) => survivorTakeover({ ...pg, ...redis })));
