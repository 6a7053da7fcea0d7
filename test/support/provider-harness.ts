import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import pino from 'pino';
import { loadCatalog, type Catalog } from '../../src/catalog/catalog.ts';
import type { AdapterFactory } from '../../src/providers/adapter-support.ts';
import type { GenerationEngine, GenerationJob, GenerationOutput } from '../../src/providers/spec.ts';
import { upload } from './media.ts';
import { runContext } from './run-context.ts';
import { startTestServer, tempDataDir, type TestServer } from './server.ts';
import { eventually } from './wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

/** Task statuses a task never leaves. */
const TERMINAL_STATUSES = ['success', 'failed', 'rejected', 'cancelled'];

// ---- adapters called directly ----

/** An engine made by `factory` against a fake at `baseURL`: quick polling and retries, silent logs. */
export function adapterEngine(factory: AdapterFactory, provider: string, baseURL: string, apiKey: string): GenerationEngine {
  return factory({
    provider,
    settings: {},
    baseURL,
    apiKey,
    client: { provider, timeoutMs: 5_000, concurrency: 4, retry: { attempts: 2, baseDelayMs: 5, maxDelayMs: 20 } },
    pollIntervalMs: 5,
    maxWaitMs: 10_000,
    fetch,
    logger: pino({ level: 'silent' }),
  });
}

let catalog: Catalog | undefined;
let jobs = 0;

/** A job for the built-in catalog's model `alias` as the worker hands it over; `realModel` replaces the model's upstream name. */
export function catalogJob(alias: string, endpoint: string, input: Record<string, unknown>, realModel?: string): GenerationJob {
  catalog ??= loadCatalog({ config: {} });
  const model = catalog.find(alias);
  assert.ok(model, alias);
  // The input as the endpoint's service builds it.
  return { taskId: `task-${++jobs}`, ownerId: 'u1', endpoint, model: realModel ? { ...model, defaultRealModelName: realModel } : model, input, attempt: 1 } as GenerationJob;
}

/** Runs the engine's check and then the job, as the worker does. */
export async function runJob(engine: GenerationEngine, job: GenerationJob, ctx = runContext()): Promise<GenerationOutput> {
  await engine.check?.(job);
  return engine.run(job, ctx);
}

// ---- through the gateway over HTTP ----

/**
 * Env for a gateway whose provider `name` is at `baseUrl`, polling and retrying quickly so tests
 * stay short; `settings` adds or replaces the provider's keys, `others` configures more providers.
 */
export function providerEnv(name: string, baseUrl: string, settings: Record<string, unknown> = {}, others: Record<string, unknown> = {}): Record<string, string> {
  const provider = { base_url: baseUrl, poll_interval_ms: 10, retry: { attempts: 2, base_delay_ms: 5, max_delay_ms: 20 }, ...settings };
  return { GENGATE_CONFIG: JSON.stringify({ providers: { [name]: provider, ...others } }) };
}

/** A user of a gateway under test: requests with the user's token, and the user's task records. */
export class GatewayUser {
  readonly srv: TestServer;
  readonly token: string;

  constructor(srv: TestServer, token: string) {
    this.srv = srv;
    this.token = token;
  }

  /** Creates the user's token on `srv`. */
  static async of(srv: TestServer, userId: string): Promise<GatewayUser> {
    return new GatewayUser(srv, await srv.tokenFor(userId));
  }

  /** POSTs `body` as JSON; the response as it comes. */
  post(path: string, body: Json, headers: Record<string, string> = {}): Promise<Response> {
    return this.srv.fetch(path, { method: 'POST', token: this.token, json: body, headers });
  }

  /** POSTs `body` as JSON and answers the reply, which must be a 200. */
  async postOk(path: string, body: Json, headers: Record<string, string> = {}): Promise<Json> {
    const res = await this.post(path, body, headers);
    const json = await res.json();
    assert.equal(res.status, 200, JSON.stringify(json));
    return json;
  }

