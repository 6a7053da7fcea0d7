/**
 * Teams and roles: team and member routes, tokens working for a team (and stopping when their
 * user leaves it or it is deleted), team limits in the same admission as token and user limits
 * (exact across two instances on PostgreSQL + Redis), team usage, and the role table: every
 * /admin and console route, for each console role, allowed or 403 / 404.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dropSchema, postgresEnv, redisEnv, startTestServer, type TestServer } from './support/server.ts';
import { accessOf, ROUTE_ACCESS, routesOf } from '../src/http/route-access.ts';
import { eventually } from './support/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const CHAT = 'gpt-4.1-mini';
const PRICED = JSON.stringify({ models: { [CHAT]: { pricing: { per_request: 1 } } } });

async function call(srv: TestServer, method: string, path: string, json?: unknown, token = srv.adminToken): Promise<Response> {
  return srv.fetch(path, { method, token, ...(json !== undefined ? { json } : {}) });
}

async function ok(res: Response, status = 200): Promise<Json> {
  const text = await res.text();
  assert.equal(res.status, status, text);
  return text ? JSON.parse(text) : undefined;
}

function chat(srv: TestServer, token: string): Promise<Response> {
  return srv.fetch('/v1/chat/completions', { method: 'POST', token, json: { model: CHAT, stream: false, messages: [{ role: 'user', content: 'hello' }] } });
}

describe('teams (embedded store)', () => {
  let srv: TestServer;
  before(async () => {
    srv = await startTestServer({ GENGATE_CONFIG: PRICED });
  });
  after(() => srv.close());

  it('creates, lists, shows with members, renames, limits and deletes a team', async () => {
    const team = await ok(await call(srv, 'POST', '/admin/teams', { id: 'alpha', name: 'Alpha', limits: { requests_per_minute: 100 } }), 201);
    assert.deepEqual({ id: team.id, name: team.name, limits: team.limits }, { id: 'alpha', name: 'Alpha', limits: { requests_per_minute: 100 } });
    assert.equal((await call(srv, 'POST', '/admin/teams', { id: 'alpha', name: 'again' })).status, 409);
    assert.equal(((await ok(await call(srv, 'POST', '/admin/teams', { id: 'bad id', name: 'x' }), 400)).error.param), 'id');
    await ok(await call(srv, 'PUT', '/admin/teams/alpha/members/ann', { role: 'admin' }));
    await ok(await call(srv, 'PUT', '/admin/teams/alpha/members/bob', { role: 'member' }));
    assert.equal((await call(srv, 'PUT', '/admin/teams/alpha/members/cy', { role: 'owner' })).status, 400);
    const shown = await ok(await call(srv, 'GET', '/admin/teams/alpha'));
    assert.deepEqual(shown.members.map((m: Json) => [m.user_id, m.role]), [['ann', 'admin'], ['bob', 'member']]);
    const patched = await ok(await call(srv, 'PATCH', '/admin/teams/alpha', { name: 'Alpha team', limits: { requests_per_minute: null, credits: 5 } }));
    assert.deepEqual([patched.name, patched.limits], ['Alpha team', { credits: 5, credits_period: 'day' }]);
    assert.ok((await ok(await call(srv, 'GET', '/admin/teams'))).data.some((t: Json) => t.id === 'alpha'));
    assert.equal((await call(srv, 'DELETE', '/admin/teams/alpha/members/bob')).status, 204);
    assert.equal((await call(srv, 'DELETE', '/admin/teams/alpha/members/bob')).status, 404);
    assert.equal((await call(srv, 'DELETE', '/admin/teams/alpha')).status, 204);
    assert.equal((await call(srv, 'GET', '/admin/teams/alpha')).status, 404);
  });

  it('a token may work for a team of its user only; it stops (401) when the user leaves or the team is deleted', async () => {
    await ok(await call(srv, 'POST', '/admin/teams', { id: 'beta', name: 'Beta' }), 201);
    await ok(await call(srv, 'PUT', '/admin/teams/beta/members/dana', { role: 'member' }));
    const refused = await ok(await call(srv, 'POST', '/admin/tokens', { user_id: 'ed', team_id: 'beta' }), 400);
    assert.equal(refused.error.param, 'team_id');
    const created = await ok(await call(srv, 'POST', '/admin/tokens', { user_id: 'dana', team_id: 'beta' }), 201);
    assert.equal(created.team_id, 'beta');
    const plain = await ok(await call(srv, 'POST', '/admin/tokens', { user_id: 'ed' }), 201);
    assert.equal(((await ok(await call(srv, 'PATCH', `/admin/tokens/${plain.id}`, { team_id: 'beta' }), 400)).error.param), 'team_id');
    assert.equal((await chat(srv, created.token)).status, 200);
    await ok(await call(srv, 'DELETE', '/admin/teams/beta/members/dana'), 204);
    assert.equal((await chat(srv, created.token)).status, 401, 'left the team');
    await ok(await call(srv, 'PUT', '/admin/teams/beta/members/dana', { role: 'member' }));
    assert.equal((await chat(srv, created.token)).status, 200, 'back in the team');
    await ok(await call(srv, 'DELETE', '/admin/teams/beta'), 204);
    assert.equal((await chat(srv, created.token)).status, 401, 'team deleted');
  });

  it('team limits hold for all its tokens together; ledger rows carry team_id; usage groups by team', async () => {
    await ok(await call(srv, 'POST', '/admin/teams', { id: 'gamma', name: 'Gamma', limits: { credits: 3 } }), 201);
    for (const user of ['fay', 'gus']) await ok(await call(srv, 'PUT', `/admin/teams/gamma/members/${user}`, { role: 'member' }));
    const fay = (await ok(await call(srv, 'POST', '/admin/tokens', { user_id: 'fay', team_id: 'gamma' }), 201)).token;
    const gus = (await ok(await call(srv, 'POST', '/admin/tokens', { user_id: 'gus', team_id: 'gamma' }), 201)).token;
    const answers = await Promise.all([fay, gus, fay, gus, fay, gus].map((token) => chat(srv, token)));
    assert.deepEqual(answers.map((r) => r.status).sort(), [200, 200, 200, 429, 429, 429]);
    const rows = await eventually('the team\'s ledger rows', async () => {
      const body: Json = await ok(await call(srv, 'GET', '/admin/requests?team_id=gamma&status=success'));
      return body.data.length === 3 ? body.data : undefined;
    });
    assert.ok(rows.every((r: Json) => r.team_id === 'gamma'));
    const usage = await ok(await call(srv, 'GET', '/admin/usage?group_by=team'));
    const gamma = usage.rows.find((r: Json) => r.key === 'gamma');
    assert.equal(gamma.cost, 3);
    const daily = await ok(await call(srv, 'GET', '/admin/usage?group_by=day&team_id=gamma'));
    assert.deepEqual(daily.rows.map((r: Json) => [r.key, r.cost]), [[new Date().toISOString().slice(0, 10), 3]]);
    const own = await ok(await call(srv, 'GET', '/v1/usage?group_by=team', undefined, fay));
    assert.deepEqual(own.rows.map((r: Json) => r.key), ['gamma']);
  });
});

describe('a team\'s admin in the console (embedded store)', () => {
  let srv: TestServer;
  before(async () => {
    srv = await startTestServer();
  });
  after(() => srv.close());

  /** A request through a console session of `user`. */
  async function asUser(user: string, method: string, path: string, json?: unknown): Promise<Response> {
    const session = await srv.server.services.sessions.start(user, false);
    const headers: Record<string, string> = { cookie: `gengate_session=${session.cookie}`, 'x-csrf-token': session.csrf };
    if (json !== undefined) headers['content-type'] = 'application/json';
    return fetch(srv.url + path, { method, headers, ...(json !== undefined ? { body: JSON.stringify(json) } : {}) });
  }

  it('sets its tokens\' limits within the team\'s own, and lists only what its roles see', async () => {
    await ok(await call(srv, 'POST', '/admin/teams', { id: 'eps', name: 'Eps', limits: { requests_per_minute: 10, credits: 5 } }), 201);
    await ok(await call(srv, 'POST', '/admin/teams', { id: 'zeta', name: 'Zeta' }), 201);
    await ok(await call(srv, 'PUT', '/admin/teams/eps/members/lead', { role: 'admin' }));
    await ok(await call(srv, 'PUT', '/admin/teams/eps/members/joe', { role: 'member' }));
    await ok(await call(srv, 'PUT', '/admin/teams/zeta/members/zed', { role: 'member' }));
    const above = await ok(await asUser('lead', 'POST', '/admin/tokens', { user_id: 'joe', team_id: 'eps', limits: { requests_per_minute: 11 } }), 400);
    assert.equal(above.error.param, 'limits.requests_per_minute');
    const token = await ok(await asUser('lead', 'POST', '/admin/tokens', { user_id: 'joe', team_id: 'eps', limits: { requests_per_minute: 10 } }), 201);
    assert.equal((await ok(await asUser('lead', 'PATCH', `/admin/tokens/${token.id}`, { limits: { credits: 6 } }), 400)).error.param, 'limits.credits');
    assert.deepEqual((await ok(await asUser('lead', 'PATCH', `/admin/tokens/${token.id}`, { limits: { credits: 5 } }))).limits, { requests_per_minute: 10, credits: 5, credits_period: 'day' });
    // Administrators are not held to the team's limits.
    await ok(await call(srv, 'PATCH', `/admin/tokens/${token.id}`, { limits: { credits: 50 } }));
    await ok(await call(srv, 'POST', '/admin/tokens', { user_id: 'zed', team_id: 'zeta' }), 201);
    const listed = await ok(await asUser('lead', 'GET', '/admin/tokens'));
    assert.deepEqual(listed.data.map((t: Json) => t.team_id), ['eps']);
    assert.deepEqual((await ok(await asUser('joe', 'GET', '/admin/teams'))).data.map((t: Json) => t.id), ['eps']);
    assert.equal((await asUser('joe', 'GET', '/admin/teams/eps')).status, 403);
    assert.equal((await asUser('joe', 'GET', '/admin/teams/zeta')).status, 404);
  });

  it('a member reads its own usage; narrowed to a team, only its rows of that team', async () => {
    const inTeam = (await ok(await call(srv, 'POST', '/admin/tokens', { user_id: 'joe', team_id: 'eps' }), 201)).token;
    const alone = (await ok(await call(srv, 'POST', '/admin/tokens', { user_id: 'joe' }), 201)).token;
    const zed = (await ok(await call(srv, 'POST', '/admin/tokens', { user_id: 'zed', team_id: 'zeta' }), 201)).token;
    for (const token of [inTeam, alone, alone, zed]) assert.equal((await chat(srv, token)).status, 200);
    const requests = async (path: string) => (await ok(await asUser('joe', 'GET', path))).rows.reduce((n: number, r: Json) => n + r.requests, 0);
    assert.equal(await requests('/admin/usage'), 3);
    assert.equal(await requests('/admin/usage?team_id=eps'), 1);
    assert.equal((await asUser('joe', 'GET', '/admin/usage?team_id=zeta')).status, 404);
    const lead = await ok(await asUser('lead', 'GET', '/admin/requests?team_id=eps'));
    assert.deepEqual(lead.data.map((r: Json) => [r.user_id, r.team_id]), [['joe', 'eps']]);
  });
});

