/**
 * Limits of tokens and users: request rates, task slots and credits enforced at admission, the
 * reservation settled once at the end (a call's answer, or the transaction that ends a task),
 * and the ledger that records what each call cost.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { dropSchema, postgresEnv, redisEnv, startTestServer, tempDataDir, type TestServer } from './support/server.ts';
import { spawnServer, type ServerProcess } from './support/process.ts';
import { eventually } from './support/wait.ts';
import { runCli } from './support/cli.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const CHAT = 'gpt-4.1-mini';
const IMAGE = 'seedream-4.0';
/** One credit a chat call, two an image. */
const PRICED = JSON.stringify({ models: { [CHAT]: { pricing: { per_request: 1 } }, [IMAGE]: { pricing: { per_image: 2 } } } });

async function tokenWith(srv: { fetch: TestServer['fetch']; adminToken: string }, userId: string, limits: Json): Promise<string> {
  const res = await srv.fetch('/admin/tokens', { method: 'POST', token: srv.adminToken, json: { user_id: userId, limits } });
  assert.equal(res.status, 201, await res.clone().text());
  const body: Json = await res.json();
  return body.token;
}

function chat(srv: { fetch: TestServer['fetch'] }, token: string): Promise<Response> {
  return srv.fetch('/v1/chat/completions', { method: 'POST', token, json: { model: CHAT, stream: false, messages: [{ role: 'user', content: 'hello' }] } });
}

function image(srv: { fetch: TestServer['fetch'] }, token: string, async = true): Promise<Response> {
  return srv.fetch('/v1/images/generations', { method: 'POST', token, json: { model: IMAGE, prompt: 'a lighthouse', size: '32x32' }, headers: async ? { 'x-async': '1' } : {} });
}

async function errorCode(res: Response): Promise<string> {
  return ((await res.json()) as Json).error.code;
}

async function ledger(srv: { fetch: TestServer['fetch']; adminToken: string }, query = ''): Promise<Json[]> {
  const res = await srv.fetch(`/admin/requests?limit=200${query}`, { token: srv.adminToken });
  assert.equal(res.status, 200);
  return ((await res.json()) as Json).data;
}