  /** Uploads bytes through /v1/files/upload and answers the file's URL. */
  upload(data: Buffer, fileName: string, type: string): Promise<string> {
    return upload(this.srv, this.token, data, fileName, type);
  }

  /** The task's record (GET /v1/ai/result/{id}). */
  async record(taskId: string): Promise<Json> {
    const res = await this.srv.fetch(`/v1/ai/result/${taskId}`, { token: this.token });
    assert.equal(res.status, 200);
    return res.json();
  }

  /** Waits until the task's record satisfies `done` and answers it. */
  recordWhen(taskId: string, done: (record: Json) => boolean, timeoutMs = 20_000): Promise<Json> {
    return eventually(`task ${taskId}`, async () => {
      const record = await this.record(taskId);
      return done(record) ? record : undefined;
    }, timeoutMs);
  }

  /** Waits until the task has ended and answers its queue_status. */
  async settledStatus(taskId: string): Promise<Json> {
    return (await this.recordWhen(taskId, (r) => TERMINAL_STATUSES.includes(r.queue_status?.status))).queue_status;
  }

  /** The queue_status of the task a synchronous request failed: the answer must be 502 task_failed. */
  async failedStatus(res: Response): Promise<Json> {
    const err: Json = await res.json();
    assert.equal(res.status, 502, JSON.stringify(err));
    assert.equal(err.error.code, 'task_failed');
    const status = (await this.record(err.error.task_id)).queue_status;
    assert.equal(status.status, 'failed');
    return status;
  }

  /** Checks a request refused before anything was sent upstream: 422 task_rejected with `message`, the task rejected. */
  async assertRejected(res: Response, message: RegExp): Promise<void> {
    const err: Json = await res.json();
    assert.equal(res.status, 422, JSON.stringify(err));
    assert.equal(err.error.code, 'task_rejected');
    assert.match(err.error.message, message);
    assert.equal((await this.record(err.error.task_id)).queue_status.status, 'rejected');
  }

  /** Asks to cancel the task (GET /v1/ai/cancel/{id}). */
  cancel(taskId: string): Promise<Response> {
    return this.srv.fetch(`/v1/ai/cancel/${taskId}`, { token: this.token });
  }

  /** Asks to cancel the task and checks the refusal every external API task gets: 409 task_not_cancellable. */
  async assertNotCancellable(taskId: string): Promise<void> {
    const res = await this.cancel(taskId);
    assert.equal(res.status, 409);
    assert.equal(((await res.json()) as Json).error.code, 'task_not_cancellable');
  }
}

/** A fake upstream and, configured for it, a gateway with one user. */
export interface ProviderGateway<F> {
  fake: F;
  user: GatewayUser;
}

/**
 * Registers hooks that start a fake upstream and a gateway configured for it (with a token for
 * `userId`) before the suite's tests and close both after them; the answer is filled in by then.
 */
export function useProviderGateway<F extends { close(): Promise<void> }>(opts: { startFake: () => Promise<F>; env: (fake: F) => Record<string, string>; userId: string }): ProviderGateway<F> {
  const suite = {} as ProviderGateway<F>;
  before(async () => {
    suite.fake = await opts.startFake();
    suite.user = await GatewayUser.of(await startTestServer(opts.env(suite.fake)), opts.userId);
  });
  after(async () => {
    await suite.user?.srv.close();
    await suite.fake?.close();
  });
  return suite;
}

/** Runs `fn` as `userId` on a gateway started with `env`, closed afterwards. */
export async function withGateway<T>(env: Record<string, string>, userId: string, fn: (user: GatewayUser) => Promise<T>): Promise<T> {
  const srv = await startTestServer(env);
  try {
    return await fn(await GatewayUser.of(srv, userId));
  } finally {
    await srv.close();
  }
}