describe('team limits shared by two instances (PostgreSQL + Redis)', () => {
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
    const env = { ...pg.env, ...redis.env, ADMIN_TOKEN: 'teams-shared-admin', GENGATE_CONFIG: PRICED };
    a = await startTestServer(env);
    b = await startTestServer(env);
  });
  after(async () => {
    await b?.close();
    await a?.close();
    for (const cleanup of cleanups) await cleanup();
  });

  it('200 concurrent calls by two members\' tokens over both instances against a team\'s 10 credits: exactly 10 served', async (t) => {
    if (skip) return t.skip(skip);
    await ok(await call(a!, 'POST', '/admin/teams', { id: 'delta', name: 'Delta', limits: { credits: 10 } }), 201);
    for (const user of ['hal', 'ivy']) await ok(await call(b!, 'PUT', `/admin/teams/delta/members/${user}`, { role: 'member' }));
    // Token and user limits above the team's: the team's is the one that binds.
    const hal = (await ok(await call(a!, 'POST', '/admin/tokens', { user_id: 'hal', team_id: 'delta', limits: { credits: 100 } }), 201)).token;
    const ivy = (await ok(await call(b!, 'POST', '/admin/tokens', { user_id: 'ivy', team_id: 'delta' }), 201)).token;
    await ok(await call(a!, 'PUT', '/admin/users/ivy/limits', { credits: 100 }));
    const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => chat(i % 2 ? a! : b!, i % 3 ? hal : ivy)));
    assert.equal(answers.filter((r) => r.status === 200).length, 10);
    assert.equal(answers.filter((r) => r.status === 429).length, 190);
    const usage = await eventually('the team\'s usage', async () => {
      const body: Json = await ok(await call(b!, 'GET', '/admin/usage?group_by=team&team_id=delta'));
      return body.rows[0]?.requests === 10 ? body : undefined;
    });
    assert.equal(usage.rows[0].cost, 10);
    // A team's usage by day reads the rows over the whole range, each under its UTC day.
    const daily: Json = await ok(await call(a!, 'GET', '/admin/usage?group_by=day&team_id=delta'));
    assert.deepEqual(daily.rows.map((r: Json) => [r.key, r.requests]), [[new Date().toISOString().slice(0, 10), 10]]);
  });
});

