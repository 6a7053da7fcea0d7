/**
 * Runtime settings through the admin API: providers, channels (write-only keys), models, MCP
 * servers; refused input changing nothing; the audit log; in-flight calls keeping their settings;
 * secrets encrypted at rest, rotated, and a start refused under a key that cannot read them.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { startFakeChatUpstream, type FakeChatUpstream } from './fakes/openai-chat-upstream.ts';
import { startTestServer, tempDataDir, type TestServer } from './support/server.ts';
import { runCli } from './support/cli.ts';
import { spawnServer } from './support/process.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const MODEL = 'gpt-4.1-mini';
const KEY_ENV = 'RUNTIME_SETTINGS_TEST_KEY';
const FILE_KEY = 'sk-file-key-0123456789abcd';
process.env[KEY_ENV] = FILE_KEY;

const newSecretKey = () => randomBytes(32).toString('base64');

function config(upstream: FakeChatUpstream, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    providers: { openai: { api_key_env: KEY_ENV, retry: { attempts: 0 }, channels: [{ name: 'main', base_url: upstream.url }] } },
    mcp_servers: [{ name: 'filed', url: 'http://127.0.0.1:9/mcp', headers: { 'X-Token': `env:${KEY_ENV}` } }],
    ...extra,
  });
}

async function json(res: Response): Promise<Json> {
  const text = await res.text();
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** An admin call: status and body. */
async function admin(server: TestServer, method: string, pathname: string, body?: unknown): Promise<{ status: number; body: Json }> {
  const res = await server.fetch(pathname, { method, token: server.adminToken, ...(body !== undefined ? { json: body } : {}) });
  return { status: res.status, body: await json(res) };
}

async function chat(server: TestServer, token: string): Promise<Response> {
  return server.fetch('/v1/chat/completions', { method: 'POST', token, json: { model: MODEL, messages: [{ role: 'user', content: 'hello' }] } });
}

/** Everything the admin API shows of the runtime settings, to compare before and after a refused change. */
async function state(server: TestServer): Promise<string> {
  const [providers, models, mcp, audit] = await Promise.all(['/admin/providers', '/admin/models', '/admin/mcp-servers', '/admin/audit?limit=500'].map((p) => admin(server, 'GET', p)));
  return JSON.stringify([providers!.body, models!.body, mcp!.body, audit!.body.data.length]);
}

/** Every file under a directory, read as bytes (the SQLite store, its WAL, blobs). */
function filesUnder(dir: string): Buffer[] {
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => fs.readFileSync(path.join(e.parentPath, e.name)));
}

