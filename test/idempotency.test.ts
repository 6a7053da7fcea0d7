/**
 * Idempotency-Key on creating POSTs: the first answer is replayed with Idempotent-Replayed, a
 * different body (JSON, or any part of a multipart form) is 422, a retry of a running sync call
 * joins its task, and answers made before anything was created are not kept. On SQLite, and on
 * PostgreSQL + Redis with two instances.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import sharp from 'sharp';
import { wav } from './support/media.ts';
import { dropSchema, postgresEnv, redisEnv, startTestServer, type TestServer } from './support/server.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const BODY = { model: 'seedream-4.0', prompt: 'a lighthouse', size: '32x32' };

function submit(srv: TestServer, token: string, key: string, body: Json = BODY, sync = false): Promise<Response> {
  return srv.fetch('/v1/images/generations', { method: 'POST', token, json: body, headers: { 'idempotency-key': key, ...(sync ? {} : { 'x-async': '1' }) } });
}

const square = (background: string) => sharp({ create: { width: 8, height: 8, channels: 3, background } }).png().toBuffer();

type FormFile = [field: string, bytes: Buffer, fileName: string, type: string];

function formOf(fields: Record<string, string>, files: FormFile[]): FormData {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  for (const [field, bytes, fileName, type] of files) form.append(field, new Blob([new Uint8Array(bytes)], { type }), fileName);
  return form;
}

/** A multipart route under /v1 that takes an Idempotency-Key: its form, and the form with one file's bytes or one field changed. */
interface FormRoute {
  path: string;
  headers?: Record<string, string>;
  form(change?: 'file' | 'field'): Promise<FormData>;
}

const FORM_ROUTES: FormRoute[] = [
  {
    path: '/v1/files/upload',
    form: async (change) => formOf(change === 'field' ? { fileName: 'renamed.png' } : {}, [['file', await square(change === 'file' ? 'blue' : 'red'), 'one.png', 'image/png']]),
  },
  {
    path: '/v1/images/edits',
    headers: { 'x-async': '1' },
    form: async (change) => formOf({ model: 'seedream-4.0', prompt: change === 'field' ? 'a boat' : 'a lighthouse', size: '32x32' }, [['image[]', await square(change === 'file' ? 'blue' : 'red'), 'base.png', 'image/png']]),
  },
  {
    path: '/v1/audio/transcriptions',
    form: async (change) => formOf({ model: 'whisper-1', ...(change === 'field' ? { language: 'fr' } : {}) }, [['file', wav(0.2, 16_000, change === 'file' ? 880 : 440), 'speech.wav', 'audio/wav']]),
  },
];

async function taskCount(srv: TestServer, token: string): Promise<number> {
  const res = await srv.fetch('/v1/tasks?limit=200', { token });
  assert.equal(res.status, 200);
  return ((await res.json()) as Json).data.length;
}

