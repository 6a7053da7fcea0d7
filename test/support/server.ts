import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { it } from 'node:test';
import pg from 'pg';
import { Redis } from 'ioredis';
import pino from 'pino';
import { loadSettings } from '../../src/config/settings.ts';
import { startServer, type RunningServer, type ServerParts } from '../../src/main.ts';
import { openDb, type Db } from '../../src/storage/db.ts';

export const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

export interface TestServer {
  url: string;
  adminToken: string;
  dataDir: string;
  server: RunningServer;
  /** Creates an API token for the user through the admin API. */
  tokenFor(userId: string): Promise<string>;
  /** fetch against the server with an optional bearer token. */
  fetch(pathname: string, init?: RequestInit & { token?: string; json?: unknown }): Promise<Response>;
  close(): Promise<void>;
}

/** A fresh DATA_DIR that is removed when the server closes. */
export function tempDataDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'gengate-test-'));
}

/**
 * Starts the real server in this process on a random port with an empty data directory.
 * Only the given env is used (never the caller's DATABASE_URL by accident); `parts` replaces
 * pieces such as the engines. FETCH_ALLOW_HOSTS defaults to 127.0.0.1, where the fakes listen.
 */
export async function startTestServer(env: Record<string, string> = {}, parts: ServerParts = {}): Promise<TestServer> {
  const dataDir = env.DATA_DIR ?? tempDataDir();
  const adminToken = env.ADMIN_TOKEN ?? `test-admin-${randomBytes(8).toString('hex')}`;
  const settings = loadSettings({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', FETCH_ALLOW_HOSTS: '127.0.0.1', ...env, DATA_DIR: dataDir, ADMIN_TOKEN: adminToken });
  const server = await startServer(settings, pino({ level: 'silent' }), parts);
  const doFetch: TestServer['fetch'] = (pathname, init = {}) => {
    const { token, json, ...rest } = init;
    const headers = new Headers(rest.headers);
    if (token) headers.set('authorization', `Bearer ${token}`);
    let body = rest.body;
    if (json !== undefined) {
      headers.set('content-type', 'application/json');
      body = JSON.stringify(json);
    }
    return fetch(server.url + pathname, { ...rest, headers, body });
  };
  return {
    url: server.url,
    adminToken,
    dataDir,
    server,
    fetch: doFetch,
    async tokenFor(userId) {
      const res = await doFetch('/admin/tokens', { method: 'POST', token: adminToken, json: { user_id: userId } });
      if (res.status !== 201) throw new Error(`token create failed: ${res.status} ${await res.text()}`);
      return ((await res.json()) as { token: string }).token;
    },
    async close() {
      await server.close();
      if (!env.DATA_DIR) fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Two tests of `check` on a store opened directly (no server): a fresh SQLite one, and a fresh
 * schema of PostgreSQL (skipped as postgresEnv says when it is not there).
 */
export function itOnEachStore(title: string, check: (db: Db) => Promise<void>): void {
  it(`${title} (SQLite)`, async () => {
    const db = await openDb({ dataDir: tempDataDir() });
    try {
      await check(db);
    } finally {
      await db.close();
    }
  });
  it(`${title} (PostgreSQL)`, async (t) => {
    const postgres = await postgresEnv();
    if ('skip' in postgres) return t.skip(postgres.skip);
    const db = await openDb({ databaseUrl: postgres.env.DATABASE_URL, pgSchema: postgres.env.DATABASE_SCHEMA, dataDir: tempDataDir() });
    try {
      await check(db);
    } finally {
      await db.close();
      await dropSchema(postgres.env.DATABASE_SCHEMA!);
    }
  });
}

/**
 * Env for a server on PostgreSQL in a schema of its own, or the reason PostgreSQL cannot be
 * used. With REQUIRE_SERVICES=1 (CI) an unreachable server is an error, never a skip.
 */
export async function postgresEnv(): Promise<{ env: Record<string, string> } | { skip: string }> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 10_000 });
  try {
    await client.connect();
    await client.query('select 1');
  } catch (err) {
    const reason = `PostgreSQL not reachable at ${PG_URL} (${(err as Error).message}); skipping the PostgreSQL run`;
    if (process.env.REQUIRE_SERVICES === '1') throw new Error(reason);
    return { skip: reason };
  } finally {
    await client.end().catch(() => undefined);
  }
  return { env: { DATABASE_URL: PG_URL, DATABASE_SCHEMA: `test_${randomBytes(6).toString('hex')}` } };
}

/** Drops a test schema created by postgresEnv. */
export async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

/**
 * Env for a server on Redis under a key prefix of its own, with a cleanup that deletes the
 * prefix's keys, or the reason Redis cannot be used. With REQUIRE_SERVICES=1 (CI) an
 * unreachable server is an error, never a skip.
 */
export async function redisEnv(): Promise<{ env: Record<string, string>; cleanup(): Promise<void> } | { skip: string }> {
  const client = new Redis(REDIS_URL, { lazyConnect: true, connectTimeout: 10_000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  // ioredis rejects with "Connection is closed"; the cause is in its last error event.
  let lastError: Error | undefined;
  client.on('error', (err: Error) => (lastError = err));
  try {
    await client.connect();
    await client.ping();
  } catch (err) {
    const reason = `Redis not reachable at ${REDIS_URL} (${(lastError ?? (err as Error)).message}); skipping the Redis run`;
    if (process.env.REQUIRE_SERVICES === '1') throw new Error(reason);
    return { skip: reason };
  } finally {
    client.disconnect();
  }
  const prefix = `test-${randomBytes(6).toString('hex')}`;
  return { env: { REDIS_URL, REDIS_PREFIX: prefix }, cleanup: () => deleteRedisKeys(prefix) };
}

/** Deletes every key under a prefix made by redisEnv. */
async function deleteRedisKeys(prefix: string): Promise<void> {
  const client = new Redis(REDIS_URL);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      if (keys.length > 0) await client.unlink(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    await client.quit();
  }
}
