import { after, before, describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { S3BlobStore } from '../src/storage/blobs/s3-blob-store.ts';
import { spawnServer, type ServerProcess } from './support/process.ts';
import { S3_CREDENTIALS, startS3, startStallingProxy, type StallingProxy, type TestS3 } from './support/s3.ts';
import { dropSchema, postgresEnv, redisEnv, tempDataDir } from './support/server.ts';
import { eventually } from './support/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const START_TIMEOUT_MS = 60_000;
// A 1x1 PNG.
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');

// The AWS SDK of this process (used to look into the bucket) reads its credentials here.
Object.assign(process.env, S3_CREDENTIALS);

/** The same path on another instance: what a load balancer in front of the api instances does. */
const on = (instance: ServerProcess, url: string) => instance.url + new URL(url).pathname;

/**
 * The deployment of docs/deployment.md in small: two api instances and a worker, each with a
 * DATA_DIR of its own, sharing PostgreSQL, Redis and one S3 bucket (s3rver standing in for AWS
 * S3, Garage, SeaweedFS or R2).
 */
describe('api and worker instances with separate DATA_DIRs on PostgreSQL, Redis and one S3 bucket', () => {
  let skip: string | undefined;
  const cleanups: (() => Promise<void> | void)[] = [];
  const processes: ServerProcess[] = [];
  let s3: TestS3;
  let store: S3BlobStore;
  let common: Record<string, string>;
  let adminToken: string;
  let api1: ServerProcess;
  let api2: ServerProcess;
  let worker: ServerProcess;
  let token: string;

  async function spawn(env: Record<string, string>): Promise<ServerProcess> {
    const dataDir = tempDataDir();
    cleanups.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
    const proc = await spawnServer({ ...common, DATA_DIR: dataDir, ...env }, START_TIMEOUT_MS);
    processes.push(proc);
    return proc;
  }

  function api(instance: ServerProcess, pathname: string, init: RequestInit & { json?: unknown } = {}): Promise<Response> {
    const { json, ...rest } = init;
    const headers = new Headers(rest.headers);
    headers.set('authorization', `Bearer ${token}`);
    if (json !== undefined) headers.set('content-type', 'application/json');
    return fetch(instance.url + pathname, { ...rest, headers, body: json === undefined ? rest.body : JSON.stringify(json) });
  }

  async function upload(instance: ServerProcess, bytes: Buffer, name: string): Promise<string> {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(bytes)]), name);
    const res = await api(instance, '/v1/files/upload', { method: 'POST', body: form });
    const json: Json = await res.json();
    assert.equal(res.status, 200, JSON.stringify(json));
    return json.data.url;
  }

  /** An image edit of an input uploaded through api2, submitted through api1. */
  async function submitEdit(): Promise<string> {
    const input = await upload(api2, PNG, 'dot.png');
    const res = await api(api1, '/v1/images/edits', { method: 'POST', headers: { 'x-async': '1' }, json: { model: 'seedream-4.0', prompt: 'the dot, larger', image: [input], size: '32x32' } });
    const json: Json = await res.json();
    assert.equal(res.status, 200, JSON.stringify(json));
    return json.task_id;
  }

  async function recordOf(taskId: string): Promise<Json> {
    const res = await api(api2, `/v1/ai/result/${taskId}`);
    assert.equal(res.status, 200);
    return res.json();
  }

  const ended = (taskId: string) => eventually(`the end of ${taskId}`, async () => {
    const record = await recordOf(taskId);
    return ['success', 'failed', 'cancelled'].includes(record.queue_status.status) ? record : undefined;
  }, 30_000);

  before(async () => {
    const pg = await postgresEnv();
    const redis = await redisEnv();
    if ('skip' in pg || 'skip' in redis) {
      skip = 'skip' in pg ? pg.skip : (redis as { skip: string }).skip;
      process.stdout.write(`# ${skip}\n`);
      return;
    }
    cleanups.push(() => dropSchema(pg.env.DATABASE_SCHEMA!), () => redis.cleanup());
    s3 = await startS3();
    cleanups.push(() => s3.close());
    store = new S3BlobStore({ bucket: s3.bucket, endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true });
    cleanups.push(() => store.close());
    adminToken = `split-admin-${randomBytes(8).toString('hex')}`;
    common = { ...pg.env, ...redis.env, ...s3.env, ADMIN_TOKEN: adminToken, WORKER_HEARTBEAT_MS: '250', WORKER_HEARTBEAT_TTL_MS: '1500' };
    api1 = await spawn({ ROLE: 'api', INSTANCE_ID: 'split-api-1' });
    // Every instance names the files it stores by api1's address, as they would by a load balancer's.
    [api2, worker] = await Promise.all([
      spawn({ ROLE: 'api', INSTANCE_ID: 'split-api-2', PUBLIC_BASE_URL: api1.url }),
      spawn({ ROLE: 'worker', INSTANCE_ID: 'split-worker', PUBLIC_BASE_URL: api1.url }),
    ]);
    const res = await fetch(`${api1.url}/admin/tokens`, { method: 'POST', headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' }, body: JSON.stringify({ user_id: 'split-user' }) });
    assert.equal(res.status, 201);
    token = ((await res.json()) as Json).token;
  });

  after(async () => {
    await Promise.allSettled(processes.map((p) => p.stop('SIGKILL')));
    for (const cleanup of cleanups.reverse()) await Promise.resolve(cleanup()).catch(() => undefined);
  });

  /** Skips without the services; prints every instance's output when the test fails. */
  function test(name: string, fn: () => Promise<void>) {
    it(name, async (t: TestContext) => {
      if (skip) return t.skip(skip);
      try {
        await fn();
      } catch (err) {
        for (const p of processes) process.stdout.write(`# output of ${p.url}:\n${p.output().replace(/^/gm, '#   ')}\n`);
        throw err;
      }
    });
  }

  test('a file uploaded through one api instance is served by the other', async () => {
    const bytes = randomBytes(5000);
    const url = await upload(api1, bytes, 'noise.bin');
    const res = await fetch(on(api2, url));
    assert.equal(res.status, 200);
    assert.deepEqual(Buffer.from(await res.arrayBuffer()), bytes);
  });

  test('the worker answers /healthz and /metrics and nothing else', async () => {
    const health = await fetch(`${worker.url}/healthz`);
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { status: 'ok', database: 'postgres', redis: 'ok' });
    const metrics = await fetch(`${worker.url}/metrics`);
    assert.equal(metrics.status, 200);
    assert.match(await metrics.text(), /^gengate_process_cpu_seconds_total/m);
    const models = await api(worker, '/v1/models/list');
    assert.equal(models.status, 404);
    assert.equal(((await models.json()) as Json).error.code, 'route_not_found');
    assert.equal((await fetch(on(worker, await upload(api1, PNG, 'dot.png')))).status, 404);
  });

  test('a task submitted on an api instance runs on the worker, reads its input from the bucket, and its output is served by the api instances', async () => {
    const taskId = await submitEdit();
    const record = await ended(taskId);
    assert.equal(record.queue_status.status, 'success', JSON.stringify(record));
    assert.equal(record.queue_status.server, 'split-worker');
    const [output] = record.queue_status.output_content as Json[];
    assert.ok(output.url.startsWith(`${api1.url}/files/`), output.url);
    const first = await fetch(on(api1, output.url));
    assert.equal(first.status, 200);
    const png = Buffer.from(await first.arrayBuffer());
    assert.equal(png.subarray(1, 4).toString('latin1'), 'PNG');
    const second = await fetch(on(api2, output.url));
    assert.deepEqual(Buffer.from(await second.arrayBuffer()), png);
  });

  // Last: it replaces the worker.
  test('a worker killed mid-upload leaves no half object, and the next worker finishes the task', async () => {
    await worker.stop();
    let proxy: StallingProxy | undefined;
    try {
      proxy = await startStallingProxy(s3);
      const held = proxy.holdNextWrite();
      const doomed = await spawn({ ROLE: 'worker', INSTANCE_ID: 'split-worker-doomed', PUBLIC_BASE_URL: api1.url, S3_ENDPOINT: proxy.endpoint });
      const taskId = await submitEdit();
      const key = await held;
      await doomed.stop('SIGKILL');
      assert.equal(await store.size(key), undefined, `half-written ${key} is visible`);
      assert.notEqual((await recordOf(taskId)).queue_status.status, 'success');

      await spawn({ ROLE: 'worker', INSTANCE_ID: 'split-worker-next', PUBLIC_BASE_URL: api1.url });
      const record = await ended(taskId);
      assert.equal(record.queue_status.status, 'success', JSON.stringify(record));
      assert.equal(record.queue_status.server, 'split-worker-next');
      const res = await fetch(on(api2, record.queue_status.output_content[0].url));
      assert.equal(res.status, 200);
      const served = Buffer.from(await res.arrayBuffer());
      assert.equal(served.subarray(1, 4).toString('latin1'), 'PNG');
      // The cut-off write may have been to the output's own key, which the next worker then wrote whole.
      const size = await store.size(key);
      assert.ok(size === undefined || size === served.length, `half-written ${key} appeared later (${size} bytes, the output has ${served.length})`);
    } finally {
      await proxy?.close();
    }
  });
});
