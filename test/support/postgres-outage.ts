import { after, before, describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { ArkUpstream } from '../fakes/ark-upstream.ts';
import { CallbackReceiver } from '../fakes/callback-receiver.ts';
import { PrivatePostgres } from './private-postgres.ts';
import { spawnServer, type ServerProcess } from './process.ts';
import { redisEnv, tempDataDir } from './server.ts';
import { updatesAnnouncedTwice } from './task-updates.ts';
import { eventually } from './wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const KEY_ENV = 'GENGATE_TEST_OUTAGE_ARK_KEY';
const ARK_KEY = 'ark-outage-key';
/** How long the fake takes per image: some tasks are always mid-run when the database goes. */
const GENERATION_MS = 300;
const SUBMIT_EVERY_MS = 40;
/** The time the deployment guide gives an instance to serve again once PostgreSQL accepts connections. */
const BACK_WITHIN_MS = 2000;
/** Instances sharing the database queue beat this often, and are taken for dead after this silence. */
const HEARTBEAT = { WORKER_HEARTBEAT_MS: '500', WORKER_HEARTBEAT_TTL_MS: '3000' };
/** The outage outlasts the heartbeat TTL: every instance's heartbeat has lapsed when PostgreSQL returns. */
const OUTAGE_MS = 3500;
const TERMINAL = ['success', 'failed', 'rejected', 'cancelled'];
const START_TIMEOUT_MS = 60_000;

/** One async submit of the stream and how it was answered (`error`: no HTTP answer at all, e.g. a refused connection). */
interface Answer {
  prompt: string;
  instance: number;
  sentAt: number;
  status?: number;
  body?: Json;
  retryAfter?: string | null;
  error?: string;
}

/** Async image submits at a steady pace, alternating between the instances, each with a prompt of its own. */
class SubmitStream {
  readonly answers: Answer[] = [];
  private readonly pending = new Set<Promise<void>>();
  private running = true;
  private readonly loop: Promise<void>;

  private readonly instances: ServerProcess[];
  private readonly token: string;
  private readonly label: string;

  constructor(
    instances: ServerProcess[],
    token: string,
    label: string,
  ) {
    this.instances = instances;
    this.token = token;
    this.label = label;
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    for (let n = 0; this.running; n++) {
      const submit = this.submit(n);
      this.pending.add(submit);
      void submit.finally(() => this.pending.delete(submit));
      await delay(SUBMIT_EVERY_MS);
    }
  }

  private async submit(n: number): Promise<void> {
    const instance = n % this.instances.length;
    const answer: Answer = { prompt: `${this.label} harbour ${n}`, instance, sentAt: Date.now() };
    try {
      const res = await fetch(`${this.instances[instance]!.url}/v1/images/generations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${this.token}`, 'content-type': 'application/json', 'x-async': '1' },
        body: JSON.stringify({ model: 'seedream-4.0', prompt: answer.prompt, size: '1024x1024' }),
        signal: AbortSignal.timeout(10_000),
      });
      answer.status = res.status;
      answer.retryAfter = res.headers.get('retry-after');
      answer.body = await res.json();
    } catch (err) {
      answer.error = `${(err as Error).message}${(err as Error).cause ? ` (${String((err as { cause: unknown }).cause)})` : ''}`;
    }
    this.answers.push(answer);
  }

  /** Submits answered after `since`. */
  answeredSince(since: number, status: number): Answer[] {
    return this.answers.filter((a) => a.sentAt >= since && a.status === status);
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
    await Promise.all([...this.pending]);
  }
}

const alive = (p: ServerProcess) => p.child.exitCode === null && p.child.signalCode === null;

/**
 * A PostgreSQL server of the suite's own under two instances taking a steady stream of async
 * submits, stopped with `signal` and started again on the same data and port: the instances live
 * through it, answer 503 meanwhile, serve again within 2 s of its return, and every accepted task
 * ends once, run once, announced once. One outage per test file, so the runner spreads the two
 * cases (each over a minute) over its processes.
 */
