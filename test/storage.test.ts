import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { openDb } from '../src/storage/db.ts';
import { dropSchema, postgresEnv, startTestServer, tempDataDir } from './support/server.ts';

/** What must survive a restart, on whichever store the env selects. */
async function survivesRestart(env: Record<string, string>, expectedDialect: string): Promise<void> {
  const dataDir = tempDataDir();
  const adminToken = 'persist-admin-token';
  const common = { ...env, DATA_DIR: dataDir, ADMIN_TOKEN: adminToken };
  let srv = await startTestServer(common);
  const health = (await (await srv.fetch('/healthz')).json()) as { database: string };
  assert.equal(health.database, expectedDialect);
  const token = await srv.tokenFor('persisted-user');
  const revoked = (await (await srv.fetch('/admin/tokens', { method: 'POST', token: adminToken, json: { user_id: 'gone' } })).json()) as { id: string; token: string };
  await srv.fetch(`/admin/tokens/${revoked.id}`, { method: 'DELETE', token: adminToken });
  await srv.fetch('/admin/config', { method: 'PUT', token: adminToken, json: { callback_url: 'http://127.0.0.1:1/cb', callback_timeout_ms: 1234 } });
  const form = new FormData();
  form.append('file', new Blob(['kept across restarts']), 'kept.txt');
  const uploaded = (await (await srv.fetch('/v1/files/upload', { method: 'POST', token, body: form })).json()) as { data: { url: string } };
  await srv.close();

  srv = await startTestServer(common);
  try {
    assert.equal((await srv.fetch('/v1/models', { token })).status, 200, 'token still valid');
    assert.equal((await srv.fetch('/v1/models', { token: revoked.token })).status, 401, 'revoked token stays revoked');
    const list = (await (await srv.fetch('/admin/tokens', { token: adminToken })).json()) as { data: { user_id: string }[] };
    assert.deepEqual(list.data.map((t) => t.user_id), ['persisted-user']);
    const config = (await (await srv.fetch('/admin/config', { token: adminToken })).json()) as Record<string, unknown>;
    assert.equal(config.callback_url, 'http://127.0.0.1:1/cb');
    assert.equal(config.callback_timeout_ms, 1234);
    // Case-insensitive search folds non-ASCII letters on both stores.
    const asset = new FormData();
    asset.append('file', new Blob(['pastry']), 'e.txt');
    asset.append('tags', 'food');
    asset.append('name', 'Éclair au café');
    assert.equal((await srv.fetch('/api/assets', { method: 'POST', token, body: asset })).status, 201);
    for (const needle of ['éclair', 'ÉCLAIR', 'CAFÉ']) {
      const found = (await (await srv.fetch(`/api/assets?name_contains=${encodeURIComponent(needle)}`, { token })).json()) as { total: number };
      assert.equal(found.total, 1, needle);
    }
    const path = new URL(uploaded.data.url).pathname;
    const file = await srv.fetch(path);
    assert.equal(file.status, 200);
    assert.equal(await file.text(), 'kept across restarts');
  } finally {
    await srv.close();
  }
}

describe('storage', () => {
  it('keeps tokens, settings and files across restarts on SQLite', () => survivesRestart({}, 'sqlite'));

  it('keeps tokens, settings and files across restarts on PostgreSQL', async (t) => {
    const pg = await postgresEnv();
    if ('skip' in pg) {
      t.skip(pg.skip);
      return;
    }
    try {
      await survivesRestart(pg.env, 'postgres');
    } finally {
      await dropSchema(pg.env.DATABASE_SCHEMA);
    }
  });

  it('keeps PostgreSQL schemas of one database independent, migrations included', async (t) => {
    const first = await postgresEnv();
    const second = await postgresEnv();
    if ('skip' in first || 'skip' in second) {
      t.skip('skip' in first ? first.skip : (second as { skip: string }).skip);
      return;
    }
    const a = await startTestServer(first.env);
    try {
      const b = await startTestServer(second.env);
      try {
        const tokenA = await a.tokenFor('only-in-a');
        assert.equal((await a.fetch('/v1/models', { token: tokenA })).status, 200);
        assert.equal((await b.fetch('/v1/models', { token: tokenA })).status, 401, 'a token of schema A is unknown in schema B');
      } finally {
        await b.close();
      }
    } finally {
      await a.close();
      await dropSchema(first.env.DATABASE_SCHEMA);
      await dropSchema(second.env.DATABASE_SCHEMA);
    }
  });

  it('opens a new PostgreSQL schema from two instances starting at the same moment', async (t) => {
    // Two sessions creating one schema at once race in PostgreSQL's catalog; ten tries make the loss
    // likely (without the handling, most pairs lose).
    const dataDir = tempDataDir();
    for (let attempt = 0; attempt < 10; attempt++) {
      const pg = await postgresEnv();
      if ('skip' in pg) return t.skip(pg.skip);
      const opened = await Promise.allSettled([0, 1].map(() => openDb({ databaseUrl: pg.env.DATABASE_URL, pgSchema: pg.env.DATABASE_SCHEMA, dataDir })));
      for (const o of opened) if (o.status === 'fulfilled') await o.value.close();
      await dropSchema(pg.env.DATABASE_SCHEMA);
      for (const o of opened) if (o.status === 'rejected') throw o.reason;
    }
  });
});
