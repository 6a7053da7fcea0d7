/**
 * The console's sign-in with OpenID Connect against a real provider (oidc-provider on
 * 127.0.0.1): the code flow with PKCE, state and nonce, the session and CSRF cookies, the CSRF
 * check, expiry, and a sign-out that ends the session on every instance.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseSetCookie } from 'cookie';
import { dropSchema, postgresEnv, startTestServer, type TestServer } from './support/server.ts';
import { browse, CookieJar, OidcIssuer, signInAtIssuer } from './support/oidc-issuer.ts';
import { eventually } from './support/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** Starts a sign-in at the gateway and goes through the issuer; answers the callback URL (not yet opened). */
async function throughIssuer(jar: CookieJar, gateway: string, login: string): Promise<string> {
  const started = await browse(jar, `${gateway}/console/auth/login`);
  assert.equal(started.status, 302);
  const authorize = new URL(started.headers.get('location')!);
  assert.equal(authorize.searchParams.get('code_challenge_method'), 'S256');
  assert.ok(authorize.searchParams.get('state') && authorize.searchParams.get('nonce') && authorize.searchParams.get('code_challenge'));
  return signInAtIssuer(jar, authorize.href, login, `${gateway}/console/auth/callback`);
}

/** Signs in fully: answers the callback's response. */
async function signIn(jar: CookieJar, gateway: string, login: string): Promise<Response> {
  return browse(jar, await throughIssuer(jar, gateway, login));
}

function me(jar: CookieJar, gateway: string): Promise<Response> {
  return browse(jar, `${gateway}/console/auth/me`);
}

describe('console sign-in with OpenID Connect (embedded store)', () => {
  let issuer: OidcIssuer;
  let srv: TestServer;
  before(async () => {
    issuer = await OidcIssuer.listen();
    srv = await startTestServer(issuer.env({ ADMIN_USERS: 'root@example.com', SESSION_TTL_HOURS: '0.001' }));
    issuer.configure([`${srv.url}/console/auth/callback`], { 'boss@example.com': ['staff', 'gengate-admin'] });
  });
  after(async () => {
    await srv.close();
    await issuer.close();
  });

  it('the code flow signs in: HttpOnly Lax session cookie, a readable CSRF cookie, and /console/auth/me names the user', async () => {
    assert.deepEqual(await (await srv.fetch('/console/auth/options')).json(), { sso: true });
    const jar = new CookieJar();
    const callback = await signIn(jar, srv.url, 'ann@example.com');
    assert.equal(callback.status, 302, await callback.clone().text());
    assert.equal(callback.headers.get('location'), '/console/');
    const cookies = Object.fromEntries(callback.headers.getSetCookie().map((line) => [parseSetCookie(line).name, parseSetCookie(line)]));
    assert.equal(cookies.gengate_session.httpOnly, true);
    assert.equal(cookies.gengate_session.sameSite, 'lax');
    assert.equal(cookies.gengate_session.secure, undefined, 'http PUBLIC_BASE_URL: not Secure');
    assert.equal(cookies.gengate_csrf.httpOnly, undefined);
    assert.equal(cookies.gengate_csrf.sameSite, 'lax');
    const who: Json = await (await me(jar, srv.url)).json();
    assert.deepEqual(who, { user_id: 'ann@example.com', admin: false, via: 'session', teams: [] });
    // No team, no administrator: /admin answers 403.
    assert.equal((await browse(jar, `${srv.url}/admin/config`)).status, 403);
  });

  it('the role claim gengate-admin and ADMIN_USERS make administrators', async () => {
    for (const login of ['boss@example.com', 'root@example.com']) {
      const jar = new CookieJar();
      assert.equal((await signIn(jar, srv.url, login)).status, 302);
      assert.equal(((await (await me(jar, srv.url)).json()) as Json).admin, true, login);
      assert.equal((await browse(jar, `${srv.url}/admin/config`)).status, 200, login);
    }
  });

  it('a changing request through a session needs x-csrf-token; logout too', async () => {
    const jar = new CookieJar();
    await signIn(jar, srv.url, 'root@example.com');
    const csrf = jar.get(srv.url, 'gengate_csrf')!;
    const create = (headers: Record<string, string>) => browse(jar, `${srv.url}/admin/teams`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ id: `t-${csrf.slice(0, 6)}`.replace(/[^\w-]/g, 'x'), name: 'T' }) });
    const refused = await create({});
    assert.equal(refused.status, 403);
    assert.equal(((await refused.json()) as Json).error.type, 'permission_error');
    assert.equal((await create({ 'x-csrf-token': 'wrong' })).status, 403);
    assert.equal((await create({ 'x-csrf-token': csrf })).status, 201);
    assert.equal((await browse(jar, `${srv.url}/console/auth/logout`, { method: 'POST' })).status, 403, 'logout without the header');
    assert.equal((await me(jar, srv.url)).status, 200, 'still signed in');
    assert.equal((await browse(jar, `${srv.url}/console/auth/logout`, { method: 'POST', headers: { 'x-csrf-token': csrf } })).status, 204);
  });

  it('a callback whose state is not the one this browser started is refused, and a state is used once', async () => {
    const jar = new CookieJar();
    const callback = await throughIssuer(jar, srv.url, 'eve@example.com');
    const other = new CookieJar();
    other.set(srv.url, 'gengate_oidc_state', 'forged-state');
    const forged = await browse(other, callback);
    assert.equal(forged.status, 401);
    assert.equal(((await forged.json()) as Json).error.code, 'sign_in_failed');
    assert.equal((await browse(jar, callback)).status, 302, 'the browser that started it signs in');
    jar.set(srv.url, 'gengate_oidc_state', new URL(callback).searchParams.get('state')!);
    assert.equal((await browse(jar, callback)).status, 401, 'the same state again');
  });

  it('a wrong PKCE verifier and a wrong nonce fail at the callback', async () => {
    for (const column of ['code_verifier', 'nonce'] as const) {
      const jar = new CookieJar();
      const callback = await throughIssuer(jar, srv.url, 'mallory@example.com');
      const state = new URL(callback).searchParams.get('state')!;
      // What an attacker holding another sign-in's code would have: not this sign-in's secret.
      await srv.server.services.db.kysely.updateTable('oidc_logins').set({ [column]: 'x'.repeat(43) }).where('state', '=', state).execute();
      const res = await browse(jar, callback);
      assert.equal(res.status, 401, column);
      const body: Json = await res.json();
      assert.equal(body.error.code, 'sign_in_failed');
      assert.equal(jar.get(srv.url, 'gengate_session'), undefined, column);
    }
  });

  it('a session ends after SESSION_TTL_HOURS', async () => {
    const jar = new CookieJar();
    await signIn(jar, srv.url, 'ann@example.com');
    assert.equal((await me(jar, srv.url)).status, 200);
    // 0.001 h = 3.6 s.
    await eventually('the session expires', async () => ((await me(jar, srv.url)).status === 401 ? true : undefined), 10_000);
  });

  it('without OIDC_ISSUER there is no SSO', async () => {
    const plain = await startTestServer();
    try {
      assert.deepEqual(await (await plain.fetch('/console/auth/options')).json(), { sso: false });
      assert.equal((await plain.fetch('/console/auth/login')).status, 404);
      // The admin token and API tokens still say who they are.
      assert.equal(((await (await plain.fetch('/console/auth/me', { token: plain.adminToken })).json()) as Json).via, 'admin_token');
      assert.equal(((await (await plain.fetch('/console/auth/me', { token: await plain.tokenFor('zoe') })).json()) as Json).via, 'api_token');
    } finally {
      await plain.close();
    }
  });
});