export function describePostgresOutage(name: string, signal: NodeJS.Signals, queue: { redis: boolean }): void {
  describe('a PostgreSQL outage under a stream of async submits', () => {
    let postgres: PrivatePostgres | { skip: string };
    let upstream: ArkUpstream;
    let receiver: CallbackReceiver;

    before(async () => {
      postgres = await PrivatePostgres.create();
      if ('skip' in postgres) {
        process.stdout.write(`# ${postgres.skip}\n`);
        return;
      }
      await postgres.start();
      upstream = await ArkUpstream.start(ARK_KEY);
      upstream.imageDelayMs = GENERATION_MS;
      receiver = await CallbackReceiver.start();
    });

    after(async () => {
      await upstream?.close();
      await receiver?.close();
      if (postgres && !('skip' in postgres)) await postgres.remove();
    });

    async function outage(t: TestContext): Promise<void> {
      if ('skip' in postgres) return t.skip(postgres.skip);
      const db = postgres;
      const redis = queue.redis ? await redisEnv() : { env: {}, cleanup: async () => undefined };
      if ('skip' in redis) return t.skip(redis.skip);
      const dataDir = tempDataDir();
      const adminToken = `outage-admin-${randomBytes(8).toString('hex')}`;
      const env = {
        ...redis.env,
        DATABASE_URL: db.url,
        DATABASE_SCHEMA: `outage_${signal.toLowerCase()}`,
        ...(queue.redis ? {} : HEARTBEAT),
        DATA_DIR: dataDir,
        ADMIN_TOKEN: adminToken,
        [KEY_ENV]: ARK_KEY,
        GENGATE_CONFIG: JSON.stringify({ providers: { volcengine: { base_url: `${upstream.url}/api/v3`, api_key_env: KEY_ENV } }, callback: { callback_url: receiver.url } }),
      };
      const spawned = await Promise.allSettled([`${signal}-a`, `${signal}-b`].map((id) => spawnServer({ ...env, INSTANCE_ID: id }, START_TIMEOUT_MS)));
      const instances = spawned.flatMap((x) => (x.status === 'fulfilled' ? [x.value] : []));
      const a = instances[0]!;
      const label = `${signal} ${randomBytes(4).toString('hex')}`;
      let stream: SubmitStream | undefined;
      try {
        for (const x of spawned) if (x.status === 'rejected') throw x.reason;
        const created = await fetch(`${a.url}/admin/tokens`, { method: 'POST', headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' }, body: JSON.stringify({ user_id: 'outage' }) });
        assert.equal(created.status, 201);
        const token = ((await created.json()) as Json).token as string;
        stream = new SubmitStream(instances, token, label);
        const s = stream;
        const bothAlive = () => {
          for (const p of instances) assert.ok(alive(p), `an instance exited during the outage:\n${p.output()}`);
        };
        await eventually('accepted submits before the outage', () => s.answers.filter((x) => x.status === 200).length >= 10);

        await db.stop(signal);
        const downAt = Date.now();
        await eventually('503 answers to submits on both instances', () => {
          bothAlive();
          const refused = s.answeredSince(downAt, 503);
          return [0, 1].every((i) => refused.some((x) => x.instance === i));
        }, 10_000);
        for (const p of instances) {
          assert.equal((await fetch(`${p.url}/healthz`)).status, 503);
          // What needs no database is still served.
          assert.equal((await fetch(`${p.url}/v1/models`, { headers: { authorization: `Bearer ${token}` } })).status, 200);
        }
        await eventually(`an outage of ${OUTAGE_MS} ms`, () => {
          bothAlive();
          return Date.now() - downAt >= OUTAGE_MS;
        });

        await db.start();
        const backAt = Date.now();
        await eventually('/healthz 200 on both instances', async () => {
          bothAlive();
          const statuses = await Promise.all(instances.map(async (p) => (await fetch(`${p.url}/healthz`)).status));
          return statuses.every((x) => x === 200);
        }, 10_000);
        const tookMs = Date.now() - backAt;
        assert.ok(tookMs <= BACK_WITHIN_MS, `/healthz answered 200 ${tookMs} ms after PostgreSQL accepted connections again`);
        await eventually('accepted submits on both instances after the outage', () => {
          const accepted = s.answeredSince(backAt, 200);
          return [0, 1].every((i) => accepted.some((x) => x.instance === i));
        }, 10_000);
        await stream.stop();
        bothAlive();

        const answers = stream.answers;
        assert.deepEqual(answers.filter((x) => x.error !== undefined).map((x) => `${x.prompt}: ${x.error}`), [], 'submits without an answer');
        assert.deepEqual(answers.filter((x) => x.status !== 200 && x.status !== 503).map((x) => `${x.prompt}: ${x.status} ${JSON.stringify(x.body)}`), [], 'answers other than 200 and 503');
        for (const x of answers.filter((y) => y.status === 503)) {
          assert.equal(x.body.error.code, 'service_unavailable', JSON.stringify(x.body));
          assert.match(x.retryAfter ?? '', /^\d+$/, `Retry-After of ${x.prompt}`);
        }

        const accepted = answers.filter((x) => x.status === 200);
        const ids = accepted.map((x) => x.body.task_id as string);
        const statusesOf = async () => Promise.all(ids.map(async (id) => ((await (await fetch(`${a.url}/v1/ai/result/${id}`, { headers: { authorization: `Bearer ${token}` } })).json()) as Json).queue_status));
        const ended = await eventually('the end of every accepted task', async () => {
          const got = await statusesOf();
          return got.every((q) => TERMINAL.includes(q?.status)) ? got : undefined;
        }, 30_000).catch(async (err: Error) => {
          throw new Error(`${err.message}; still live: ${(await statusesOf()).filter((q) => !TERMINAL.includes(q?.status)).map((q) => JSON.stringify(q)).join('\n')}`);
        });
        assert.deepEqual(ended.filter((q) => q.status !== 'success').map((q) => `${q.task_id}: ${q.status} ${q.message}`), [], 'accepted tasks that did not succeed');

        // Run once: the upstream got each accepted prompt once, and no prompt twice.
        const sent = new Map<string, number>();
        for (const r of upstream.imageRequests) {
          const prompt = (r.json as { prompt: string }).prompt;
          if (prompt.startsWith(label)) sent.set(prompt, (sent.get(prompt) ?? 0) + 1);
        }
        assert.deepEqual([...sent].filter(([, n]) => n > 1), [], 'prompts sent upstream more than once');
        assert.deepEqual(accepted.filter((x) => sent.get(x.prompt) !== 1).map((x) => x.prompt), [], 'accepted tasks never sent upstream');

        // Announced once: one success callback per task, no update twice, no delivered callback sent again.
        await eventually('the success callback of every accepted task', () =>
          ids.every((id) => receiver.requests.some((c) => c.json?.queue_status?.task_id === id && c.json.queue_status.status === 'success')), 20_000);
        for (const id of ids) {
          const callbacks = receiver.requests.filter((c) => c.json?.queue_status?.task_id === id);
          assert.equal(callbacks.filter((c) => c.json.queue_status.status === 'success').length, 1, `success callbacks of ${id}`);
          assert.deepEqual(updatesAnnouncedTwice(receiver.requests, id), [], `updates of ${id} announced twice`);
          const webhookIds = callbacks.map((c) => c.id);
          assert.equal(new Set(webhookIds).size, webhookIds.length, `a delivered callback of ${id} was sent again: ${webhookIds.join(' ')}`);
        }
      } catch (err) {
        for (const [i, p] of instances.entries()) process.stdout.write(`# output of instance ${i}:\n${p.output().split('\n').map((line) => `#   ${line.slice(0, 1000)}`).join('\n')}\n`);
        process.stdout.write(`# PostgreSQL:\n${db.output().replace(/^/gm, '#   ')}\n`);
        throw err;
      } finally {
        await stream?.stop();
        await Promise.all(instances.map((p) => p.stop('SIGKILL')));
        await redis.cleanup();
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    }

    it(name, (t) => outage(t));
  });
}