type Role = 'admin_token' | 'admin_user' | 'team_admin' | 'member' | 'viewer' | 'api_token';
type Expect = 'allowed' | 403 | 404;
const ROLES: Role[] = ['admin_token', 'admin_user', 'team_admin', 'member', 'viewer', 'api_token'];
const USERS: Partial<Record<Role, string>> = { admin_user: 'root@x', team_admin: 'ta@x', member: 'mem@x', viewer: 'view@x' };

/** Objects of one case: the team of the roles, another team none of them is in, and a token in each. */
interface Fixture {
  team: string;
  other: string;
  token: string;
  otherToken: string;
}

/** A request of the table: its path and body over a fixture, and what each role gets. */
interface Case {
  path: (f: Fixture) => string;
  body?: (f: Fixture) => unknown;
  expect: Partial<Record<Role, Expect>>;
}

const everyone = (e: Expect): Partial<Record<Role, Expect>> => Object.fromEntries(ROLES.map((r) => [r, e]));
/** Administrators may; the console roles given may; the others get `denied`; API tokens 403 (section 2). */
function roles(allowed: Role[], denied: Expect = 403): Partial<Record<Role, Expect>> {
  return Object.fromEntries(ROLES.map((r) => [r, r === 'admin_token' || r === 'admin_user' || allowed.includes(r) ? 'allowed' : r === 'api_token' ? 403 : denied]));
}
/** A route naming another team's object: administrators may, the console roles get 404. */
const otherTeams = (viewer: Expect = 404) => ({ ...roles([], 404), viewer });