describe('runtime settings through the admin API', () => {
  let a: FakeChatUpstream;
  let b: FakeChatUpstream;
  let server: TestServer;
  let token: string;

  before(async () => {
    [a, b] = await Promise.all([startFakeChatUpstream(), startFakeChatUpstream()]);
    server = await startTestServer({ GENGATE_CONFIG: config(a), GENGATE_SECRET_KEY: newSecretKey(), [KEY_ENV]: FILE_KEY });
    token = await server.tokenFor('alice');
  });
  after(async () => {
    await server.close();
    await Promise.all([a.close(), b.close()]);
  });

  it('lists the file\'s providers and channels with the key\'s last four characters, never the key', async () => {
    const { status, body } = await admin(server, 'GET', '/admin/providers');
    assert.equal(status, 200);
    const openai = body.data.find((p: Json) => p.code === 'openai');
    assert.equal(openai.adapter, 'openai');
    assert.deepEqual(openai.channels.map((c: Json) => [c.name, c.base_url, c.api_key_set, c.api_key_last4, c.source]), [['main', a.url, true, FILE_KEY.slice(-4), 'file']]);
    assert.ok(!JSON.stringify(body).includes(FILE_KEY));
  });

  it('adds a channel with a stored key that the next call uses, and shows only its last four characters', async () => {
    const key = `sk-admin-${randomBytes(12).toString('hex')}`;
    const created = await admin(server, 'POST', '/admin/providers/openai/channels', { name: 'backup', base_url: b.url, api_key: key, priority: -1 });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual([created.body.name, created.body.api_key_set, created.body.api_key_last4, created.body.source, created.body.priority], ['backup', true, key.slice(-4), 'admin', -1]);
    assert.ok(!JSON.stringify(created.body).includes(key));
    // Applied before the answer: the very next call goes to the new channel, with its key.
    const res = await chat(server, token);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-gengate-channel'), 'backup');
    assert.equal(b.requests.at(-1)!.headers.authorization, `Bearer ${key}`);
    // An override of the file's channel keeps its source.
    const patched = await admin(server, 'PATCH', '/admin/providers/openai/channels/main', { weight: 3 });
    assert.equal(patched.status, 200);
    assert.deepEqual([patched.body.weight, patched.body.source, patched.body.base_url], [3, 'file', a.url]);
    assert.equal((await admin(server, 'DELETE', '/admin/providers/openai/channels/backup')).status, 204);
    const after = await chat(server, token);
    assert.equal(after.headers.get('x-gengate-channel'), 'main');
  });

  it('refuses bad input with the field named, and changes nothing', async () => {
    const before = await state(server);
    const refused: [string, string, unknown, number, string, string?][] = [
      ['PUT', '/admin/providers/openai', { adapter: 'no-such-adapter' }, 400, 'adapter'],
      ['PUT', '/admin/providers/openai', { base_url: 'ftp://example.com' }, 400, 'base_url'],
      ['PUT', '/admin/providers/no-such-provider', { base_url: 'http://127.0.0.1:9' }, 404, 'code', 'provider_not_found'],
      ['POST', '/admin/providers/openai/channels', { name: 'main', base_url: b.url }, 400, 'name'],
      ['POST', '/admin/providers/openai/channels', { name: 'x', base_url: 'file:///etc/passwd' }, 400, 'base_url'],
      ['POST', '/admin/providers/openai/channels', { name: 'x', models: ['no-such-model'] }, 400, 'models[0]'],
      ['POST', '/admin/providers/openai/channels', { name: 'x', models: ['seedream-4.0'] }, 400, 'models[0]'],
      ['PATCH', '/admin/providers/openai/channels/nope', { weight: 2 }, 404, 'name', 'channel_not_found'],
      ['PATCH', `/admin/models/${MODEL}`, { pricing: { per_request: -1 } }, 400, 'pricing.per_request'],
      ['PATCH', `/admin/models/${MODEL}`, { pricing: { per_request: 'one' } }, 400, 'pricing.per_request'],
      ['PATCH', `/admin/models/${MODEL}`, { fallbacks: ['no-such-model'] }, 400, 'fallbacks[0]'],
      ['PATCH', `/admin/models/${MODEL}`, { fallbacks: [MODEL] }, 400, 'fallbacks[0]'],
      ['PATCH', '/admin/models/no-such-model', { enabled: false }, 404, 'alias', 'model_not_found'],
      ['DELETE', `/admin/models/${MODEL}`, undefined, 400, 'alias'],
      ['POST', '/admin/models', { alias: 'broken' }, 400, ''],
      ['POST', '/admin/mcp-servers', { name: 'gengate', url: 'http://127.0.0.1:9/mcp' }, 400, 'name'],
      ['POST', '/admin/mcp-servers', { name: 'Bad Name', url: 'http://127.0.0.1:9/mcp' }, 400, 'name'],
      ['POST', '/admin/mcp-servers', { name: 'filed', url: 'http://127.0.0.1:9/mcp' }, 400, 'name'],
      ['POST', '/admin/mcp-servers', { name: 'x', url: 'ftp://127.0.0.1/mcp' }, 400, 'url'],
      ['POST', '/admin/mcp-servers', { name: 'x', url: 'http://127.0.0.1:9/mcp', headers: { 'X-A': 'env:NO_SUCH_VARIABLE_SET' } }, 400, 'headers.X-A'],
      ['PATCH', '/admin/mcp-servers/nope', { tools: [] }, 404, 'name', 'mcp_server_not_found'],
    ];
    for (const [method, pathname, body, status, param, code] of refused) {
      const res = await admin(server, method, pathname, body);
      const what = `${method} ${pathname} ${JSON.stringify(body)}: ${JSON.stringify(res.body)}`;
      assert.equal(res.status, status, what);
      if (param) assert.equal(res.body.error.param, param, what);
      else assert.ok(res.body.error.param, what);
      if (code) assert.equal(res.body.error.code, code, what);
    }
    assert.equal(await state(server), before);
  });

  it('changes a model\'s state, prices and fallbacks, adds and deletes a model of its own', async () => {
    const patched = await admin(server, 'PATCH', `/admin/models/${MODEL}`, { pricing: { per_request: 2 }, display_name: 'Mini' });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    assert.deepEqual([patched.body.pricing, patched.body.displayName, patched.body.source, patched.body.enabled], [{ per_request: 2 }, 'Mini', 'admin', true]);
    const listed = (await json(await server.fetch('/v1/models/list?type=text_generate', { token }))).modelList.find((m: Json) => m.alias === MODEL);
    assert.ok(listed.billing_mode, 'the price shows in the listing at once');

    const models = (await admin(server, 'GET', '/admin/models')).body.data;
    const entry = models.find((m: Json) => m.alias === MODEL);
    const { enabled: _e, pricing: _p, fallbacks: _f, source: _s, disabled_reason: _d, ...baseModel } = entry;
    const added = await admin(server, 'POST', '/admin/models', { ...baseModel, alias: 'mini-copy', catalogKey: 'base:runtime:mini-copy', displayName: 'Mini copy' });
    assert.equal(added.status, 201, JSON.stringify(added.body));
    assert.equal(added.body.source, 'admin');
    const fallback = await admin(server, 'PATCH', `/admin/models/${MODEL}`, { fallbacks: ['mini-copy'] });
    assert.deepEqual(fallback.body.fallbacks, ['mini-copy']);
    // An added model still named as a fallback cannot go: nothing changes.
    assert.equal((await admin(server, 'DELETE', '/admin/models/mini-copy')).status, 400);
    assert.equal((await admin(server, 'PATCH', `/admin/models/${MODEL}`, { fallbacks: [] })).status, 200);
    assert.equal((await admin(server, 'DELETE', '/admin/models/mini-copy')).status, 204);
    assert.equal((await admin(server, 'PATCH', '/admin/models/mini-copy', { enabled: false })).status, 404);

    const disabled = await admin(server, 'PATCH', `/admin/models/${MODEL}`, { enabled: false });
    assert.equal(disabled.body.enabled, false);
    assert.equal((await chat(server, token)).status, 400);
    assert.equal((await admin(server, 'PATCH', `/admin/models/${MODEL}`, { enabled: true })).status, 200);
    assert.equal((await chat(server, token)).status, 200);
  });

  it('manages upstream MCP servers; literal header values are write-only secrets the MCP code reads opened', async () => {
    const secret = `mcp-secret-${randomBytes(8).toString('hex')}`;
    const created = await admin(server, 'POST', '/admin/mcp-servers', { name: 'tools_1', url: 'http://127.0.0.1:9/mcp', headers: { Authorization: secret, 'X-Env': `env:${KEY_ENV}` }, tools: ['echo'] });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual(created.body, { name: 'tools_1', url: 'http://127.0.0.1:9/mcp', headers: { Authorization: '***', 'X-Env': `env:${KEY_ENV}` }, tools: ['echo'], source: 'admin' });
    const runtime = server.server.services.live.mcpServers().find((s) => s.name === 'tools_1')!;
    assert.deepEqual(runtime.headers, { Authorization: secret, 'X-Env': FILE_KEY });
    const filed = (await admin(server, 'GET', '/admin/mcp-servers/filed')).body;
    assert.equal(filed.source, 'file');
    const patched = await admin(server, 'PATCH', '/admin/mcp-servers/filed', { tools: ['a', 'b'] });
    assert.deepEqual([patched.body.tools, patched.body.source, patched.body.url], [['a', 'b'], 'file', 'http://127.0.0.1:9/mcp']);
    assert.equal((await admin(server, 'DELETE', '/admin/mcp-servers/tools_1')).status, 204);
    assert.equal((await admin(server, 'GET', '/admin/mcp-servers/tools_1')).status, 404);
    assert.ok(!JSON.stringify((await admin(server, 'GET', '/admin/audit?limit=500')).body).includes(secret));
  });

  it('keeps an audit row of every change, newest first, filtered and paged, secrets as ***', async () => {
    const created = await admin(server, 'POST', '/admin/tokens', { user_id: 'bob' });
    assert.equal((await admin(server, 'PUT', '/admin/users/bob/limits', { requests_per_minute: 5 })).status, 200);
    assert.equal((await admin(server, 'PUT', '/admin/config', { callback_secret: 'cb-secret-value' })).status, 200);
    assert.equal((await admin(server, 'POST', '/admin/channels/openai/main/disable', { reason: 'maintenance' })).status, 200);
    assert.equal((await admin(server, 'POST', '/admin/channels/openai/main/enable')).status, 200);
    assert.equal((await admin(server, 'DELETE', `/admin/tokens/${created.body.id}`)).status, 204);
    const { body } = await admin(server, 'GET', '/admin/audit?limit=6');
    assert.deepEqual(body.data.map((r: Json) => [r.action, r.target]), [
      ['token.revoke', `token:${created.body.id}`],
      ['channel.enable', 'channel:openai/main'],
      ['channel.disable', 'channel:openai/main'],
      ['callback.update', 'config:callback'],
      ['limits.update', 'user:bob'],
      ['token.create', `token:${created.body.id}`],
    ]);
    const row = body.data[3];
    assert.deepEqual(row.actor, { type: 'admin_token', id: 'admin' });
    assert.equal(row.after.callback_secret, '***');
    assert.ok(row.request_id && row.ip && !Number.isNaN(Date.parse(row.at)));
    assert.equal(body.data[2].after.disabled_reason, 'maintenance');
    assert.ok(!JSON.stringify(body).includes(created.body.token) && !JSON.stringify(body).includes('cb-secret-value'));

    const all = (await admin(server, 'GET', '/admin/audit?limit=500')).body.data;
    const channelRows = all.filter((r: Json) => r.target === 'channel:openai/backup');
    assert.deepEqual(channelRows.map((r: Json) => r.action), ['channel.delete', 'channel.create']);
    assert.equal(channelRows[1].after.api_key, '***');
    // Pages follow the cursor without a gap or a repeat.
    const paged: Json[] = [];
    let cursor: string | null = null;
    do {
      const page: Json = (await admin(server, 'GET', `/admin/audit?limit=4${cursor ? `&cursor=${cursor}` : ''}`)).body;
      paged.push(...page.data);
      cursor = page.next_cursor;
    } while (cursor);
    assert.deepEqual(paged.map((r) => r.id), all.map((r: Json) => r.id));
    const filtered = (await admin(server, 'GET', '/admin/audit?action=model.update&actor=admin')).body.data;
    assert.ok(filtered.length > 0 && filtered.every((r: Json) => r.action === 'model.update'));
    assert.equal((await admin(server, 'GET', '/admin/audit?actor=someone-else')).body.data.length, 0);
    const at = Date.parse(all[0].at);
    assert.equal((await admin(server, 'GET', `/admin/audit?from=${new Date(at).toISOString()}&target=${encodeURIComponent(all[0].target)}`)).body.data[0].id, all[0].id);
    assert.ok(!(await admin(server, 'GET', `/admin/audit?to=${at}`)).body.data.some((r: Json) => r.id === all[0].id));
    // No route changes or deletes a row.
    assert.equal((await admin(server, 'DELETE', `/admin/audit/${all[0].id}`)).status, 404);
  });

  it('lets an in-flight call finish on the settings it started with', async () => {
    a.script({ kind: 'slow', delayMs: 400 });
    const started = a.nextRequest();
    const inFlight = chat(server, token);
    await started;
    // The channel moves to the other upstream while the call is under way.
    assert.equal((await admin(server, 'PATCH', '/admin/providers/openai/channels/main', { base_url: b.url })).status, 200);
    const res = await inFlight;
    assert.equal(res.status, 200);
    const countB = b.requests.length;
    assert.equal((await chat(server, token)).status, 200);
    assert.equal(b.requests.length, countB + 1, 'the next call goes to the new base URL');
    assert.equal((await admin(server, 'PATCH', '/admin/providers/openai/channels/main', { base_url: a.url })).status, 200);
  });

  it('tests a channel with one cheap call', async () => {
    const { status, body } = await admin(server, 'POST', '/admin/providers/openai/channels/main/test');
    assert.equal(status, 200);
    assert.deepEqual([body.ok, body.error], [true, null]);
    assert.equal(server.server.services.catalog.find(body.model)?.providerCode, 'openai');
    const sent = a.requests.at(-1)!.body;
    assert.equal(sent.max_tokens ?? sent.max_completion_tokens, 1, JSON.stringify(sent));
  });

  it('removes audit rows only once they are older than AUDIT_RETENTION_DAYS (365 by default)', async () => {
    const audit = server.server.services.audit;
    const count = (await admin(server, 'GET', '/admin/audit?limit=500')).body.data.length;
    assert.ok(count > 0);
    assert.equal(await audit.sweep(Date.now() + 364 * 24 * 60 * 60 * 1000), 0);
    assert.equal(await audit.sweep(Date.now() + 366 * 24 * 60 * 60 * 1000), count);
    assert.deepEqual((await admin(server, 'GET', '/admin/audit')).body, { data: [], next_cursor: null });
  });
});

