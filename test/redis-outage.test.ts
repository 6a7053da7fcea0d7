import { after, before, describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import type { GenerationEngine, GenerationJob, RunContext } from '../src/providers/spec.ts';
import { CallbackReceiver } from './fakes/callback-receiver.ts';
import { RedisServer } from './support/redis-server.ts';
import { dropSchema, postgresEnv, startTestServer, type TestServer } from './support/server.ts';
import { updatesAnnouncedTwice } from './support/task-updates.ts';
import { eventually } from './support/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** The longest a submit may wait on Redis, with a little slack for a busy machine. */
const SUBMIT_BOUND_MS = 2000 + 500;
/** Running and waiting tasks end within this long of Redis's return (5 s, plus slack). */
const RECOVERY_BOUND_MS = 5000 + 1500;
/** How long Redis stays away: longer than a submit may wait. */
const OUTAGE_MS = 3000;
const STEP_MS = 250;
/** A long task spans the outage (5 s); a short one runs in a second. */
const STEPS = { long: 20, short: 4 };
const TERMINAL = ['success', 'failed', 'rejected', 'cancelled'];

/** Runs a task in steps, reporting progress after each, and counts the runs of every task. */
class SteppingEngine implements GenerationEngine {
  readonly cancellable = true;
  readonly runs = new Map<string, number>();

  async run(job: GenerationJob, ctx: RunContext) {
    this.runs.set(job.taskId, (this.runs.get(job.taskId) ?? 0) + 1);
    const steps = (job.input as { prompt: string }).prompt === 'long' ? STEPS.long : STEPS.short;
    for (let i = 1; i <= steps; i++) {
      await delay(STEP_MS, undefined, { signal: ctx.signal });
      await ctx.progress(Math.floor((i * 100) / (steps + 1)));
    }
    return { files: [], texts: [{ content: `done ${job.taskId}` }] };
  }
}

const statusOf = (record: Json): string => record.queue_status.status;

describe('a Redis outage (a redis-server of the test, killed or stopped)', () => {
  let skip: string | undefined;
  let redis: RedisServer;
  let srv: TestServer;
  let receiver: CallbackReceiver;
  let schema: string;
  const engine = new SteppingEngine();
  /** A user without limits (submits need no Redis answer) and one with a request rate (each call asks Redis). */
  const tokens = { free: '', limited: '' };

  before(async () => {
    const skipWith = (reason: string) => {
      skip = reason;
      process.stdout.write(`# ${reason}\n`);
    };
    const pg = await postgresEnv();
    if ('skip' in pg) return skipWith(pg.skip);
    const started = await RedisServer.start();
    if ('skip' in started) return skipWith(started.skip);
    redis = started;
    schema = pg.env.DATABASE_SCHEMA!;
    receiver = await CallbackReceiver.start();
    srv = await startTestServer({
      ...pg.env,
      REDIS_URL: redis.url,
      REDIS_PREFIX: 'outage',
      GENGATE_CONFIG: JSON.stringify({ callback: { callback_url: receiver.url } }),
    }, { engines: { engineFor: () => engine } });
    tokens.free = await srv.tokenFor('free');
    const res = await srv.fetch('/admin/tokens', { method: 'POST', token: srv.adminToken, json: { user_id: 'limited', limits: { requests_per_minute: 6000 } } });
    assert.equal(res.status, 201);
    tokens.limited = ((await res.json()) as Json).token;
  });

  /** Redis back as it should be, whatever a failed test left: the server's shutdown needs it. */
  async function redisUp(): Promise<void> {
    await redis.signal('SIGCONT');
    if (!(await redis.answers())) await redis.restart();
  }

  after(async () => {
    if (redis) await redisUp();
    await srv?.close();
    await redis?.close();
    await receiver?.close();
    if (schema) await dropSchema(schema);
  });

  const test = (name: string, fn: () => Promise<void>) =>
    it(name, { timeout: 40_000 }, async (t: TestContext) => {
      if (skip) return t.skip(skip);
      await redisUp();
      await fn();
    });

  async function recordOf(taskId: string): Promise<Json> {
    const res = await srv.fetch(`/v1/ai/result/${taskId}`, { token: tokens.free });
    assert.equal(res.status, 200);
    return res.json();
  }

  /** A request that must answer within SUBMIT_BOUND_MS, and its answer. */
  async function bounded(pathname: string, init: Parameters<TestServer['fetch']>[1] = {}): Promise<{ res: Response; body: Json }> {
    try {
      const res = await srv.fetch(pathname, { ...init, signal: AbortSignal.timeout(SUBMIT_BOUND_MS) });
      return { res, body: await res.json() };
    } catch (err) {
      if ((err as Error).name === 'TimeoutError') assert.fail(`${init.method ?? 'GET'} ${pathname} did not answer within ${SUBMIT_BOUND_MS} ms`);
      throw err;
    }
  }

  function submit(token: string, prompt: 'long' | 'short'): Promise<{ res: Response; body: Json }> {
    return bounded('/v1/images/generations', { method: 'POST', token, json: { prompt, model: 'seedream-4.0', size: '64x64' }, headers: { 'x-async': '1' } });
  }

  async function running(count: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const { res, body } = await submit(tokens.free, 'long');
      assert.equal(res.status, 200, JSON.stringify(body));
      ids.push(body.task_id);
    }
    await eventually('the long tasks running', async () => (await Promise.all(ids.map(recordOf))).every((r) => statusOf(r) === 'process'), 10_000);
    return ids;
  }

  /** While Redis is away: free submits are accepted, limited ones refused with 503, each within the bound; /healthz says so. */
  async function submitsDuringOutage(): Promise<string[]> {
    const [free, limited, health] = await Promise.all([
      Promise.all([submit(tokens.free, 'short'), submit(tokens.free, 'short')]),
      submit(tokens.limited, 'short'),
      bounded('/healthz'),
    ]);
    for (const { res, body } of free) {
      assert.equal(res.status, 200, JSON.stringify(body));
      assert.equal(body.status, 'submitted');
    }
    assert.equal(limited.res.status, 503, JSON.stringify(limited.body));
    assert.equal(limited.body.error.code, 'service_unavailable');
    assert.match(limited.res.headers.get('retry-after') ?? '', /^\d+$/);
    assert.deepEqual({ status: health.res.status, redis: health.body.redis }, { status: 200, redis: 'unreachable' });
    return free.map((f) => f.body.task_id as string);
  }

  /** Every task ends in success by `deadline`, was run once, and announced each update once (callbacks). */
  async function allEndOnceBy(ids: string[], deadline: number): Promise<void> {
    const ends = new Map<string, { record: Json; at: number }>();
    await eventually('every accepted task ended', async () => {
      for (const id of ids) if (!ends.has(id)) {
        const record = await recordOf(id);
        if (TERMINAL.includes(statusOf(record))) ends.set(id, { record, at: Date.now() });
      }
      return ends.size === ids.length;
    }, deadline - Date.now() + 10_000);
    for (const [id, { record, at }] of ends) {
      assert.equal(statusOf(record), 'success', `${id}: ${JSON.stringify(record.queue_status)}`);
      assert.ok(at <= deadline, `${id} ended ${at - deadline} ms after the deadline`);
      assert.equal(engine.runs.get(id), 1, `${id} was run ${engine.runs.get(id)} times`);
    }
    await eventually('the success callbacks', () => ids.every((id) => receiver.requests.some((r) => r.json?.queue_status?.task_id === id && statusOf(r.json) === 'success')));
    for (const id of ids) {
      assert.deepEqual(updatesAnnouncedTwice(receiver.requests, id), [], `${id}: an update was sent twice`);
      const statuses = receiver.requests.filter((r) => r.json?.queue_status?.task_id === id).map((r) => `${statusOf(r.json)} ${r.json.queue_status.message}`);
      assert.equal(statuses.filter((s) => s.startsWith('started')).length, 1, statuses.join(', '));
      assert.ok(!statuses.some((s) => s.includes('resumed after an interruption')), statuses.join(', '));
    }
    const health: Json = await (await srv.fetch('/healthz')).json();
    assert.deepEqual({ status: health.status, redis: health.redis }, { status: 'ok', redis: 'ok' });
  }

  test('killed (SIGKILL) and restarted empty: submits answer at once, running tasks go on, and every task ends once within 5 s of its return', async () => {
    const long = await running(3);
    await redis.signal('SIGKILL');
    const killedAt = Date.now();
    const progressAtKill = new Map((await Promise.all(long.map(recordOf))).map((r) => [r.queue_status.task_id as string, r.queue_status.progress as number]));
    const short = await submitsDuringOutage();
    // The running tasks do not wait for Redis either.
    await eventually('progress of the running tasks while Redis is down', async () => (await Promise.all(long.map(recordOf))).every((r) => r.queue_status.progress > progressAtKill.get(r.queue_status.task_id)!), 2000);
    assert.equal(await redis.answers(), false, 'Redis is still away');
    await delay(Math.max(0, killedAt + OUTAGE_MS - Date.now()));

    await redis.restart();
    await allEndOnceBy([...long, ...short], Date.now() + RECOVERY_BOUND_MS);
  });

  test('stopped (SIGSTOP): submits do not wait out the stall, and every task ends once within 5 s of SIGCONT', async () => {
    const long = await running(2);
    await redis.signal('SIGSTOP');
    const stoppedAt = Date.now();
    const short = await submitsDuringOutage();
    await delay(Math.max(0, stoppedAt + OUTAGE_MS - Date.now()));

    await redis.signal('SIGCONT');
    await allEndOnceBy([...long, ...short], Date.now() + RECOVERY_BOUND_MS);
  });
});
