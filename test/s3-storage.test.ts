import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { randomBytes } from 'node:crypto';
import { createBLAKE3 } from 'hash-wasm';
import { loadSettings, SettingsError } from '../src/config/settings.ts';
import { S3BlobStore } from '../src/storage/blobs/s3-blob-store.ts';
import { startTestServer, tempDataDir, type TestServer } from './support/server.ts';
import { S3_CREDENTIALS, startS3, type TestS3 } from './support/s3.ts';
import { eventually } from './support/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

// The AWS SDK reads its credentials from the process environment.
Object.assign(process.env, S3_CREDENTIALS);

async function blake3Of(bytes: Buffer): Promise<string> {
  const hasher = await createBLAKE3();
  hasher.init();
  hasher.update(bytes);
  return `blake3:${hasher.digest('hex')}`;
}

/** Every file under a folder, as paths relative to it. */
function filesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => path.relative(dir, path.join(e.parentPath, e.name)));
}

async function uploadFile(srv: TestServer, token: string, bytes: Buffer, name: string): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(bytes)]), name);
  const res = await srv.fetch('/v1/files/upload', { method: 'POST', token, body: form });
  const json: Json = await res.json();
  assert.equal(res.status, 200, JSON.stringify(json));
  return json.data.url;
}

describe('S3 blob store settings', () => {
  const base = { BLOB_STORE: 's3', S3_BUCKET: 'b' };

  it('reads BLOB_STORE=s3 with its bucket, endpoint, region and path style', () => {
    const settings = loadSettings({ ...base, S3_ENDPOINT: 'http://127.0.0.1:9000', S3_REGION: 'eu-west-3', S3_FORCE_PATH_STYLE: 'true' });
    assert.deepEqual(settings.blobStore, { kind: 's3', bucket: 'b', endpoint: 'http://127.0.0.1:9000', region: 'eu-west-3', forcePathStyle: true });
    assert.deepEqual(loadSettings({}).blobStore, { kind: 'fs' });
    assert.equal(loadSettings({}).filesDelivery, 'proxy');
    assert.equal(loadSettings({}).role, 'all');
  });

  it('refuses S3 without a bucket, an unknown store, and redirects from local disk', () => {
    assert.throws(() => loadSettings({ BLOB_STORE: 's3' }), (e) => e instanceof SettingsError && /S3_BUCKET/.test(e.message));
    assert.throws(() => loadSettings({ BLOB_STORE: 'nfs' }), (e) => e instanceof SettingsError && /BLOB_STORE: expected one of fs, s3/.test(e.message));
    assert.throws(() => loadSettings({ FILES_DELIVERY: 'redirect' }), (e) => e instanceof SettingsError && /FILES_DELIVERY=redirect: needs BLOB_STORE=s3/.test(e.message));
    assert.equal(loadSettings({ ...base, FILES_DELIVERY: 'redirect' }).filesDelivery, 'redirect');
  });

  it('refuses a split role without the shared services, and a worker without PUBLIC_BASE_URL', () => {
    const shared = { REDIS_URL: 'redis://127.0.0.1:6379', DATABASE_URL: 'postgres://x@127.0.0.1/db' };
    assert.throws(() => loadSettings({ ROLE: 'api' }), (e) => e instanceof SettingsError && /ROLE=api: needs REDIS_URL and DATABASE_URL/.test(e.message));
    assert.throws(() => loadSettings({ ROLE: 'worker', ...shared }), (e) => e instanceof SettingsError && /ROLE=worker: needs PUBLIC_BASE_URL/.test(e.message));
    assert.throws(() => loadSettings({ ROLE: 'both', ...shared }), (e) => e instanceof SettingsError && /ROLE: expected one of all, api, worker/.test(e.message));
    assert.equal(loadSettings({ ROLE: 'api', ...shared }).role, 'api');
    assert.equal(loadSettings({ ROLE: 'worker', PUBLIC_BASE_URL: 'http://api.example', ...shared }).role, 'worker');
  });
});