describe('console sessions shared by two instances (PostgreSQL)', () => {
  let issuer: OidcIssuer;
  let a: TestServer | undefined;
  let b: TestServer | undefined;
  let skip: string | undefined;
  let schema: string | undefined;
  before(async () => {
    issuer = await OidcIssuer.listen();
    const pg = await postgresEnv();
    if ('skip' in pg) return void (skip = pg.skip);
    schema = pg.env.DATABASE_SCHEMA;
    a = await startTestServer({ ...pg.env, ...issuer.env() });
    b = await startTestServer({ ...pg.env, ...issuer.env() });
    issuer.configure([`${a.url}/console/auth/callback`, `${b.url}/console/auth/callback`]);
  });
  after(async () => {
    await b?.close();
    await a?.close();
    if (schema) await dropSchema(schema);
    await issuer.close();
  });

  it('a session made on one instance works on the other; a sign-out on one ends it on both', async (t) => {
    if (skip) return t.skip(skip);
    const jar = new CookieJar();
    assert.equal((await signIn(jar, a!.url, 'ann@example.com')).status, 302);
    // The browser's cookies travel to B as they would behind one address.
    for (const name of ['gengate_session', 'gengate_csrf']) jar.set(b!.url, name, jar.get(a!.url, name)!);
    assert.equal((await me(jar, a!.url)).status, 200);
    assert.equal((await me(jar, b!.url)).status, 200);
    const out = await browse(jar, `${a!.url}/console/auth/logout`, { method: 'POST', headers: { 'x-csrf-token': jar.get(a!.url, 'gengate_csrf')! } });
    assert.equal(out.status, 204);
    const cleared = out.headers.getSetCookie().map((line) => parseSetCookie(line));
    assert.ok(cleared.some((c) => c.name === 'gengate_session' && c.maxAge === 0));
    assert.equal((await me(jar, b!.url)).status, 401, 'B no longer knows the session');
  });
});