/** The same checks for one instance (`a` = `b`) or two sharing the store. */
function idempotencyChecks(servers: () => { a: TestServer; b: TestServer } | undefined, skipped: () => string | undefined): void {
  it('a retry with the same key and body replays the first answer and creates nothing', async (t) => {
    const s = servers();
    if (!s) return t.skip(skipped());
    const token = await s.a.tokenFor('ida');
    const first = await submit(s.a, token, 'order-1');
    assert.equal(first.status, 200);
    assert.equal(first.headers.get('idempotent-replayed'), null);
    const body: Json = await first.json();
    const again = await submit(s.b, token, 'order-1');
    assert.equal(again.status, 200);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(await again.json(), body);
    assert.equal(await taskCount(s.a, token), 1);
  });

  it('the same key with another body is 422 idempotency_key_reused; another user has keys of its own', async (t) => {
    const s = servers();
    if (!s) return t.skip(skipped());
    const token = await s.a.tokenFor('ivo');
    assert.equal((await submit(s.a, token, 'k')).status, 200);
    const other = await submit(s.b, token, 'k', { ...BODY, prompt: 'a boat' });
    assert.equal(other.status, 422);
    assert.equal(((await other.json()) as Json).error.code, 'idempotency_key_reused');
    assert.equal((await submit(s.b, await s.a.tokenFor('someone-else'), 'k', { ...BODY, prompt: 'a boat' })).status, 200);
  });

  for (const route of FORM_ROUTES) {
    it(`${route.path}: a multipart retry replays only when every part is the same, file bytes included`, async (t) => {
      const s = servers();
      if (!s) return t.skip(skipped());
      const token = await s.a.tokenFor(`form-${route.path.replaceAll('/', '-')}`);
      const send = async (srv: TestServer, change?: 'file' | 'field') => srv.fetch(route.path, { method: 'POST', token, body: await route.form(change), headers: { 'idempotency-key': 'form-1', ...route.headers } });
      const first = await send(s.a);
      const body = await first.text();
      assert.equal(first.status, 200, body);
      const again = await send(s.b);
      assert.equal(again.status, 200);
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.equal(await again.text(), body);
      for (const change of ['file', 'field'] as const) {
        const other = await send(s.b, change);
        assert.equal(other.status, 422, `another ${change}: ${other.status}`);
        // The upload answers in its envelope, which names no code: its message does.
        const answer: Json = await other.json();
        assert.match(answer.error?.code ?? answer.message, /idempotency_key_reused|Idempotency-Key was used with another body/);
      }
    });
  }

  it('a sync retry while the first call still waits joins its task and answers as it does', async (t) => {
    const s = servers();
    if (!s) return t.skip(skipped());
    const token = await s.a.tokenFor('ivy');
    const [first, retry] = await Promise.all([submit(s.a, token, 'sync-1', BODY, true), submit(s.b, token, 'sync-1', BODY, true)]);
    assert.equal(first.status, 200);
    assert.equal(retry.status, 200);
    const [one, two]: Json[] = [await first.json(), await retry.json()];
    assert.equal(one.task_id, two.task_id);
    assert.equal([first, retry].filter((r) => r.headers.get('idempotent-replayed') === 'true').length, 1);
    assert.equal(await taskCount(s.a, token), 1);
  });

  it('an answer made before anything was created is not kept, and a malformed key is 400', async (t) => {
    const s = servers();
    if (!s) return t.skip(skipped());
    const token = await s.a.tokenFor('ike');
    const bad = await submit(s.a, token, 'k2', { ...BODY, model: 'no-such-model' });
    assert.equal(bad.status, 404);
    const fixed = await submit(s.b, token, 'k2', { ...BODY, model: 'no-such-model' });
    assert.equal(fixed.status, 404);
    assert.equal(fixed.headers.get('idempotent-replayed'), null);
    const malformed = await submit(s.a, token, 'é'.repeat(3));
    assert.equal(malformed.status, 400);
    assert.equal(((await malformed.json()) as Json).error.code, 'invalid_idempotency_key');
  });
}

describe('idempotency keys (SQLite)', () => {
  let srv: TestServer | undefined;
  before(async () => {
    srv = await startTestServer({ LOCAL_ENGINE_MIN_DURATION_MS: '300' });
  });
  after(() => srv?.close());
  idempotencyChecks(() => (srv ? { a: srv, b: srv } : undefined), () => undefined);
});

describe('idempotency keys (PostgreSQL + Redis, two instances)', () => {
  let pair: { a: TestServer; b: TestServer } | undefined;
  let skip: string | undefined;
  const cleanups: (() => Promise<void>)[] = [];
  before(async () => {
    const pg = await postgresEnv();
    if ('skip' in pg) return void (skip = pg.skip);
    const redis = await redisEnv();
    if ('skip' in redis) return void (skip = redis.skip);
    cleanups.push(() => dropSchema(pg.env.DATABASE_SCHEMA!), redis.cleanup);
    const env = { ...pg.env, ...redis.env, ADMIN_TOKEN: 'idem-admin', LOCAL_ENGINE_MIN_DURATION_MS: '300' };
    const a = await startTestServer(env);
    pair = { a, b: await startTestServer(env) };
  });
  after(async () => {
    await pair?.b.close();
    await pair?.a.close();
    for (const cleanup of cleanups) await cleanup();
  });
  idempotencyChecks(() => pair, () => skip);
});
