/**
 * Batches across a kill -9 and across instances (the real server as child processes), and a
 * 10,000-line embeddings batch whose wall time and server peak RSS are printed.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import OpenAI, { toFile } from 'openai';
import { spawnServer, type ServerProcess } from './support/process.ts';
import { dropSchema, PG_URL, postgresEnv, redisEnv, tempDataDir } from './support/server.ts';
import { eventually } from './support/wait.ts';
import { startGatedChatUpstream, type GatedChatUpstream } from './fakes/gated-chat-upstream.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const ENDED = ['completed', 'failed', 'expired', 'cancelled'];

async function tokenFor(server: ServerProcess, admin: string, user: string): Promise<string> {
  const res = await fetch(`${server.url}/admin/tokens`, { method: 'POST', headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' }, body: JSON.stringify({ user_id: user }) });
  assert.equal(res.status, 201, await res.clone().text());
  return ((await res.json()) as { token: string }).token;
}

function clientFor(server: ServerProcess, token: string): OpenAI {
  return new OpenAI({ baseURL: `${server.url}/openai/v1`, apiKey: token, maxRetries: 0, timeout: 120_000 });
}

async function chatBatch(client: OpenAI, texts: string[]): Promise<OpenAI.Batch> {
  const body = texts.map((t) => JSON.stringify({ custom_id: t, method: 'POST', url: '/v1/chat/completions', body: { model: 'deepseek-chat', messages: [{ role: 'user', content: t }] } })).join('\n');
  const input = await client.files.create({ file: await toFile(Buffer.from(body), 'input.jsonl'), purpose: 'batch' });
  return client.batches.create({ input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
}

async function ended(client: () => OpenAI, id: string, timeoutMs = 60_000): Promise<OpenAI.Batch> {
  return eventually(`batch ${id} ended`, async () => {
    const batch = await client().batches.retrieve(id).catch(() => undefined);
    return batch && ENDED.includes(batch.status) ? batch : undefined;
  }, timeoutMs);
}

async function linesOf(client: OpenAI, fileId: string | null | undefined): Promise<Json[]> {
  if (!fileId) return [];
  const text = await (await client.files.content(fileId)).text();
  return text.split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

/**
 * Exactly once: every line in one of the two files; the lines running at the crash in the error
 * file as interrupted, never sent upstream again; every other line answered in the output file.
 */
async function assertExactlyOnce(client: OpenAI, batch: OpenAI.Batch, texts: string[], interrupted: string[], received: string[]): Promise<void> {
  assert.equal(batch.status, 'completed', JSON.stringify(batch));
  const output = await linesOf(client, batch.output_file_id);
  const errors = await linesOf(client, batch.error_file_id);
  assert.deepEqual([...output, ...errors].map((l) => l.custom_id).sort(), [...texts].sort(), 'every custom_id once across the two files');
  assert.deepEqual(errors.map((l) => [l.custom_id, l.response, l.error.code]).sort(), interrupted.map((t) => [t, null, 'interrupted']).sort());
  assert.ok(output.every((l) => l.response.status_code === 200 && l.response.body.choices[0].message.content === `Answer to ${l.custom_id}`));
  assert.deepEqual(batch.request_counts, { total: texts.length, completed: texts.length - interrupted.length, failed: interrupted.length });
  assert.deepEqual([...received].sort(), [...texts].sort(), 'no line was sent upstream twice');
}