describe('the gateway on an S3 bucket (s3rver)', () => {
  let s3: TestS3;
  let srv: TestServer;
  let token: string;
  let store: S3BlobStore;

  before(async () => {
    s3 = await startS3();
    srv = await startTestServer(s3.env);
    token = await srv.tokenFor('s3-user');
    store = new S3BlobStore({ bucket: s3.bucket, endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true });
  });

  after(async () => {
    store?.close();
    await srv?.close();
    await s3?.close();
  });

  /** The objects of the bucket, read through s3rver's folder (objects end in `._S3rver_object`). */
  const objectKeys = () => filesUnder(path.join(s3.directory, s3.bucket)).filter((f) => f.endsWith('._S3rver_object')).map((f) => f.slice(0, -'._S3rver_object'.length));

  it('keeps uploads in the bucket, none on local disk, and serves them back', async () => {
    const bytes = randomBytes(3000);
    const url = await uploadFile(srv, token, bytes, 'noise.bin');
    const id = new URL(url).pathname.split('/')[2]!;
    assert.ok(objectKeys().includes(`files/${id}`), `objects: ${objectKeys().join(', ')}`);
    assert.deepEqual(filesUnder(path.join(srv.dataDir, 'blobs')), []);
    const res = await fetch(url);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-length'), '3000');
    assert.deepEqual(Buffer.from(await res.arrayBuffer()), bytes);
  });

  it('stores a generated image once, shared by its /files URL and its asset, and serves both', async () => {
    const before = objectKeys();
    const res = await srv.fetch('/v1/images/generations', { method: 'POST', token, json: { model: 'seedream-4.0', prompt: 'a bucket of light', size: '32x32' } });
    const json: Json = await res.json();
    assert.equal(res.status, 200, JSON.stringify(json));
    const image = await fetch(json.data[0].url);
    assert.equal(image.status, 200);
    const png = Buffer.from(await image.arrayBuffer());
    assert.equal(png.subarray(1, 4).toString('latin1'), 'PNG');
    const assets: Json = await (await srv.fetch('/api/assets?include_tags=output', { token })).json();
    assert.equal(assets.assets.length, 1, JSON.stringify(assets));
    const asset = assets.assets[0];
    assert.equal(asset.asset_hash, await blake3Of(png));
    // One object for the output: the /files entry reads the asset's content.
    assert.deepEqual(objectKeys().filter((k) => !before.includes(k)), [`assets/${asset.asset_hash.slice('blake3:'.length)}`]);
    const content = await srv.fetch(`/api/assets/${asset.id}/content`, { token });
    assert.equal(content.status, 200);
    assert.deepEqual(Buffer.from(await content.arrayBuffer()), png);
  });

  it('streams an asset larger than one multipart part into the bucket and back', async () => {
    const bytes = randomBytes(19 * 1024 * 1024);
    const form = new FormData();
    form.append('tags', 'input');
    form.append('file', new Blob([new Uint8Array(bytes)]), 'big.bin');
    const res = await srv.fetch('/api/assets', { method: 'POST', token, body: form });
    const asset: Json = await res.json();
    assert.equal(res.status, 201, JSON.stringify(asset));
    assert.equal(asset.asset_hash, await blake3Of(bytes));
    assert.equal(await store.size(`assets/${asset.asset_hash.slice('blake3:'.length)}`), bytes.length);
    // Content is filed under its hash: nothing stays under the incoming names.
    assert.deepEqual(objectKeys().filter((k) => k.startsWith('assets/.incoming/')), []);
    const content = await srv.fetch(`/api/assets/${asset.id}/content`, { token });
    assert.equal(content.status, 200);
    assert.ok(Buffer.from(await content.arrayBuffer()).equals(bytes));
  });

  it('leaves nothing under the key when the source fails mid-upload, past the first part', async () => {
    let sent = 0;
    const failing = new Readable({
      read() {
        if (sent >= 12 * 1024 * 1024) this.destroy(new Error('the source broke off'));
        else this.push(randomBytes(1024 * 1024)), (sent += 1024 * 1024);
      },
    });
    await assert.rejects(store.put('files/broken-off', failing), /the source broke off/);
    assert.equal(await store.size('files/broken-off'), undefined);
    assert.equal(await store.open('files/broken-off'), undefined);
  });

  it('stores empty content', async () => {
    assert.equal(await store.put('files/empty', Buffer.alloc(0)), 0);
    assert.equal(await store.size('files/empty'), 0);
  });

  it('refuses to start when the bucket does not exist', async () => {
    const dataDir = tempDataDir();
    try {
      await assert.rejects(startTestServer({ ...s3.env, S3_BUCKET: 'no-such-bucket', DATA_DIR: dataDir }), /S3 bucket no-such-bucket at http:\/\/127\.0\.0\.1:\d+ is not usable/);
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('deletes expired uploads from the bucket, and with OUTPUT_RETENTION_DAYS expired outputs too (410), but not content an asset keeps', async () => {
    const short = await startTestServer({ ...s3.env, OUTPUT_RETENTION_DAYS: String(2000 / (24 * 60 * 60 * 1000)), GENGATE_CONFIG: JSON.stringify({ limits: { file_retention_ms: 1500 } }) });
    try {
      const briefToken = await short.tokenFor('brief');
      const url = await uploadFile(short, briefToken, Buffer.from('short-lived'), 'brief.txt');
      const key = `files/${new URL(url).pathname.split('/')[2]}`;
      assert.equal(await store.size(key), 'short-lived'.length);
      const generated = await short.fetch('/v1/images/generations', { method: 'POST', token: briefToken, json: { model: 'seedream-4.0', prompt: 'a brief light', size: '16x16' } });
      const output: Json = await generated.json();
      assert.equal(generated.status, 200, JSON.stringify(output));
      const kept = await short.fetch('/v1/images/generations', { method: 'POST', token: briefToken, json: { model: 'seedream-4.0', prompt: 'a kept light', size: '16x16' } });
      const keptOutput: Json = await kept.json();
      const assets: Json[] = ((await (await short.fetch('/api/assets?include_tags=output', { token: briefToken })).json()) as Json).assets;
      const outputAsset = assets.find((a) => a.job_id === output.task_id)!;
      const keptAsset = assets.find((a) => a.job_id === keptOutput.task_id)!;
      const outputKey = `assets/${outputAsset.hash.slice('blake3:'.length)}`;
      const keptKey = `assets/${keptAsset.hash.slice('blake3:'.length)}`;
      assert.equal((await short.fetch('/api/assets/from-hash', { method: 'POST', token: briefToken, json: { hash: keptAsset.hash, name: 'mine.png', tags: ['input'] } })).status, 201);
      await eventually('the sweeper to delete the object', async () => (await store.size(key)) === undefined, 10_000);
      assert.equal((await fetch(url)).status, 404);
      await eventually('the output object to be deleted', async () => (await store.size(outputKey)) === undefined, 10_000);
      assert.equal((await fetch(output.data[0].url)).status, 410);
      assert.equal((await fetch(keptOutput.data[0].url)).status, 200, 'its content is an asset of the registry');
      assert.equal(await store.size(keptKey), keptAsset.size);
    } finally {
      await short.close();
    }
  });

  it('FILES_DELIVERY=redirect answers 302 to a presigned URL that serves the bytes with their type and name', async () => {
    const redirecting = await startTestServer({ ...s3.env, FILES_DELIVERY: 'redirect', FILES_REDIRECT_TTL_SECONDS: '120' });
    try {
      const bytes = randomBytes(2048);
      const url = await uploadFile(redirecting, await redirecting.tokenFor('redirected'), bytes, 'page.html');
      const res = await fetch(url, { redirect: 'manual' });
      assert.equal(res.status, 302);
      assert.equal(res.headers.get('cache-control'), 'no-store');
      const location = new URL(res.headers.get('location')!);
      assert.equal(location.origin, s3.endpoint);
      assert.equal(location.searchParams.get('X-Amz-Expires'), '120');
      const direct = await fetch(location);
      assert.equal(direct.status, 200);
      assert.match(direct.headers.get('content-type')!, /^text\/html/);
      // HTML goes out as a download, as it does through the gateway.
      assert.equal(direct.headers.get('content-disposition'), "attachment; filename*=UTF-8''page.html");
      assert.deepEqual(Buffer.from(await direct.arrayBuffer()), bytes);
      assert.equal((await fetch(url.replace(/\/page\.html$/, '/other.html'), { redirect: 'manual' })).status, 404);
    } finally {
      await redirecting.close();
    }
  });
});