/** The routes whose answer depends on the role beyond administrators-only, each with its cases. */
const TABLE: Record<string, Case[]> = {
  'GET /console/auth/options': [{ path: () => '/console/auth/options', expect: everyone('allowed') }],
  'GET /console/auth/login': [{ path: () => '/console/auth/login', expect: everyone('allowed') }],
  'GET /console/auth/callback': [{ path: () => '/console/auth/callback', expect: everyone('allowed') }],
  'GET /console/auth/me': [{ path: () => '/console/auth/me', expect: everyone('allowed') }],
  'POST /console/auth/logout': [{ path: () => '/console/auth/logout', expect: everyone('allowed') }],
  'POST /admin/teams': [{ path: () => '/admin/teams', body: (f) => ({ id: `${f.team}-new`, name: 'n' }), expect: roles([]) }],
  'GET /admin/teams': [{ path: () => '/admin/teams', expect: roles(['team_admin', 'member']) }],
  'GET /admin/teams/:id': [
    { path: (f) => `/admin/teams/${f.team}`, expect: roles(['team_admin']) },
    { path: (f) => `/admin/teams/${f.other}`, expect: otherTeams() },
  ],
  'PATCH /admin/teams/:id': [
    { path: (f) => `/admin/teams/${f.team}`, body: () => ({ name: 'renamed' }), expect: roles([]) },
    { path: (f) => `/admin/teams/${f.other}`, body: () => ({ name: 'renamed' }), expect: otherTeams() },
  ],
  'DELETE /admin/teams/:id': [
    { path: (f) => `/admin/teams/${f.team}`, expect: roles([]) },
    { path: (f) => `/admin/teams/${f.other}`, expect: otherTeams() },
  ],
  'PUT /admin/teams/:id/members/:user_id': [
    { path: (f) => `/admin/teams/${f.team}/members/new@x`, body: () => ({ role: 'member' }), expect: roles(['team_admin']) },
    { path: (f) => `/admin/teams/${f.other}/members/new@x`, body: () => ({ role: 'member' }), expect: otherTeams() },
  ],
  'DELETE /admin/teams/:id/members/:user_id': [
    { path: (f) => `/admin/teams/${f.team}/members/mem@x`, expect: roles(['team_admin']) },
    { path: (f) => `/admin/teams/${f.other}/members/x@o`, expect: otherTeams() },
  ],
  'POST /admin/tokens': [
    { path: () => '/admin/tokens', body: (f) => ({ user_id: 'mem@x', team_id: f.team }), expect: roles(['team_admin', 'member']) },
    { path: () => '/admin/tokens', body: (f) => ({ user_id: 'x@o', team_id: f.other }), expect: otherTeams(403) },
  ],
  'GET /admin/tokens': [{ path: () => '/admin/tokens', expect: roles(['team_admin', 'member']) }],
  'PATCH /admin/tokens/:id': [
    { path: (f) => `/admin/tokens/${f.token}`, body: () => ({ name: 'renamed' }), expect: roles(['team_admin', 'member']) },
    { path: (f) => `/admin/tokens/${f.otherToken}`, body: () => ({ name: 'renamed' }), expect: otherTeams() },
  ],
  'DELETE /admin/tokens/:id': [
    { path: (f) => `/admin/tokens/${f.token}`, expect: roles(['team_admin', 'member']) },
    { path: (f) => `/admin/tokens/${f.otherToken}`, expect: otherTeams() },
  ],
  'GET /admin/usage': [
    { path: () => '/admin/usage', expect: roles(['team_admin', 'member', 'viewer']) },
    { path: (f) => `/admin/usage?team_id=${f.other}`, expect: otherTeams() },
  ],
  'GET /admin/requests': [
    { path: () => '/admin/requests', expect: roles(['team_admin', 'member']) },
    { path: (f) => `/admin/requests?team_id=${f.other}`, expect: otherTeams(403) },
  ],
  'GET /admin/tasks': [{ path: () => '/admin/tasks', expect: roles(['team_admin', 'member']) }],
  'GET /admin/tasks/:taskId': [{ path: () => '/admin/tasks/task_unknown', expect: roles(['team_admin', 'member']) }],
  'GET /admin/overview': [{ path: () => '/admin/overview', expect: roles(['team_admin', 'member']) }],
};