describe('a batch across kill -9 and a restart (SQLite)', () => {
  const dataDir = tempDataDir();
  const admin = `admin-${randomBytes(6).toString('hex')}`;
  let server: ServerProcess | undefined;
  let fake: GatedChatUpstream | undefined;
  after(async () => {
    await server?.stop('SIGKILL');
    await fake?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('goes on where it was: lines done are not run again, lines running at the crash are interrupted, not resent', async () => {
    fake = await startGatedChatUpstream();
    const env = { DATA_DIR: dataDir, ADMIN_TOKEN: admin, BATCH_CONCURRENCY: '2', GENGATE_CONFIG: JSON.stringify({ providers: { deepseek: { base_url: fake.url } } }) };
    server = await spawnServer(env);
    const token = await tokenFor(server, admin, 'crasher');
    let client = clientFor(server, token);
    const texts = Array.from({ length: 10 }, (_, i) => `line-${i}`);
    const created = await chatBatch(client, texts);

    const first = await eventually('two lines held', () => (fake!.held().length === 2 ? fake!.held() : undefined));
    for (const call of first) call.answer();
    await eventually('two lines done', async () => (await client.batches.retrieve(created.id)).request_counts?.completed === 2);
    const running = (await eventually('the next two lines held', () => (fake!.held().length === 2 ? fake!.held() : undefined))).map((c) => c.text);

    await server.stop('SIGKILL');
    fake.open();
    server = await spawnServer(env);
    client = clientFor(server, token);
    const batch = await ended(() => client, created.id);
    await assertExactlyOnce(client, batch, texts, running, fake.received);
  });
});

describe('a batch shared by two instances on PostgreSQL and Redis', () => {
  let servers: ServerProcess[] = [];
  let fake: GatedChatUpstream | undefined;
  const cleanups: (() => Promise<void>)[] = [];
  after(async () => {
    for (const s of servers) await s.stop('SIGKILL');
    await fake?.stop();
    for (const cleanup of cleanups) await cleanup().catch(() => undefined);
  });

  it('is taken over by the other instance when the one running it dies', async (t) => {
    const pgEnv = await postgresEnv();
    const redis = await redisEnv();
    if ('skip' in pgEnv || 'skip' in redis) {
      t.skip('skip' in pgEnv ? pgEnv.skip : (redis as { skip: string }).skip);
      return;
    }
    cleanups.push(() => dropSchema(pgEnv.env.DATABASE_SCHEMA!), redis.cleanup);
    fake = await startGatedChatUpstream();
    const dataDir = tempDataDir();
    cleanups.push(async () => fs.rmSync(dataDir, { recursive: true, force: true }));
    const admin = `admin-${randomBytes(6).toString('hex')}`;
    const env = { ...pgEnv.env, ...redis.env, DATA_DIR: dataDir, ADMIN_TOKEN: admin, BATCH_CONCURRENCY: '2', GENGATE_CONFIG: JSON.stringify({ providers: { deepseek: { base_url: fake.url } } }) };
    // One at a time: the first creates the schema.
    servers = [await spawnServer({ ...env, INSTANCE_ID: 'batch-a' }, 60_000)];
    servers.push(await spawnServer({ ...env, INSTANCE_ID: 'batch-b' }, 60_000));
    const token = await tokenFor(servers[0]!, admin, 'shared');
    const texts = Array.from({ length: 8 }, (_, i) => `shared-${i}`);
    const created = await chatBatch(clientFor(servers[0]!, token), texts);
    const first = await eventually('two lines held', () => (fake!.held().length === 2 ? fake!.held() : undefined));
    for (const call of first) call.answer();
    const running = (await eventually('the next two lines held', () => (fake!.held().length === 2 ? fake!.held() : undefined))).map((c) => c.text);

    // The instance holding the batch's lease dies; the other takes it over once the lease lapses.
    const db = new pg.Client({ connectionString: PG_URL });
    await db.connect();
    const { rows } = await db.query(`select lease_owner from "${pgEnv.env.DATABASE_SCHEMA}".batches where id = $1`, [created.id]).finally(() => db.end());
    const holder = rows[0].lease_owner === 'batch-a' ? 0 : 1;
    assert.ok(['batch-a', 'batch-b'].includes(rows[0].lease_owner));
    await servers[holder]!.stop('SIGKILL');
    fake.open();
    const survivor = clientFor(servers[1 - holder]!, token);
    const batch = await ended(() => survivor, created.id);
    await assertExactlyOnce(survivor, batch, texts, running, fake.received);
  });
});

describe('a 10,000-line embeddings batch', () => {
  const dataDir = tempDataDir();
  const admin = `admin-${randomBytes(6).toString('hex')}`;
  let server: ServerProcess | undefined;
  after(async () => {
    await server?.stop('SIGKILL');
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('completes every line once; prints its wall time and the server\'s peak RSS', async () => {
    const LINES = 10_000;
    server = await spawnServer({ DATA_DIR: dataDir, ADMIN_TOKEN: admin });
    const client = clientFor(server, await tokenFor(server, admin, 'bulk'));
    const peakRssMb = () => Number(/VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${server!.child.pid}/status`, 'utf8'))![1]) / 1024;
    const idleRssMb = peakRssMb();
    const body = Array.from({ length: LINES }, (_, i) => JSON.stringify({ custom_id: `e-${i}`, method: 'POST', url: '/v1/embeddings', body: { model: 'text-embedding-3-small', input: `embedding text number ${i}`, dimensions: 256, encoding_format: 'base64' } })).join('\n');
    const started = Date.now();
    const input = await client.files.create({ file: await toFile(Buffer.from(body), 'bulk.jsonl'), purpose: 'batch' });
    const uploaded = Date.now();
    const created = await client.batches.create({ input_file_id: input.id, endpoint: '/v1/embeddings', completion_window: '24h' });
    const batch = await ended(() => client, created.id, 300_000);
    const finished = Date.now();
    const batchRssMb = peakRssMb();
    assert.equal(batch.status, 'completed');
    assert.deepEqual(batch.request_counts, { total: LINES, completed: LINES, failed: 0 });
    assert.equal(batch.error_file_id, null);
    const text = await (await client.files.content(batch.output_file_id!)).text();
    const lines = text.split('\n').filter(Boolean);
    assert.equal(lines.length, LINES);
    const ids = new Set(lines.map((l) => (JSON.parse(l) as Json).custom_id));
    assert.equal(ids.size, LINES);
    const sample = JSON.parse(lines[LINES - 1]!) as Json;
    assert.equal(sample.custom_id, `e-${LINES - 1}`);
    assert.equal(Buffer.from(sample.response.body.data[0].embedding, 'base64').length, 256 * 4);
    const rows = ((await (await fetch(`${server.url}/admin/requests?batch_id=${batch.id}&limit=200`, { headers: { authorization: `Bearer ${admin}` } })).json()) as Json).data as Json[];
    assert.equal(rows.length, 200);
    process.stdout.write(`10,000-line embeddings batch: upload ${((uploaded - started) / 1000).toFixed(2)} s, batch ${((finished - uploaded) / 1000).toFixed(2)} s (${Math.round(LINES / ((finished - uploaded) / 1000))} lines/s), output ${(text.length / 1024 / 1024).toFixed(1)} MB; server peak RSS ${batchRssMb.toFixed(0)} MB (${idleRssMb.toFixed(0)} MB before the upload)\n`);
  });
});
