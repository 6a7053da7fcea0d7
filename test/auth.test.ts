import { after, before, describe, it } from 'node:test';
import { NODE_CACHE_ENV, CLI_ARGS } from './support/typescript-loader.ts';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { startTestServer, tempDataDir, type TestServer } from './support/server.ts';
import { runCli } from './support/cli.ts';

describe('users, tokens and admin', () => {
  let srv: TestServer;
  before(async () => {
    srv = await startTestServer();
  });
  after(() => srv.close());

  it('creates a token shown once, lists tokens without plain values, deletes them', async () => {
    const res = await srv.fetch('/admin/tokens', { method: 'POST', token: srv.adminToken, json: { user_id: 'alice', name: 'laptop' } });
    assert.equal(res.status, 201);
    const created = (await res.json()) as { id: string; token: string; user_id: string; name: string; created_at: number };
    assert.equal(created.user_id, 'alice');
    assert.equal(created.name, 'laptop');
    assert.match(created.token, /^gg-[\w-]{43}$/);
    assert.ok(Math.abs(created.created_at - Date.now()) < 60_000);

    const list = (await (await srv.fetch('/admin/tokens', { token: srv.adminToken })).json()) as { data: Record<string, unknown>[] };
    const listed = list.data.find((t) => t.id === created.id);
    assert.deepEqual(listed, { id: created.id, user_id: 'alice', name: 'laptop', created_at: created.created_at, limits: {}, team_id: null });
    assert.ok(!JSON.stringify(list).includes(created.token), 'plain token never listed');

    assert.equal((await srv.fetch('/v1/models', { token: created.token })).status, 200);
    const del = await srv.fetch(`/admin/tokens/${created.id}`, { method: 'DELETE', token: srv.adminToken });
    assert.equal(del.status, 204);
    // The token worked a moment ago (so it is cached); a delete must still take effect at once.
    const after = await srv.fetch('/v1/models', { token: created.token });
    assert.equal(after.status, 401);
    assert.equal(((await after.json()) as { error: { type: string } }).error.type, 'authentication_error');

    const again = await srv.fetch(`/admin/tokens/${created.id}`, { method: 'DELETE', token: srv.adminToken });
    assert.equal(again.status, 404);
  });

  it('stores tokens hashed only', async () => {
    const token = await srv.tokenFor('bob');
    const db = fs.readFileSync(`${srv.dataDir}/gengate.db`);
    const wal = fs.existsSync(`${srv.dataDir}/gengate.db-wal`) ? fs.readFileSync(`${srv.dataDir}/gengate.db-wal`) : Buffer.alloc(0);
    assert.ok(!db.includes(token) && !wal.includes(token), 'the plain token is not in the database');
  });

  it('needs a bearer token on /v1, /api and /admin: 401 missing or unknown', async () => {
    for (const path of ['/v1/models', '/v1/models/list', '/api/assets', '/admin/tokens']) {
      let res = await srv.fetch(path);
      assert.equal(res.status, 401, path);
      res = await srv.fetch(path, { token: 'gg-unknown' });
      assert.equal(res.status, 401, path);
    }
    const res = await srv.fetch('/v1/models', { headers: { authorization: 'Basic abc' } });
    const body = (await res.json()) as { error: Record<string, unknown> };
    assert.deepEqual(Object.keys(body.error).sort(), ['code', 'message', 'param', 'type']);
    assert.equal(body.error.type, 'authentication_error');
    assert.equal(body.error.code, 'missing_api_key');
  });

  it('cannot be walked around with an encoded or oddly written path', async () => {
    const api = await srv.tokenFor('eve');
    for (const path of ['/%61dmin/tokens', '/adm%69n/config', '/%76%31/models', '/v1/%6dodels/list', '/api/%61ssets']) {
      const res = await fetch(srv.url + path);
      assert.equal(res.status, 401, path);
    }
    assert.equal((await fetch(srv.url + '/%61dmin/tokens', { headers: { authorization: `Bearer ${api}` } })).status, 403);
  });

  it('puts every route in the group of its prefix: API routes need a token, /admin routes the admin token', async () => {
    // Every route of the running app: the OpenAPI document's, and the hidden ones, all public.
    const doc = (await (await srv.fetch('/openapi.json')).json()) as { paths: Record<string, Record<string, unknown>> };
    const hidden = [['GET', '/openapi.json'], ['GET', '/metrics'], ['GET', '/console'], ['GET', '/console/*'], ['GET', '/docs']];
    for (const [method, url] of hidden) assert.ok(srv.server.app.hasRoute({ method: method as 'GET', url }), `${method} ${url} exists`);
    const routes = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((method) => ({ method: method.toUpperCase(), path: path.replace(/\{[^}]+\}/g, 'x') })));
    assert.ok(routes.length > 50, `the document lists the routes (${routes.length})`);
    const api = await srv.tokenFor('mallory');
    // The console's sign-in is public; who the console caller is, and its sign-out, need a token or a session.
    const publicPaths = ['/healthz', '/files/x/x', '/console/auth/options', '/console/auth/login', '/console/auth/callback'];
    const consolePaths = ['/console/auth/me', '/console/auth/logout'];
    let admin = 0;
    let protectedByToken = 0;
    for (const { method, path } of routes) {
      const call = (token?: string) => srv.fetch(path, { method, ...(token ? { token } : {}) });
      if (path.startsWith('/admin/')) {
        admin++;
        assert.equal((await call()).status, 401, `${method} ${path} without a token`);
        assert.equal((await call(api)).status, 403, `${method} ${path} with an API token`);
      } else if (['/v1/', '/openai/v1/', '/anthropic/v1/', '/api/', '/upload/', '/mcp/'].some((p) => path.startsWith(p)) || path === '/mcp') {
        protectedByToken++;
        assert.equal((await call()).status, 401, `${method} ${path} without a token`);
      } else if (consolePaths.includes(path)) {
        assert.equal((await call()).status, 401, `${method} ${path} without a token or session`);
      } else {
        assert.ok(publicPaths.includes(path), `${method} ${path} is public: add it to the public routes or register it in a group`);
      }
    }
    assert.ok(admin > 10 && protectedByToken > 40, `${admin} admin routes, ${protectedByToken} API routes`);
  });

  it('refuses API tokens on /admin with 403 permission_error', async () => {
    const token = await srv.tokenFor('carol');
    const res = await srv.fetch('/admin/tokens', { token });
    assert.equal(res.status, 403);
    const body = (await res.json()) as { error: { type: string; code: string } };
    assert.equal(body.error.type, 'permission_error');
    assert.equal(body.error.code, 'admin_required');
  });

  it('keeps the callback setting with defaults, changes and resets it', async () => {
    let res = await srv.fetch('/admin/config', { token: srv.adminToken });
    assert.deepEqual(await res.json(), { callback_timeout_ms: 3000, callback_retry_delays_ms: [1000, 5000, 25000] });
    res = await srv.fetch('/admin/config', {
      method: 'PUT', token: srv.adminToken,
      json: { callback_url: 'http://127.0.0.1:9/hook', callback_secret: 's3cret', callback_retry_delays_ms: [10, 20, 30] },
    });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { callback_timeout_ms: 3000, callback_retry_delays_ms: [10, 20, 30], callback_url: 'http://127.0.0.1:9/hook', callback_secret: 's3cret' });
    res = await srv.fetch('/admin/config', { method: 'PUT', token: srv.adminToken, json: { callback_retry_delays_ms: null, callback_url: 'ftp://x' } });
    assert.equal(res.status, 400);
    res = await srv.fetch('/admin/config', { method: 'PUT', token: srv.adminToken, json: { callback_retry_delays_ms: null } });
    assert.deepEqual(((await res.json()) as { callback_retry_delays_ms: number[] }).callback_retry_delays_ms, [1000, 5000, 25000]);
  });

  it('answers every admin write sent no body, an empty one or a non-object with 400 naming body, never 5xx', async () => {
    // The routes come from the OpenAPI document, so a new admin route is covered as it is added.
    const doc = (await (await srv.fetch('/openapi.json')).json()) as { paths: Record<string, Record<string, { requestBody?: { required?: boolean } }>> };
    const routes = Object.entries(doc.paths)
      .filter(([path]) => path.startsWith('/admin/'))
      .flatMap(([path, ops]) => Object.entries(ops).filter(([method]) => ['post', 'put', 'patch'].includes(method)).map(([method, op]) => ({ method: method.toUpperCase(), path, takesBody: op.requestBody?.required === true })));
    assert.ok(routes.some((r) => r.path === '/admin/users/{id}/limits' && r.method === 'PUT'), 'the listing finds the admin routes');
    const json = { 'content-type': 'application/json' };
    const bodies: [name: string, init: RequestInit, missing: boolean][] = [
      ['no body', {}, true],
      ['an empty JSON body', { headers: json, body: '' }, true],
      ['null', { headers: json, body: 'null' }, false],
      ['[]', { headers: json, body: '[]' }, false],
      ['"x"', { headers: json, body: '"x"' }, false],
    ];
    for (const route of routes) {
      for (const [name, init, missing] of bodies) {
        const what = `${route.method} ${route.path} with ${name}`;
        const res = await srv.fetch(route.path.replace(/\{\w+\}/g, 'x'), { method: route.method, token: srv.adminToken, ...init });
        const answer = (await res.json().catch(() => ({}))) as { error?: { param: string | null } };
        assert.ok(res.status < 500, `${what}: ${res.status}`);
        // A route that takes no body may be sent none; whatever is sent must still be a JSON object.
        if (route.takesBody || !missing) {
          assert.equal(res.status, 400, `${what}: ${res.status}`);
          assert.equal(answer.error?.param, 'body', `${what}: ${JSON.stringify(answer)}`);
        } else if (res.status === 400) {
          assert.ok(answer.error?.param, `${what}: ${JSON.stringify(answer)}`);
        }
      }
    }
  });

  it('creates tokens from the command line that the server accepts', async () => {
    const out = await runCli(['token', 'create', '--user', 'dave', '--name', 'cli'], { DATA_DIR: srv.dataDir });
    assert.equal(out.code, 0, out.stderr);
    const created = JSON.parse(out.stdout) as { token: string; user_id: string; name: string };
    assert.equal(created.user_id, 'dave');
    assert.equal(created.name, 'cli');
    assert.equal((await srv.fetch('/v1/models', { token: created.token })).status, 200);
    const missing = await runCli(['token', 'create'], { DATA_DIR: srv.dataDir });
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /--user/);
  });
});