describe('secrets at rest', () => {
  it('without GENGATE_SECRET_KEY refuses to store a secret, naming the field, while other changes work', async () => {
    const upstream = await startFakeChatUpstream();
    const server = await startTestServer({ GENGATE_CONFIG: config(upstream), [KEY_ENV]: FILE_KEY });
    try {
      const key = await admin(server, 'POST', '/admin/providers/openai/channels', { name: 'keyed', api_key: 'sk-some-key-1234' });
      assert.deepEqual([key.status, key.body.error.code, key.body.error.param], [400, 'secret_key_not_configured', 'api_key']);
      const header = await admin(server, 'POST', '/admin/mcp-servers', { name: 'x', url: 'http://127.0.0.1:9/mcp', headers: { Authorization: 'Bearer literal' } });
      assert.deepEqual([header.status, header.body.error.code, header.body.error.param], [400, 'secret_key_not_configured', 'headers.Authorization']);
      assert.equal((await admin(server, 'GET', '/admin/providers')).body.data[0].channels.length, 1);
      assert.equal((await admin(server, 'POST', '/admin/providers/openai/channels', { name: 'plain', base_url: upstream.url })).status, 201);
    } finally {
      await server.close();
      await upstream.close();
    }
  });

  it('keeps the clear key out of the store, the data directory and the logs, scrubs an upstream echoing it, rotates, and refuses a start under a wrong key', async () => {
    const upstream = await startFakeChatUpstream();
    const dataDir = tempDataDir();
    const key1 = newSecretKey();
    const key2 = newSecretKey();
    const apiKey = `sk-live-${randomBytes(16).toString('hex')}`;
    const env = { DATA_DIR: dataDir, GENGATE_CONFIG: config(upstream), ADMIN_TOKEN: `admin-${randomBytes(6).toString('hex')}`, LOG_LEVEL: 'debug', FETCH_ALLOW_HOSTS: '127.0.0.1', [KEY_ENV]: FILE_KEY };
    try {
      let proc = await spawnServer({ ...env, GENGATE_SECRET_KEY: key1 });
      const call = (method: string, pathname: string, body?: unknown) => fetch(proc!.url + pathname, { method, headers: { authorization: `Bearer ${env.ADMIN_TOKEN}`, 'content-type': 'application/json' }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
      assert.equal((await call('POST', '/admin/providers/openai/channels', { name: 'keyed', base_url: upstream.url, api_key: apiKey, priority: -1 })).status, 201);
      const token = (await (await call('POST', '/admin/tokens', { user_id: 'carol' })).json() as Json).token;
      // The upstream refuses the key and echoes part of it, as OpenAI's 401 does.
      upstream.script({ kind: 'status', status: 401, message: `Incorrect API key provided: ${apiKey.slice(0, 14)}***${apiKey.slice(-4)}. Full: ${apiKey}` });
      const refused = await fetch(`${proc.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] }) });
      const answer = await refused.text();
      assert.ok(!answer.includes(apiKey.slice(0, 14)) && !answer.includes(apiKey), answer);
      const channels = await (await call('GET', '/admin/channels')).text();
      assert.ok(!channels.includes(apiKey.slice(0, 14)), channels);
      const shown = await (await call('GET', '/admin/providers')).text();
      const audit = await (await call('GET', '/admin/audit?limit=500')).text();
      await proc.stop();
      for (const text of [shown, audit, proc.output()]) assert.ok(!text.includes(apiKey.slice(0, 14)), text.slice(0, 2000));
      for (const bytes of filesUnder(dataDir)) assert.equal(bytes.indexOf(apiKey.slice(0, 14)), -1, 'a file of the data directory holds the key');

      // A wrong key: the start is refused, naming the variable.
      await assert.rejects(spawnServer({ ...env, GENGATE_SECRET_KEY: key2 }), /GENGATE_SECRET_KEY/);
      // Rotation reads the old key as the previous one and re-encrypts under the new one.
      const unreadable = await runCli(['secrets', 'rotate'], { ...env, GENGATE_SECRET_KEY: key2 });
      assert.equal(unreadable.code, 1, unreadable.stderr);
      assert.match(unreadable.stderr, /channel openai\/keyed api_key/);
      const rotated = await runCli(['secrets', 'rotate'], { ...env, GENGATE_SECRET_KEY: key2, GENGATE_SECRET_KEY_PREVIOUS: key1 });
      assert.equal(rotated.code, 0, rotated.stderr);
      proc = await spawnServer({ ...env, GENGATE_SECRET_KEY: key2 });
      // The refused key disabled the channel; an administrator enables it again.
      assert.equal((await call('POST', '/admin/channels/openai/keyed/enable', {})).status, 200);
      const res = await fetch(`${proc.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] }) });
      assert.equal(res.status, 200, await res.text());
      assert.equal(upstream.requests.at(-1)!.headers.authorization, `Bearer ${apiKey}`, 'the rotated key still reads');
      await proc.stop();
      await assert.rejects(spawnServer({ ...env, GENGATE_SECRET_KEY: key1 }), /GENGATE_SECRET_KEY/);
    } finally {
      await upstream.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