describe('limits (embedded)', () => {
  let srv: TestServer;
  before(async () => {
    srv = await startTestServer({ GENGATE_CONFIG: PRICED, LOCAL_ENGINE_MIN_DURATION_MS: '1500' });
  });
  after(() => srv.close());

  it('a limit of 5 requests a minute answers the 6th call 429 rate_limited with Retry-After', async () => {
    const token = await tokenWith(srv, 'rita', { requests_per_minute: 5 });
    for (let i = 0; i < 5; i++) {
      const res = await srv.fetch('/v1/models', { token });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-ratelimit-limit-requests'), '5');
      assert.equal(res.headers.get('x-ratelimit-remaining-requests'), String(4 - i));
    }
    const res = await srv.fetch('/v1/models', { token });
    assert.equal(res.status, 429);
    assert.equal(await errorCode(res), 'rate_limited');
    const retryAfter = Number(res.headers.get('retry-after'));
    assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `Retry-After ${res.headers.get('retry-after')}`);
    // Another token of the same user has its own (no) limit.
    assert.equal((await srv.fetch('/v1/models', { token: await srv.tokenFor('rita') })).status, 200);
  });

  it('a raised request limit lets a refused caller through at once; a lowered one refuses the next call over it', async () => {
    const created: Json = await (await srv.fetch('/admin/tokens', { method: 'POST', token: srv.adminToken, json: { user_id: 'raya', limits: { requests_per_minute: 2 } } })).json();
    const models = () => srv.fetch('/v1/models', { token: created.token });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await models()).status);
    assert.deepEqual(statuses, [200, 200, 429]);
    const limit = (requestsPerMinute: number) => srv.fetch(`/admin/tokens/${created.id}`, { method: 'PATCH', token: srv.adminToken, json: { limits: { requests_per_minute: requestsPerMinute } } });
    assert.equal((await limit(10)).status, 200);
    const raised = await models();
    assert.equal(raised.status, 200, await raised.clone().text());
    assert.equal(raised.headers.get('x-ratelimit-limit-requests'), '10');
    assert.equal(raised.headers.get('x-ratelimit-remaining-requests'), '7', 'the calls of the last minute still count');
    // Three calls in the last minute: a limit of three leaves no room.
    assert.equal((await limit(3)).status, 200);
    assert.equal(await errorCode(await models()), 'rate_limited');

    assert.equal((await srv.fetch('/admin/users/ugo/limits', { method: 'PUT', token: srv.adminToken, json: { requests_per_minute: 1 } })).status, 200);
    const token = await srv.tokenFor('ugo');
    assert.deepEqual([(await srv.fetch('/v1/models', { token })).status, (await srv.fetch('/v1/models', { token })).status], [200, 429]);
    assert.equal((await srv.fetch('/admin/users/ugo/limits', { method: 'PUT', token: srv.adminToken, json: { requests_per_minute: 5 } })).status, 200);
    assert.equal((await srv.fetch('/v1/models', { token })).status, 200);
    assert.equal((await srv.fetch('/admin/users/ugo/limits', { method: 'PUT', token: srv.adminToken, json: { requests_per_minute: 2 } })).status, 200);
    assert.equal((await srv.fetch('/v1/models', { token })).status, 429);
  });

  it('a raised token rate lets a refused chat caller through at once', async () => {
    const created: Json = await (await srv.fetch('/admin/tokens', { method: 'POST', token: srv.adminToken, json: { user_id: 'tia', limits: { tokens_per_minute: 10 } } })).json();
    // The first call passes however large (nothing else is counted); its tokens fill the minute.
    assert.equal((await chat(srv, created.token)).status, 200);
    const refused = await chat(srv, created.token);
    assert.equal(await errorCode(refused), 'rate_limited');
    assert.equal((await srv.fetch(`/admin/tokens/${created.id}`, { method: 'PATCH', token: srv.adminToken, json: { limits: { tokens_per_minute: 100_000 } } })).status, 200);
    assert.equal((await chat(srv, created.token)).status, 200);
  });

  it('a user limit holds for all the user\'s tokens together', async () => {
    const res = await srv.fetch('/admin/users/ursula/limits', { method: 'PUT', token: srv.adminToken, json: { requests_per_minute: 3 } });
    assert.equal(res.status, 200);
    assert.deepEqual(((await res.json()) as Json).limits, { requests_per_minute: 3 });
    const [one, two] = [await srv.tokenFor('ursula'), await srv.tokenFor('ursula')];
    const statuses = [];
    for (const token of [one, two, one, two]) statuses.push((await srv.fetch('/v1/models', { token })).status);
    assert.deepEqual(statuses, [200, 200, 200, 429]);
    assert.deepEqual(((await (await srv.fetch('/admin/users/ursula/limits', { token: srv.adminToken })).json()) as Json).limits, { requests_per_minute: 3 });
  });

  it('200 concurrent calls against 10 credits: exactly 10 are served and 10 credits spent', async () => {
    const token = await tokenWith(srv, 'cora', { credits: 10 });
    const answers = await Promise.all(Array.from({ length: 200 }, () => chat(srv, token)));
    const statuses = answers.map((r) => r.status);
    assert.equal(statuses.filter((s) => s === 200).length, 10);
    assert.equal(statuses.filter((s) => s === 429).length, 190);
    for (const r of answers.filter((a) => a.status === 429)) assert.equal(await errorCode(r), 'quota_exceeded');
    const usage: Json = await eventually('the ledger rows', async () => {
      const body: Json = await (await srv.fetch('/v1/usage?group_by=model', { token })).json();
      return body.rows[0]?.requests === 10 ? body : undefined;
    });
    assert.deepEqual(usage.rows, [{ key: CHAT, requests: 10, tasks: 0, input_tokens: usage.rows[0].input_tokens, cached_input_tokens: 0, cache_write_tokens: 0, output_tokens: usage.rows[0].output_tokens, cost: 10, errors: 0 }]);
    assert.equal((await chat(srv, token)).status, 429, 'the period\'s credits are spent');
  });

  it('concurrent_tasks: a second task while one runs is 429 too_many_tasks, and the slot is free again once it ends', async () => {
    const token = await tokenWith(srv, 'tess', { concurrent_tasks: 1 });
    const first = await image(srv, token);
    assert.equal(first.status, 200);
    const second = await image(srv, token);
    assert.equal(second.status, 429);
    assert.equal(await errorCode(second), 'too_many_tasks');
    const taskId = ((await first.json()) as Json).task_id;
    assert.ok(await srv.server.services.tasks.waitForEnd(taskId, 20_000));
    assert.equal((await image(srv, token)).status, 200);
  });

  it('a cancelled task costs nothing and gives its reserved credits back', async () => {
    const token = await tokenWith(srv, 'cass', { credits: 2 });
    const submitted = await image(srv, token);
    assert.equal(submitted.status, 200);
    const taskId = ((await submitted.json()) as Json).task_id;
    assert.equal(await errorCode(await image(srv, token)), 'quota_exceeded', 'the running task holds the credits');
    assert.equal((await srv.fetch(`/v1/ai/cancel/${taskId}`, { token })).status, 200);
    const [row] = await eventually('the cancelled task\'s ledger row', async () => {
      const rows = await ledger(srv, '&user_id=cass');
      return rows.length === 1 ? rows : undefined;
    });
    assert.equal(row.task_id, taskId);
    assert.equal(row.status, 'cancelled');
    assert.equal(row.cost, 0);
    const again = await eventually('the credits back', async () => {
      const res = await image(srv, token, false);
      return res.status === 429 ? undefined : res;
    });
    assert.equal(again.status, 200);
  });

  it('the ledger\'s sums equal the billing entries of the tasks', async () => {
    const token = await srv.tokenFor('lena');
    const costs: number[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await srv.fetch('/v1/images/generations', { method: 'POST', token, json: { model: IMAGE, prompt: `boat ${i}`, size: '32x32', n: i + 1 } });
      assert.equal(res.status, 200, await res.clone().text());
      const body: Json = await res.json();
      costs.push(body.billings.reduce((sum: number, b: Json) => sum + b.billing_params.cost, 0));
    }
    assert.deepEqual(costs, [2, 4, 6]);
    const usage: Json = await (await srv.fetch('/v1/usage?group_by=model', { token })).json();
    assert.equal(usage.rows[0].cost, 12);
    assert.equal(usage.rows[0].tasks, 3);
    const rows = await ledger(srv, '&user_id=lena');
    assert.equal(rows.reduce((sum: number, r: Json) => sum + r.cost, 0), 12);
    const admin: Json = await (await srv.fetch('/admin/usage?group_by=user', { token: srv.adminToken })).json();
    assert.equal(admin.rows.find((r: Json) => r.key === 'lena').cost, 12);
  });

  it('tokens show their limits; PATCH changes and removes them', async () => {
    const created: Json = await (await srv.fetch('/admin/tokens', { method: 'POST', token: srv.adminToken, json: { user_id: 'pat', limits: { credits: 5 } } })).json();
    assert.deepEqual(created.limits, { credits: 5, credits_period: 'day' });
    const patched = await srv.fetch(`/admin/tokens/${created.id}`, { method: 'PATCH', token: srv.adminToken, json: { name: 'app', limits: { requests_per_minute: 60, credits: null } } });
    assert.equal(patched.status, 200);
    assert.deepEqual(((await patched.json()) as Json).limits, { requests_per_minute: 60 });
    const listed: Json = await (await srv.fetch('/admin/tokens', { token: srv.adminToken })).json();
    const mine = listed.data.find((t: Json) => t.id === created.id);
    assert.equal(mine.name, 'app');
    assert.deepEqual(mine.limits, { requests_per_minute: 60 });
    assert.equal((await srv.fetch('/admin/tokens/tok_nobody', { method: 'PATCH', token: srv.adminToken, json: { name: 'x' } })).status, 404);
    assert.equal((await srv.fetch(`/admin/tokens/${created.id}`, { method: 'PATCH', token: srv.adminToken, json: { limits: { credits_period: 'week' } } })).status, 400);
  });

  it('token create on the command line takes --rpm --tpm --concurrent --credits, and the server enforces them', async () => {
    const out = await runCli(['token', 'create', '--user', 'cli-user', '--rpm', '2', '--tpm', '5000', '--concurrent', '3', '--credits', '7.5', '--credits-period', 'month'], { DATA_DIR: srv.dataDir });
    assert.equal(out.code, 0, out.stderr);
    const created: Json = JSON.parse(out.stdout);
    const limits = { requests_per_minute: 2, tokens_per_minute: 5000, concurrent_tasks: 3, credits: 7.5, credits_period: 'month' };
    assert.deepEqual(created.limits, limits);
    const listed: Json = await (await srv.fetch('/admin/tokens', { token: srv.adminToken })).json();
    assert.deepEqual(listed.data.find((t: Json) => t.id === created.id).limits, limits);
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await srv.fetch('/v1/models', { token: created.token })).status);
    assert.deepEqual(statuses, [200, 200, 429]);
    const bad = await runCli(['token', 'create', '--user', 'cli-user', '--rpm', 'many'], { DATA_DIR: srv.dataDir });
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--rpm/);
  });

  it('prices are listed as billing_mode', async () => {
    const token = await srv.tokenFor('mo');
    const body: Json = await (await srv.fetch('/v1/models/list', { token })).json();
    assert.deepEqual(body.modelList.find((m: Json) => m.alias === IMAGE).billing_mode, { currency: 'credits', per_image: 2 });
    assert.equal(body.modelList.find((m: Json) => m.alias === 'gpt-4.1').billing_mode, undefined);
  });
});