describe('the admin token on first start', () => {
  it('is generated, printed once with a first curl, and works on /admin and /v1', async () => {
    const dataDir = tempDataDir();
    const start = () => new Promise<{ token?: string; url: string; stdout: string; stop: () => Promise<void> }>((resolve, reject) => {
      const child = spawn(process.execPath, [...CLI_ARGS, 'serve'], {
        env: { PATH: process.env.PATH!, ...NODE_CACHE_ENV, PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'silent' },
      });
      let stdout = '';
      child.stdout.on('data', (d) => {
        stdout += d;
        const url = /listening on (\S+)/.exec(stdout)?.[1];
        if (url && /kill \d+/.test(stdout)) {
          setTimeout(() => resolve({
            url,
            stdout,
            token: /Admin token[^:]*: (\S+)/.exec(stdout)?.[1],
            stop: () => new Promise((r) => { child.on('close', () => r()); child.kill('SIGTERM'); }),
          }), 100);
        }
      });
      child.on('error', reject);
      child.on('close', (code) => reject(new Error(`server exited ${code}: ${stdout}`)));
    });
    const first = await start();
    try {
      assert.ok(first.token, 'first start prints the admin token');
      const res = await fetch(`${first.url}/admin/tokens`, { headers: { authorization: `Bearer ${first.token}` } });
      assert.equal(res.status, 200);
      const list = await fetch(`${first.url}/v1/models/list?type=text_to_model`, { headers: { authorization: `Bearer ${first.token}` } });
      assert.equal(list.status, 200);
    } finally {
      await first.stop();
    }
    const second = await start();
    try {
      assert.equal(second.token, undefined, 'a later start does not print it again');
      assert.ok(second.stdout.includes(`its hash is kept in ${dataDir}/admin-token.sha256`), second.stdout);
      assert.match(second.stdout, /gengate admin-token rotate/);
      const res = await fetch(`${second.url}/admin/tokens`, { headers: { authorization: `Bearer ${first.token}` } });
      assert.equal(res.status, 200, 'the stored admin token still works after a restart');
    } finally {
      await second.stop();
    }
    const rotated = await runCli(['admin-token', 'rotate'], { DATA_DIR: dataDir });
    assert.equal(rotated.code, 0, rotated.stderr);
    const newToken = /Admin token[^:]*: (\S+)/.exec(rotated.stdout)?.[1];
    assert.ok(newToken && newToken !== first.token, rotated.stdout);
    const third = await start();
    try {
      const auth = (token: string) => fetch(`${third.url}/admin/tokens`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal((await auth(newToken)).status, 200, 'the rotated token works after the restart');
      assert.equal((await auth(first.token!)).status, 401, 'the previous one no longer does');
    } finally {
      await third.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
    const refused = await runCli(['admin-token', 'rotate'], { DATA_DIR: dataDir, ADMIN_TOKEN: 'from-the-environment' });
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /ADMIN_TOKEN is set/);
  });
});
