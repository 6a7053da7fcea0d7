import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { once } from 'node:events';
import { startTestServer, type TestServer } from './support/server.ts';

// A 1x1 PNG.
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');

interface Envelope {
  code: number;
  message: string;
  data: { success: boolean; url?: string };
}

async function upload(srv: TestServer, token: string, form: FormData): Promise<{ status: number; body: Envelope }> {
  const res = await srv.fetch('/v1/files/upload', { method: 'POST', token, body: form });
  return { status: res.status, body: (await res.json()) as Envelope };
}

describe('temporary file upload', () => {
  let srv: TestServer;
  let token: string;
  before(async () => {
    srv = await startTestServer();
    token = await srv.tokenFor('uploader');
  });
  after(() => srv.close());

  it('stores a binary part and serves it without a token under its name and type', async () => {
    const form = new FormData();
    form.append('file', new Blob([PNG], { type: 'image/png' }), 'dot.png');
    const { status, body } = await upload(srv, token, form);
    assert.equal(status, 200);
    assert.equal(body.code, 0);
    assert.equal(body.message, 'success');
    assert.equal(body.data.success, true);
    assert.match(body.data.url!, new RegExp(`^${srv.url}/files/[\\w-]{24}/dot\\.png$`));
    const res = await fetch(body.data.url!);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'image/png');
    assert.deepEqual(Buffer.from(await res.arrayBuffer()), PNG);
  });

  it('serves uploaded HTML and SVG as sandboxed downloads, images inline', async () => {
    for (const [name, content, disposition] of [['page.html', '<script>alert(1)</script>', 'attachment'], ['pic.svg', '<svg onload="alert(1)"/>', 'attachment'], ['dot.png', PNG, 'inline']] as const) {
      const form = new FormData();
      form.append('file', new Blob([content]), name);
      const { body } = await upload(srv, token, form);
      const res = await fetch(body.data.url!);
      assert.equal(res.headers.get('content-security-policy'), 'sandbox', name);
      assert.equal(res.headers.get('content-disposition'), `${disposition}; filename*=UTF-8''${name}`, name);
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    }
  });

  it('uses fileName when given, even after the file part', async () => {
    const form = new FormData();
    form.append('file', new Blob(['hello world']), 'blob');
    form.append('fileName', 'notes.txt');
    const { body } = await upload(srv, token, form);
    assert.match(body.data.url!, /\/notes\.txt$/);
    const res = await fetch(body.data.url!);
    assert.match(res.headers.get('content-type')!, /^text\/plain/);
    assert.equal(await res.text(), 'hello world');
  });

  it('accepts base64 text, and a data-URI prefix for images', async () => {
    let form = new FormData();
    form.append('file', PNG.toString('base64'));
    let { status, body } = await upload(srv, token, form);
    assert.equal(status, 200);
    let res = await fetch(body.data.url!);
    assert.equal(res.headers.get('content-type'), 'image/png', 'type sniffed from the bytes');
    assert.deepEqual(Buffer.from(await res.arrayBuffer()), PNG);

    form = new FormData();
    form.append('file', `data:image/png;base64,${PNG.toString('base64')}`);
    form.append('fileName', 'pic.png');
    ({ status, body } = await upload(srv, token, form));
    assert.equal(status, 200);
    res = await fetch(body.data.url!);
    assert.equal(res.headers.get('content-type'), 'image/png');
    assert.deepEqual(Buffer.from(await res.arrayBuffer()), PNG);

    form = new FormData();
    form.append('file', `data:application/pdf;base64,${Buffer.from('%PDF-1.4').toString('base64')}`);
    ({ status, body } = await upload(srv, token, form));
    assert.equal(status, 400);
    assert.notEqual(body.code, 0);
    assert.equal(body.data.success, false);
    assert.match(body.message, /images only/);
  });

  it('rejects a missing file, an empty one and non-multipart bodies with the envelope', async () => {
    let form = new FormData();
    form.append('fileName', 'x.txt');
    let { status, body } = await upload(srv, token, form);
    assert.equal(status, 400);
    assert.equal(body.code, 400);
    assert.equal(body.data.success, false);
    assert.match(body.message, /file/);

    form = new FormData();
    form.append('file', new Blob([]), 'empty.bin');
    ({ status, body } = await upload(srv, token, form));
    assert.equal(status, 400);
    assert.match(body.message, /empty/);

    const res = await srv.fetch('/v1/files/upload', { method: 'POST', token, json: { file: 'aGVsbG8=' } });
    assert.equal(res.status, 400);
    const json = (await res.json()) as Envelope;
    assert.equal(json.data.success, false);
    assert.notEqual(json.code, 0);
  });

  it('refuses files over 20 MB with 413 and keeps nothing', async () => {
    const blobsBefore = countFiles(path.join(srv.dataDir, 'blobs'));
    const big = Buffer.alloc(20 * 1024 * 1024 + 1, 7);
    let form = new FormData();
    form.append('file', new Blob([big]), 'big.bin');
    let { status, body } = await upload(srv, token, form);
    assert.equal(status, 413);
    assert.equal(body.code, 413);
    assert.match(body.message, /20 MB limit/);
    assert.equal(body.data.success, false);

    form = new FormData();
    form.append('file', big.toString('base64'));
    ({ status, body } = await upload(srv, token, form));
    assert.equal(status, 413);
    assert.equal(countFiles(path.join(srv.dataDir, 'blobs')), blobsBefore, 'no bytes left behind');

    const atLimit = new FormData();
    atLimit.append('file', new Blob([big.subarray(1)]), 'limit.bin');
    assert.equal((await upload(srv, token, atLimit)).status, 200, 'exactly 20 MB is accepted');
  });
});

describe('temporary file retention', () => {
  it('answers 404 once the retention period is over and the sweeper deletes the bytes', async (t) => {
    const srv = await startTestServer({ GENGATE_CONFIG: JSON.stringify({ limits: { file_retention_ms: 1500 } }) });
    t.after(() => srv.close());
    const form = new FormData();
    form.append('file', new Blob(['short-lived']), 'temp.txt');
    const { body } = await upload(srv, await srv.tokenFor('uploader'), form);
    const id = /\/files\/([\w-]+)\//.exec(body.data.url!)![1];
    const blob = path.join(srv.dataDir, 'blobs', 'files', id);
    assert.ok(fs.existsSync(blob));
    assert.equal((await fetch(body.data.url!)).status, 200);
    const renamed = body.data.url!.replace(/temp\.txt$/, 'other.txt');
    assert.equal((await fetch(renamed)).status, 404, 'the name is part of the address');
    // Wait for the sweeper to remove the bytes (it runs every retention/4).
    const watcher = fs.watch(path.dirname(blob));
    const deadline = Date.now() + 10_000;
    while (fs.existsSync(blob) && Date.now() < deadline) await Promise.race([once(watcher, 'change'), new Promise((r) => setTimeout(r, 200))]);
    watcher.close();
    assert.ok(!fs.existsSync(blob), 'bytes deleted after retention');
    const res = await fetch(body.data.url!);
    assert.equal(res.status, 404);
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'file_not_found');
  });
});

function countFiles(dir: string): number {
  if (!fs.existsSync(dir)) return 0;
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).length;
}