/** Any other route: administrators only, its path parameters filled with a placeholder. */
function administratorsOnly(url: string): Case[] {
  return [{ path: () => url.replace(/:\w+/g, 'placeholder'), body: () => ({}), expect: roles([]) }];
}

describe('the role table: every /admin and console route, for each role', () => {
  let srv: TestServer;
  let apiToken: string;
  let fixtures = 0;
  before(async () => {
    srv = await startTestServer({ ADMIN_USERS: 'root@x' });
    apiToken = await srv.tokenFor('someone');
  });
  after(() => srv.close());

  async function fixture(): Promise<Fixture> {
    const n = ++fixtures;
    const f = { team: `t${n}`, other: `o${n}` } as Fixture;
    await ok(await call(srv, 'POST', '/admin/teams', { id: f.team, name: 'team' }), 201);
    await ok(await call(srv, 'POST', '/admin/teams', { id: f.other, name: 'other' }), 201);
    for (const [user, role] of [['ta@x', 'admin'], ['mem@x', 'member'], ['view@x', 'viewer']]) await ok(await call(srv, 'PUT', `/admin/teams/${f.team}/members/${user}`, { role }));
    await ok(await call(srv, 'PUT', `/admin/teams/${f.other}/members/x@o`, { role: 'member' }));
    f.token = (await ok(await call(srv, 'POST', '/admin/tokens', { user_id: 'mem@x', team_id: f.team }), 201)).id;
    f.otherToken = (await ok(await call(srv, 'POST', '/admin/tokens', { user_id: 'x@o', team_id: f.other }), 201)).id;
    return f;
  }

  async function as(role: Role, method: string, path: string, body: unknown): Promise<Response> {
    const headers: Record<string, string> = {};
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (role === 'admin_token') headers.authorization = `Bearer ${srv.adminToken}`;
    else if (role === 'api_token') headers.authorization = `Bearer ${apiToken}`;
    else {
      const session = await srv.server.services.sessions.start(USERS[role]!, false);
      headers.cookie = `gengate_session=${session.cookie}`;
      headers['x-csrf-token'] = session.csrf;
    }
    return fetch(srv.url + path, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  }

  it('every route of the app under /admin and /console/auth is declared in route-access.ts', () => {
    const routes = routesOf(srv.server.app).filter((r) => r.url.startsWith('/admin') || r.url.startsWith('/console/auth'));
    const undeclared = routes.filter((r) => !ROUTE_ACCESS[`${r.method} ${r.url}`]).map((r) => `${r.method} ${r.url}`);
    assert.deepEqual(undeclared, [], 'routes without a declaration in src/http/route-access.ts ROUTE_ACCESS');
    const present = new Set(routes.map((r) => `${r.method} ${r.url}`));
    assert.deepEqual(Object.keys(ROUTE_ACCESS).filter((k) => !present.has(k)), [], 'declarations of routes the app lacks');
  });

  it('each role on each route: allowed, or 403 permission_error for its team\'s objects, 404 for another team\'s', async () => {
    const wrong: string[] = [];
    const checked = new Set<string>();
    const shared = await fixture();
    for (const { method, url } of routesOf(srv.server.app)) {
      if (!url.startsWith('/admin') && !url.startsWith('/console/auth')) continue;
      const key = `${method} ${url}`;
      const cases = TABLE[key] ?? (accessOf(method, url).kind === 'roles' ? administratorsOnly(url) : []);
      assert.ok(cases.length > 0, `no case for ${key}`);
      for (const c of cases) {
        for (const role of ROLES) {
          const f = method === 'GET' ? shared : await fixture();
          const body = method === 'GET' || method === 'DELETE' ? undefined : (c.body?.(f) ?? {});
          const res = await as(role, method, c.path(f), body);
          const answer: Json = await res.json().catch(() => ({}));
          const code = answer?.error?.code;
          const got: Expect | number = res.status === 403 ? 403 : res.status === 404 && ['team_not_found', 'token_not_found', 'member_not_found'].includes(code) ? 404 : res.status === 401 ? 401 : 'allowed';
          checked.add(key);
          if (got !== c.expect[role]) wrong.push(`${key} ${c.path(f)} as ${role}: expected ${c.expect[role]}, got ${res.status} ${code ?? ''}`);
          if (res.status === 403) assert.equal(answer.error.type, 'permission_error', `${key} as ${role}`);
        }
      }
    }
    assert.deepEqual(wrong, []);
    // Every declared route was tried, by every role.
    assert.deepEqual([...checked].sort(), Object.keys(ROUTE_ACCESS).sort());
  });
});