describe('a failed task refunds its credits once across kill -9 (SQLite)', () => {
  const dataDir = tempDataDir();
  const ADMIN = 'limits-kill-admin';
  let server: ServerProcess | undefined;
  after(async () => {
    await server?.stop('SIGKILL');
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('kill -9 right after the failure is stored: after the restart the credits are back exactly once', async () => {
    const env = { DATA_DIR: dataDir, ADMIN_TOKEN: ADMIN, GENGATE_CONFIG: PRICED };
    const call = (path: string, token: string, init: RequestInit = {}) => fetch(server!.url + path, { ...init, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...init.headers } });
    server = await spawnServer(env);
    const view = { fetch: (p: string, i: Json = {}) => call(p, i.token, { method: i.method, body: i.json === undefined ? undefined : JSON.stringify(i.json), headers: i.headers }), adminToken: ADMIN };
    const token = await tokenWith(view, 'fay', { credits: 2 });
    const form = new FormData();
    form.append('file', new Blob([new TextEncoder().encode('no image here')]), 'notes.txt');
    const uploaded: Json = await (await fetch(server.url + '/v1/files/upload', { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form })).json();
    const res = await call('/v1/images/edits', token, { method: 'POST', headers: { 'x-async': '1' }, body: JSON.stringify({ model: IMAGE, prompt: 'fix it', image: [uploaded.data.url] }) });
    assert.equal(res.status, 200, await res.clone().text());
    const taskId = ((await res.json()) as Json).task_id;
    await eventually('the task to fail', async () => ((await (await call(`/v1/ai/result/${taskId}`, token)).json()) as Json).queue_status.status === 'failed', 20_000);
    await server.stop('SIGKILL');

    server = await spawnServer(env);
    const rows = (await ledger(view, '&user_id=fay')).filter((r) => r.kind === 'task');
    assert.equal(rows.length, 1);
    assert.deepEqual([rows[0].task_id, rows[0].status, rows[0].cost], [taskId, 'failed', 0]);
    // Two credits: one image of two credits passes, and nothing more (a second refund would let another through).
    assert.equal((await image(view, token, false)).status, 200);
    const last = await image(view, token, false);
    assert.equal(last.status, 429);
    assert.equal(await errorCode(last), 'quota_exceeded');
  });
});

describe('limits shared by two instances (PostgreSQL + Redis)', () => {
  let a: TestServer | undefined;
  let b: TestServer | undefined;
  let skip: string | undefined;
  const cleanups: (() => Promise<void>)[] = [];
  before(async () => {
    const pg = await postgresEnv();
    if ('skip' in pg) return void (skip = pg.skip);
    const redis = await redisEnv();
    if ('skip' in redis) return void (skip = redis.skip);
    cleanups.push(() => dropSchema(pg.env.DATABASE_SCHEMA!), redis.cleanup);
    const env = { ...pg.env, ...redis.env, ADMIN_TOKEN: 'limits-shared-admin', GENGATE_CONFIG: PRICED };
    a = await startTestServer(env);
    b = await startTestServer(env);
  });
  after(async () => {
    await b?.close();
    await a?.close();
    for (const cleanup of cleanups) await cleanup();
  });

  it('one request limit for the cluster: 5 a minute over both instances', async (t) => {
    if (skip) return t.skip(skip);
    const token = await tokenWith(a!, 'nina', { requests_per_minute: 5 });
    const statuses = [];
    for (const srv of [a!, b!, a!, b!, a!, b!, a!]) statuses.push((await srv.fetch('/v1/models', { token })).status);
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429, 429]);
  });

  it('a limit changed on one instance applies on the other at its next call', async (t) => {
    if (skip) return t.skip(skip);
    const created: Json = await (await a!.fetch('/admin/tokens', { method: 'POST', token: a!.adminToken, json: { user_id: 'rhea', limits: { requests_per_minute: 2 } } })).json();
    const models = () => b!.fetch('/v1/models', { token: created.token });
    const patch = (limits: Json) => a!.fetch(`/admin/tokens/${created.id}`, { method: 'PATCH', token: a!.adminToken, json: { limits } });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await models()).status);
    assert.deepEqual(statuses, [200, 200, 429]);
    assert.equal((await patch({ requests_per_minute: 10 })).status, 200);
    assert.equal((await models()).status, 200, 'raised on a, b lets the call through');
    assert.equal((await patch({ requests_per_minute: 3 })).status, 200);
    assert.equal(await errorCode(await models()), 'rate_limited', 'lowered on a under the calls made, b refuses');

    assert.equal((await patch({ requests_per_minute: null, credits: 1 })).status, 200);
    assert.equal((await chat(b!, created.token)).status, 200);
    assert.equal(await errorCode(await chat(b!, created.token)), 'quota_exceeded');
    assert.equal((await patch({ credits: 2 })).status, 200);
    assert.equal((await chat(b!, created.token)).status, 200, 'more credits on a, b serves');

    const user = await a!.tokenFor('ulla');
    const limitUser = (requestsPerMinute: number) => a!.fetch('/admin/users/ulla/limits', { method: 'PUT', token: a!.adminToken, json: { requests_per_minute: requestsPerMinute } });
    assert.equal((await limitUser(1)).status, 200);
    assert.deepEqual([(await b!.fetch('/v1/models', { token: user })).status, (await b!.fetch('/v1/models', { token: user })).status], [200, 429]);
    assert.equal((await limitUser(5)).status, 200);
    assert.equal((await b!.fetch('/v1/models', { token: user })).status, 200);
    assert.equal((await limitUser(2)).status, 200);
    assert.equal((await b!.fetch('/v1/models', { token: user })).status, 429);
  });

  it('200 concurrent calls over both instances against 10 credits: exactly 10 served', async (t) => {
    if (skip) return t.skip(skip);
    const token = await tokenWith(a!, 'olga', { credits: 10 });
    const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => chat(i % 2 ? a! : b!, token)));
    assert.equal(answers.filter((r) => r.status === 200).length, 10);
    assert.equal(answers.filter((r) => r.status === 429).length, 190);
    const usage: Json = await eventually('the ledger rows', async () => {
      const body: Json = await (await b!.fetch('/v1/usage', { token })).json();
      return body.rows[0]?.requests === 10 ? body : undefined;
    });
    assert.equal(usage.rows[0].cost, 10);
  });

  it('a task end whose counters were not applied (the instance died in between) is applied once by the reconciler', async (t) => {
    if (skip) return t.skip(skip);
    const token = await tokenWith(a!, 'pia', { credits: 2 });
    const limits = a!.server.services.limits;
    // The end is committed but the process "dies" before the counters hear of it.
    const settle = limits.counters.settle.bind(limits.counters);
    limits.counters.settle = async () => {
      throw new Error('gone');
    };
    try {
      const res = await image(a!, token);
      const taskId = ((await res.json()) as Json).task_id;
      assert.equal((await a!.fetch(`/v1/ai/cancel/${taskId}`, { token })).status, 200);
      await eventually('the ledger row', async () => (await ledger(a!, '&user_id=pia')).length === 1);
      assert.equal(await errorCode(await image(b!, token)), 'quota_exceeded', 'the credits are still held');
    } finally {
      limits.counters.settle = settle;
    }
    // Twice, as two instances would: the settlement is applied once.
    const later = Date.now() + 20_000;
    const reconcileAt = (srv: TestServer) => {
      const service = srv.server.services.limits as unknown as { opts: { now?: () => number } };
      service.opts.now = () => later;
    };
    reconcileAt(a!);
    reconcileAt(b!);
    try {
      await a!.server.services.limits.reconcile();
      await b!.server.services.limits.reconcile();
    } finally {
      for (const srv of [a!, b!]) delete (srv.server.services.limits as unknown as { opts: { now?: () => number } }).opts.now;
    }
    assert.equal((await image(b!, token, false)).status, 200, 'the cancelled task\'s credits are back');
    assert.equal(await errorCode(await image(a!, token)), 'quota_exceeded', 'and only once');
  });
});