/** A gateway on a DATA_DIR of its own that outlives restarts; its user's token does too. */
export interface RestartingGateway {
  /** The user on the server running now. */
  user: GatewayUser;
  /**
   * Stops the server, runs `meanwhile` (what the upstream does while no gateway runs), then
   * starts another on the same data, with `env` from now on when given.
   */
  restart(opts?: { meanwhile?: () => void; env?: Record<string, string> }): Promise<GatewayUser>;
}

/** Runs `fn` with a gateway started with `env` on a fresh DATA_DIR, removed with the last server afterwards. */
export async function withRestartingGateway(env: Record<string, string>, userId: string, fn: (gateway: RestartingGateway) => Promise<void>): Promise<void> {
  const dataDir = tempDataDir();
  let current = { ...env, DATA_DIR: dataDir };
  let srv: TestServer | undefined = await startTestServer(current);
  try {
    const token = await srv.tokenFor(userId);
    const gateway: RestartingGateway = {
      user: new GatewayUser(srv, token),
      async restart({ meanwhile, env: next } = {}) {
        await srv!.close();
        srv = undefined;
        meanwhile?.();
        if (next) current = { ...next, DATA_DIR: dataDir };
        srv = await startTestServer(current);
        gateway.user = new GatewayUser(srv, token);
        return gateway.user;
      },
    };
    await fn(gateway);
  } finally {
    await srv?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

// ---- checks every external API passes ----

/** A request whose upstream task the fake holds until told, and how to watch that task. */
export interface HeldTask {
  path: string;
  /** The request body, made by the user who sends it (files it names go to that user's gateway). */
  body(user: GatewayUser): Json | Promise<Json>;
  /** The upstream task's id once the gateway has polled it. */
  polled(): string | undefined | false;
  /** Lets the upstream task finish. */
  finish(id: string): void;
}

/** Submits the held task (async); answers the gateway's task id and the upstream task's once it is polled. */
async function submitHeld(user: GatewayUser, held: HeldTask): Promise<{ taskId: string; upstreamId: string }> {
  const { task_id: taskId } = await user.postOk(held.path, await held.body(user), { 'x-async': '1' });
  return { taskId, upstreamId: await eventually('the upstream task polled', held.polled) };
}

/** A running task of an external API cannot be cancelled (409 task_not_cancellable) and ends in success once the upstream finishes. */
export async function assertNotCancellableWhileHeld(user: GatewayUser, held: HeldTask): Promise<void> {
  const { taskId, upstreamId } = await submitHeld(user, held);
  await user.assertNotCancellable(taskId);
  held.finish(upstreamId);
  assert.equal((await user.settledStatus(taskId)).status, 'success');
}

/**
 * A task running when its gateway stops resumes, after a restart on the same data, on the
 * upstream task it made: `submits` counts one more, and the task succeeds. Answers its queue_status.
 */
export async function assertResumedAfterRestart(env: Record<string, string>, held: HeldTask, submits: () => number): Promise<Json> {
  let status: Json;
  await withRestartingGateway(env, 'restarter', async (gateway) => {
    const before = submits();
    const { taskId, upstreamId } = await submitHeld(gateway.user, held);
    const user = await gateway.restart({ meanwhile: () => held.finish(upstreamId) });
    status = await user.settledStatus(taskId);
    assert.equal(status.status, 'success', JSON.stringify(status));
    assert.equal(submits() - before, 1, 'submitted once');
  });
  return status;
}

/** A task still running upstream when the provider's max_wait_ms (1 s here) is over fails, saying so. */
export async function assertWaitLimited(envWith: (settings: Record<string, unknown>) => Record<string, string>, path: string, body: Json): Promise<void> {
  await withGateway(envWith({ max_wait_ms: 1000 }), 'waiter', async (user) => {
    const status = await user.settledStatus((await user.postOk(path, body)).task_id);
    assert.equal(status.status, 'failed');
    assert.equal(status.message, 'the upstream task did not finish within 1 s');
  });
}
