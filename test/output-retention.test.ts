import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { loadSettings, SettingsError } from '../src/config/settings.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { eventually } from './support/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const DAY_MS = 24 * 60 * 60 * 1000;
/** Outputs of the short-lived server last this long. */
const RETENTION_MS = 2500;

async function generate(srv: TestServer, token: string, prompt: string, n = 1): Promise<Json> {
  const res = await srv.fetch('/v1/images/generations', { method: 'POST', token, json: { model: 'seedream-4.0', prompt, size: '16x16', n } });
  const body = (await res.json()) as Json;
  assert.equal(res.status, 200, JSON.stringify(body));
  return body;
}

/** The blob of an asset content on local disk. */
const contentPath = (srv: TestServer, hash: string) => path.join(srv.dataDir, 'blobs', 'assets', hash.slice('blake3:'.length));

async function outputAssets(srv: TestServer, token: string): Promise<Json[]> {
  return ((await (await srv.fetch('/api/assets?include_tags=output', { token })).json()) as Json).assets;
}

describe('output retention', () => {
  it('refuses to start with an OUTPUT_RETENTION_DAYS that is not a positive number, naming the variable', async () => {
    for (const bad of ['0', '-1', 'abc', 'Infinity', '1d']) {
      assert.throws(() => loadSettings({ OUTPUT_RETENTION_DAYS: bad }), (err: unknown) => err instanceof SettingsError && /^OUTPUT_RETENTION_DAYS: /.test(err.message), bad);
    }
    await assert.rejects(startTestServer({ OUTPUT_RETENTION_DAYS: '0' }), /OUTPUT_RETENTION_DAYS/);
    assert.equal(loadSettings({ OUTPUT_RETENTION_DAYS: '0.5' }).outputRetentionMs, DAY_MS / 2, 'fractions of a day');
    assert.equal(loadSettings({}).outputRetentionMs, undefined, 'unset: kept forever');
  });

  it('unset: outputs carry no expires_at and their URLs outlive the 24 hours of uploads', async (t) => {
    const srv = await startTestServer({ GENGATE_CONFIG: JSON.stringify({ limits: { file_retention_ms: 1000 } }) });
    t.after(() => srv.close());
    const token = await srv.tokenFor('keeper');
    const body = await generate(srv, token, 'a lasting tower');
    assert.equal(body.output_content[0].expires_at, undefined);
    const form = new FormData();
    form.append('file', new Blob(['brief']), 'brief.txt');
    const upload = ((await (await srv.fetch('/v1/files/upload', { method: 'POST', token, body: form })).json()) as Json).data.url as string;
    await eventually('the upload to expire', async () => (await fetch(upload)).status === 404, 10_000);
    assert.equal((await fetch(body.output_content[0].url)).status, 200, 'the output stays');
  });

  describe('with OUTPUT_RETENTION_DAYS', () => {
    let srv: TestServer;
    let token: string;
    before(async () => {
      srv = await startTestServer({ OUTPUT_RETENTION_DAYS: String(RETENTION_MS / DAY_MS) });
      token = await srv.tokenFor('forgetful');
    });
    after(() => srv.close());

    it('dates every output item, answers 410 file_expired once expired, and the sweeper deletes its bytes and its output record; uploads keep their 24 hours', async () => {
      const form = new FormData();
      form.append('file', new Blob(['kept a day']), 'day.txt');
      const upload = ((await (await srv.fetch('/v1/files/upload', { method: 'POST', token, body: form })).json()) as Json).data.url as string;

      const body = await generate(srv, token, 'a fading harbour', 2);
      assert.equal(body.output_content.length, 2);
      for (const item of body.output_content) {
        assert.match(item.expires_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
        const expiresAt = Date.parse(item.expires_at);
        assert.ok(Math.abs(expiresAt - (body.finished_at + RETENTION_MS)) < 1000, `expires ${expiresAt - body.finished_at} ms after the end`);
        assert.equal((await fetch(item.url)).status, 200);
      }
      const record = (await (await srv.fetch(`/v1/ai/result/${body.task_id}`, { token })).json()) as Json;
      assert.deepEqual(record.queue_status.output_content, body.output_content, 'the record carries the dates');

      const assets = (await outputAssets(srv, token)).filter((a) => a.job_id === body.task_id);
      assert.equal(assets.length, 2);
      for (const asset of assets) assert.ok(fs.existsSync(contentPath(srv, asset.hash)));

      const expiresAt = Date.parse(body.output_content[0].expires_at);
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiresAt - Date.now() + 50)));
      // At its expiry, before any sweep.
      const gone = await fetch(body.output_content[0].url);
      assert.equal(gone.status, 410);
      const error = ((await gone.json()) as Json).error;
      assert.equal(error.code, 'file_expired');
      assert.equal(error.type, 'not_found_error');

      await eventually('the sweeper to delete the bytes', () => assets.every((a) => !fs.existsSync(contentPath(srv, a.hash))), 10_000);
      assert.deepEqual((await outputAssets(srv, token)).filter((a) => a.job_id === body.task_id), [], 'the output records went with them');
      for (const item of body.output_content) assert.equal((await fetch(item.url)).status, 410);
      assert.equal((await fetch(body.output_content[0].url.replace(/[^/]+$/, 'renamed.png'))).status, 404, 'another name is unknown, not expired');
      assert.equal((await fetch(upload)).status, 200, 'the upload keeps its 24 hours');
    });

    it('keeps an output whose content is also an asset of the registry as long as that asset lives', async () => {
      const body = await generate(srv, token, 'a kept lighthouse', 2);
      const [kept, dropped] = body.output_content as Json[];
      const assets = (await outputAssets(srv, token)).filter((a) => a.job_id === body.task_id);
      const keptAsset = assets.find((a) => a.name === kept.filename)!;
      const droppedAsset = assets.find((a) => a.name === dropped.filename)!;
      assert.notEqual(keptAsset.hash, droppedAsset.hash);
      const created = await srv.fetch('/api/assets/from-hash', { method: 'POST', token, json: { hash: keptAsset.hash, name: 'mine.png', tags: ['input'] } });
      assert.equal(created.status, 201);
      const mine = (await created.json()) as Json;

      await eventually('the other output to be swept', () => !fs.existsSync(contentPath(srv, droppedAsset.hash)), 10_000);
      assert.equal((await fetch(dropped.url)).status, 410);
      const served = await fetch(kept.url);
      assert.equal(served.status, 200, 'past its expiry, kept by the asset');
      assert.ok(fs.existsSync(contentPath(srv, keptAsset.hash)));

      assert.equal((await srv.fetch(`/api/assets/${mine.id}`, { method: 'DELETE', token })).status, 204);
      const expired = await fetch(kept.url);
      assert.equal(expired.status, 410, 'once the asset is deleted the output has expired');
    });
  });
});
