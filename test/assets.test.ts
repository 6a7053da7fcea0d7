import { after, before, describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { blake3 } from 'hash-wasm';
import { dropSchema, postgresEnv, startTestServer, type TestServer } from './support/server.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

// A 1x1 PNG.
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
const ISO_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

async function hashOf(content: Buffer | string): Promise<string> {
  return `blake3:${await blake3(typeof content === 'string' ? Buffer.from(content) : content)}`;
}

/** Distinct bytes for each call, so tests never share content by accident. */
function unique(label = 'content'): Buffer {
  return Buffer.from(`${label}-${randomBytes(12).toString('hex')}`);
}

interface UploadOptions {
  content?: Buffer | string;
  filename?: string;
  partType?: string;
  /** Default ['input']; a string is sent as one field, an array as repeated fields, null not at all. */
  tags?: string | string[] | null;
  name?: string;
  user_metadata?: string;
  hash?: string;
  mime_type?: string;
  preview_id?: string;
  id?: string;
  /** Send the text fields after the file part. */
  fieldsAfterFile?: boolean;
}

function uploadForm(o: UploadOptions): FormData {
  const form = new FormData();
  const fields = () => {
    const tags = o.tags === undefined ? ['input'] : o.tags;
    if (typeof tags === 'string') form.append('tags', tags);
    else if (tags) for (const t of tags) form.append('tags', t);
    for (const key of ['name', 'user_metadata', 'hash', 'mime_type', 'preview_id', 'id'] as const) {
      if (o[key] !== undefined) form.append(key, o[key]);
    }
  };
  if (!o.fieldsAfterFile) fields();
  if (o.content !== undefined) form.append('file', new Blob([o.content as BlobPart], { type: o.partType ?? '' }), o.filename ?? 'file.bin');
  if (o.fieldsAfterFile) fields();
  return form;
}

interface Answer {
  status: number;
  body: Json;
  headers: Headers;
}

async function answer(res: Response): Promise<Answer> {
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Json) : {}, headers: res.headers };
}

function assertAssetError(a: Answer, status: number, code: string): void {
  assert.equal(a.status, status, JSON.stringify(a.body));
  assert.equal(a.body.error?.code, code, JSON.stringify(a.body));
  assert.equal(typeof a.body.error.message, 'string');
  assert.ok(a.body.error.message.length > 0);
  assert.equal(typeof a.body.error.details, 'object');
  assert.notEqual(a.body.error.details, null);
}

function assertNoNulls(value: unknown, where = 'record'): void {
  if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      assert.notEqual(v, null, `${where}.${k} is null`);
      if (k !== 'user_metadata') assertNoNulls(v, `${where}.${k}`);
    }
  }
}

let userSeq = 0;

/** The core suite, run once per store. */
function assetSuite(title: string, envOf: () => Promise<{ env: Record<string, string> } | { skip: string }>): void {
  describe(title, () => {
    let srv: TestServer;
    let skipReason: string | undefined;
    let schema: string | undefined;

    before(async () => {
      const env = await envOf();
      if ('skip' in env) {
        skipReason = env.skip;
        process.stdout.write(`# ${skipReason}\n`);
        return;
      }
      schema = env.env.DATABASE_SCHEMA;
      // No periodic sweep: the tests run it when they mean to, so it never races their assertions.
      srv = await startTestServer({ ASSET_SWEEP_INTERVAL_MS: '0', ...env.env });
    });
    after(async () => {
      await srv?.close();
      if (schema) await dropSchema(schema);
    });

    const test = (name: string, fn: (t: TestContext) => Promise<void>) =>
      it(name, async (t) => {
        if (skipReason) {
          t.skip(skipReason);
          return;
        }
        await fn(t);
      });

    /** A user no other test uses, with a token. */
    const newUserWithId = async (label = 'user'): Promise<{ userId: string; token: string }> => {
      const userId = `${label}-${++userSeq}-${randomBytes(3).toString('hex')}`;
      return { userId, token: await srv.tokenFor(userId) };
    };
    const newUser = async (label = 'user'): Promise<string> => (await newUserWithId(label)).token;
    const upload = async (token: string, o: UploadOptions): Promise<Answer> =>
      answer(await srv.fetch('/api/assets', { method: 'POST', token, body: uploadForm(o) }));
    const get = async (token: string, pathname: string): Promise<Answer> => answer(await srv.fetch(pathname, { token }));
    const send = async (token: string, method: string, pathname: string, json?: unknown): Promise<Answer> =>
      answer(await srv.fetch(pathname, { method, token, json }));
    const list = async (token: string, query = ''): Promise<Json> => {
      const a = await get(token, `/api/assets${query ? `?${query}` : ''}`);
      assert.equal(a.status, 200, JSON.stringify(a.body));
      return a.body;
    };
    const names = (body: Json): string[] => body.assets.map((x: Json) => x.name);
    const blobPath = (hash: string) => path.join(srv.dataDir, 'blobs', 'assets', hash.slice('blake3:'.length));
    const sweeper = () => srv.server.services.assets.sweeper;
    const uploadImage = async (token: string, o: { content: Buffer; filename: string; type?: string; subfolder?: string; overwrite?: string; partType?: string }): Promise<Answer> => {
      const form = new FormData();
      if (o.type !== undefined) form.append('type', o.type);
      if (o.subfolder !== undefined) form.append('subfolder', o.subfolder);
      if (o.overwrite !== undefined) form.append('overwrite', o.overwrite);
      form.append('image', new Blob([o.content as BlobPart], { type: o.partType ?? 'image/png' }), o.filename);
      return answer(await srv.fetch('/upload/image', { method: 'POST', token, body: form }));
    };

    // ---- upload and the record shape -----------------------------------------------------

    test('blake3 is the content hash (known vector)', async () => {
      const token = await newUser();
      const a = await upload(token, { content: 'hello world', filename: 'hello.txt', tags: ['input'] });
      assert.equal(a.status, 201);
      assert.equal(a.body.asset_hash, 'blake3:d74981efa70a0c880b8d8c1985d075dbcbf679b99a5f9914e5aaf96b831a9e24');
    });

    test('upload answers 201 with the full record: sorted normalized tags, unset fields omitted, ISO UTC times', async () => {
      const token = await newUser();
      const content = unique('shape');
      const a = await upload(token, {
        content,
        filename: 'photo.png',
        partType: 'image/png',
        tags: ['  Zeta ', 'alpha', 'INPUT', 'alpha', ''],
        user_metadata: JSON.stringify({ rating: 5, note: 'hi' }),
      });
      assert.equal(a.status, 201, JSON.stringify(a.body));
      const r = a.body;
      assert.match(r.id, UUID);
      assert.equal(r.name, 'photo.png');
      assert.equal(r.asset_hash, await hashOf(content));
      assert.equal(r.hash, r.asset_hash);
      assert.equal(r.size, content.length);
      assert.equal(r.mime_type, 'image/png');
      assert.deepEqual(r.tags, ['alpha', 'input', 'zeta']);
      assert.deepEqual(r.user_metadata, { rating: 5, note: 'hi' });
      assert.equal(typeof r.metadata, 'object');
      assert.equal(r.metadata.filename, 'photo.png');
      assert.equal(r.is_immutable, false);
      assert.equal(r.created_new, true);
      assert.match(r.created_at, ISO_UTC);
      assert.match(r.updated_at, ISO_UTC);
      assert.equal(r.preview_url, '/api/view?type=input&filename=photo.png');
      for (const unset of ['job_id', 'prompt_id', 'preview_id']) assert.equal(unset in r, false, `${unset} must be omitted`);
      assertNoNulls(r);
      const got = await get(token, `/api/assets/${r.id}`);
      assert.equal(got.status, 200);
      const { created_new: _createdNew, ...withoutCreated } = r;
      assert.deepEqual(got.body, withoutCreated);
      assert.equal('created_new' in got.body, false);
    });

    test('an identical upload is idempotent: 201 then 200, same record, content stored once', async () => {
      const token = await newUser();
      const content = unique('idem');
      const first = await upload(token, { content, filename: 'same.bin', tags: ['input', 'x'] });
      const second = await upload(token, { content, filename: 'same.bin', tags: ['input', 'x'] });
      assert.equal(first.status, 201);
      assert.equal(first.body.created_new, true);
      assert.equal(second.status, 200);
      assert.equal(second.body.created_new, false);
      assert.equal(second.body.id, first.body.id);
      assert.equal((await list(token)).total, 1);
      const dir = path.join(srv.dataDir, 'blobs', 'assets');
      const hex = first.body.asset_hash.slice('blake3:'.length);
      assert.equal(fs.readdirSync(dir).filter((f) => f === hex).length, 1);
      assert.deepEqual(fs.readdirSync(path.join(dir, '.incoming')).length, 0, 'no temporary upload left behind');
      assert.deepEqual(fs.readFileSync(blobPath(first.body.asset_hash)), content);
    });

    test('the same content under another name is a second record of known content (200, created_new false)', async () => {
      const token = await newUser();
      const content = unique('renamed');
      const first = await upload(token, { content, name: 'one' });
      const second = await upload(token, { content, name: 'two' });
      assert.equal(first.status, 201);
      assert.equal(second.status, 200);
      assert.equal(second.body.created_new, false);
      assert.notEqual(second.body.id, first.body.id);
      assert.equal(second.body.asset_hash, first.body.asset_hash);
      assert.deepEqual(names(await list(token, 'sort=name&order=asc')), ['one', 'two']);
    });

    test('multipart tags as repeated fields, a JSON array string or a comma-separated string', async () => {
      const token = await newUser();
      const repeated = await upload(token, { content: unique(), tags: ['b', 'A', 'c'] });
      const jsonArray = await upload(token, { content: unique(), tags: '["b", " A ", "c", "b"]' });
      const csv = await upload(token, { content: unique(), tags: 'c, b,a' });
      const afterFile = await upload(token, { content: unique(), tags: 'c,a,b', fieldsAfterFile: true });
      for (const a of [repeated, jsonArray, csv, afterFile]) {
        assert.equal(a.status, 201, JSON.stringify(a.body));
        assert.deepEqual(a.body.tags, ['a', 'b', 'c', 'input']);
      }
    });

    test('uploads land under tag input unless their tags name input, output or temp', async () => {
      const token = await newUser();
      const plain = await upload(token, { content: unique(), tags: ['photos'] });
      assert.deepEqual(plain.body.tags, ['input', 'photos']);
      const output = await upload(token, { content: unique(), tags: ['output', 'renders'] });
      assert.deepEqual(output.body.tags, ['output', 'renders']);
      const fromHash = await srv.fetch('/api/assets/from-hash', { method: 'POST', token, json: { hash: plain.body.asset_hash, tags: ['copy'] } });
      assert.deepEqual(((await fromHash.json()) as { tags: string[] }).tags, ['copy', 'input']);
    });

    test('empty tags are rejected with 400 and nothing is stored', async () => {
      const token = await newUser();
      for (const tags of [null, '', '[]', ' , ', ['', ' ']] as const) {
        const a = await upload(token, { content: unique(), tags: tags as string | string[] | null });
        assertAssetError(a, 400, 'INVALID_BODY');
      }
      assert.equal((await list(token)).total, 0);
    });

    test('a client-provided id is rejected with 400 UNSUPPORTED_FIELD, before or after the file', async () => {
      const token = await newUser();
      const content = unique('with-id');
      for (const fieldsAfterFile of [false, true]) {
        const a = await upload(token, { content, id: '5f0c3ad0-0000-4000-8000-000000000000', fieldsAfterFile });
        assertAssetError(a, 400, 'UNSUPPORTED_FIELD');
      }
      assert.equal((await list(token)).total, 0);
      assert.equal(fs.existsSync(blobPath(await hashOf(content))), false, 'rejected content is not kept');
    });

    test('a supplied hash must match the content: 409 HASH_MISMATCH, also when the content already exists', async () => {
      const token = await newUser();
      const content = unique('hashed');
      const good = await hashOf(content);
      const other = await hashOf(unique('other'));
      const mismatch = await upload(token, { content, hash: other });
      assertAssetError(mismatch, 409, 'HASH_MISMATCH');
      assert.equal((await list(token)).total, 0);
      const ok = await upload(token, { content, hash: good.toUpperCase().replace('BLAKE3', 'blake3') });
      assert.equal(ok.status, 201);
      assert.equal(ok.body.asset_hash, good);
      const again = await upload(token, { content, hash: other });
      assertAssetError(again, 409, 'HASH_MISMATCH');
      assert.equal((await list(token)).total, 1);
      assertAssetError(await upload(token, { content, hash: 'sha256:abc' }), 400, 'INVALID_HASH');
      assertAssetError(await upload(token, { content, hash: 'blake3:1234' }), 400, 'INVALID_HASH');
    });

    test('upload errors: no file, empty file, unknown hash without a file, bad user_metadata, not multipart', async () => {
      const token = await newUser();
      assertAssetError(await upload(token, {}), 400, 'MISSING_FILE');
      assertAssetError(await upload(token, { content: '' }), 400, 'EMPTY_UPLOAD');
      assertAssetError(await upload(token, { hash: await hashOf(unique('never')) }), 400, 'MISSING_INPUT');
      assertAssetError(await upload(token, { content: unique(), user_metadata: '{not json' }), 400, 'INVALID_BODY');
      assertAssetError(await upload(token, { content: unique(), user_metadata: '[1,2]' }), 400, 'INVALID_BODY');
      assertAssetError(await upload(token, { content: unique(), tags: ['input', 'missing'] }), 400, 'SYSTEM_TAG_FORBIDDEN');
      const json = await send(token, 'POST', '/api/assets', { tags: ['input'] });
      assert.equal(json.status, 400);
      assert.match(json.body.error.code, /^[A-Z_]+$/);
      assert.equal((await list(token)).total, 0);
    });

    test('a hash without a file registers content the user already has', async () => {
      const token = await newUser();
      const content = unique('hash-only');
      const first = await upload(token, { content, name: 'orig' });
      const byHash = await upload(token, { hash: first.body.asset_hash, name: 'alias', tags: ['extra'] });
      assert.equal(byHash.status, 200);
      assert.equal(byHash.body.created_new, false);
      assert.equal(byHash.body.name, 'alias');
      assert.deepEqual(byHash.body.tags, ['extra', 'input']);
      assert.equal(byHash.body.size, content.length);
    });

    test('uploads larger than the 20 MB /v1 limit are accepted (streamed, not buffered)', async () => {
      const token = await newUser();
      const content = randomBytes(25 * 1024 * 1024);
      const a = await upload(token, { content, filename: 'big.bin', tags: ['input'] });
      assert.equal(a.status, 201, JSON.stringify(a.body));
      assert.equal(a.body.size, content.length);
      assert.equal(a.body.asset_hash, await hashOf(content));
      const res = await srv.fetch(`/api/assets/${a.body.id}/content`, { token });
      assert.equal(res.status, 200);
      assert.equal(Number(res.headers.get('content-length')), content.length);
      assert.equal(await hashOf(Buffer.from(await res.arrayBuffer())), a.body.asset_hash);
    });

    // ---- mime type ---------------------------------------------------------------------------

    test('mime_type is set only when empty; later attempts are ignored; PUT never changes it', async () => {
      const token = await newUser();
      const content = unique('mime');
      const first = await upload(token, { content, name: 'data', filename: 'data' });
      assert.equal(first.status, 201);
      assert.equal('mime_type' in first.body, false, 'no type known yet: omitted');
      const set = await upload(token, { content, name: 'data', filename: 'data', mime_type: 'image/webp' });
      assert.equal(set.status, 200);
      assert.equal(set.body.id, first.body.id);
      assert.equal(set.body.mime_type, 'image/webp', 'set because it was empty');
      const ignored = await upload(token, { content, name: 'data', filename: 'data', mime_type: 'text/plain' });
      assert.equal(ignored.status, 200);
      assert.equal(ignored.body.mime_type, 'image/webp', 'a later attempt is ignored');
      const put = await send(token, 'PUT', `/api/assets/${first.body.id}`, { name: 'renamed', mime_type: 'text/plain' });
      assert.equal(put.status, 200);
      assert.equal(put.body.name, 'renamed');
      assert.equal(put.body.mime_type, 'image/webp');
      assertAssetError(await send(token, 'PUT', `/api/assets/${first.body.id}`, { mime_type: 'text/plain' }), 400, 'INVALID_BODY');
      assert.equal((await get(token, `/api/assets/${first.body.id}`)).body.mime_type, 'image/webp');
    });

    test('the supplied mime_type wins over the part type and the name', async () => {
      const token = await newUser();
      const a = await upload(token, { content: unique(), filename: 'notes.txt', partType: 'text/plain', mime_type: 'image/png' });
      assert.equal(a.body.mime_type, 'image/png');
      const b = await upload(token, { content: unique(), filename: 'notes.txt', partType: 'application/json' });
      assert.equal(b.body.mime_type, 'application/json');
      const c = await upload(token, { content: unique(), filename: 'notes.txt' });
      assert.equal(c.body.mime_type, 'text/plain');
    });

    // ---- get, content, update, delete ----------------------------------------------------------

    test('get and content: 404 ASSET_NOT_FOUND for unknown ids; bytes served with the recorded type', async () => {
      const token = await newUser();
      const content = unique('served');
      const a = await upload(token, { content, filename: 'notes.txt', mime_type: 'image/png' });
      const res = await srv.fetch(`/api/assets/${a.body.id}/content`, { token });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'image/png');
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
      assert.match(res.headers.get('content-disposition')!, /^attachment; filename\*=UTF-8''notes\.txt$/);
      assert.deepEqual(Buffer.from(await res.arrayBuffer()), content);
      const inline = await srv.fetch(`/api/assets/${a.body.id}/content?disposition=inline`, { token });
      assert.match(inline.headers.get('content-disposition')!, /^inline;/);
      await inline.arrayBuffer();
      const unknown = '00000000-0000-4000-8000-000000000000';
      const missing = await get(token, `/api/assets/${unknown}`);
      assertAssetError(missing, 404, 'ASSET_NOT_FOUND');
      assert.equal(missing.body.error.details.id, unknown);
      assertAssetError(await get(token, '/api/assets/not-a-uuid'), 404, 'ASSET_NOT_FOUND');
      assertAssetError(await get(token, `/api/assets/${unknown}/content`), 404, 'ASSET_NOT_FOUND');
    });

    test('PUT changes name, user_metadata and preview_id; created_at stays, updated_at moves', async () => {
      const token = await newUser();
      const target = await upload(token, { content: unique(), filename: 'model.safetensors', tags: ['models'] });
      const preview = await upload(token, { content: PNG, filename: 'thumb one#.png', tags: ['output'], partType: 'image/png' });
      assert.equal('preview_url' in target.body, false, 'a model without a preview has no preview_url');
      const put = await send(token, 'PUT', `/api/assets/${target.body.id}`, { name: 'renamed', user_metadata: { k: 'v' }, preview_id: preview.body.id });
      assert.equal(put.status, 200, JSON.stringify(put.body));
      assert.equal(put.body.name, 'renamed');
      assert.deepEqual(put.body.user_metadata, { k: 'v' });
      assert.equal(put.body.preview_id, preview.body.id);
      assert.equal(put.body.preview_url, '/api/view?type=output&filename=thumb%20one%23.png');
      assert.equal(put.body.created_at, target.body.created_at);
      assert.ok(Date.parse(put.body.updated_at) > Date.parse(target.body.updated_at));
      const viewed = await srv.fetch(put.body.preview_url, { token });
      assert.equal(viewed.status, 200);
      assert.deepEqual(Buffer.from(await viewed.arrayBuffer()), PNG);
      const cleared = await send(token, 'PUT', `/api/assets/${target.body.id}`, { preview_id: null });
      assert.equal(cleared.status, 200);
      assert.equal('preview_id' in cleared.body, false);
      assert.equal('preview_url' in cleared.body, false);
      const badPreview = await send(token, 'PUT', `/api/assets/${target.body.id}`, { preview_id: '00000000-0000-4000-8000-000000000000' });
      assertAssetError(badPreview, 404, 'ASSET_NOT_FOUND');
      assertAssetError(await send(token, 'PUT', `/api/assets/${target.body.id}`, {}), 400, 'INVALID_BODY');
      assertAssetError(await send(token, 'PUT', `/api/assets/${target.body.id}`, { name: 42 }), 400, 'INVALID_BODY');
      assertAssetError(await send(token, 'PUT', '/api/assets/00000000-0000-4000-8000-000000000000', { name: 'x' }), 404, 'ASSET_NOT_FOUND');
    });

    test('preview_id and mime_type pass through upload and create-from-hash, also for existing content', async () => {
      const token = await newUser();
      const preview = await upload(token, { content: PNG, filename: 'p.png', tags: ['input'] });
      const content = unique('with-preview');
      const first = await upload(token, { content, name: 'm', preview_id: preview.body.id });
      assert.equal(first.body.preview_id, preview.body.id);
      assert.equal(first.body.preview_url, '/api/view?type=input&filename=p.png');
      const other = await upload(token, { content: unique(), filename: 'q.png', tags: ['output'], partType: 'image/png' });
      const again = await upload(token, { content, name: 'm', preview_id: other.body.id, mime_type: 'application/x-m' });
      assert.equal(again.status, 200);
      assert.equal(again.body.preview_id, other.body.id);
      assert.equal(again.body.mime_type, 'application/x-m');
      const fromHash = await send(token, 'POST', '/api/assets/from-hash', { hash: first.body.asset_hash, name: 'n', tags: ['t'], mime_type: 'application/x-n', preview_id: preview.body.id });
      assert.equal(fromHash.status, 201);
      assert.equal(fromHash.body.preview_id, preview.body.id);
      assert.equal(fromHash.body.mime_type, 'application/x-n');
      assertAssetError(await upload(token, { content: unique(), preview_id: '00000000-0000-4000-8000-000000000000' }), 404, 'ASSET_NOT_FOUND');
    });

    test('DELETE is a soft delete: 204, then 404, gone from lists and tag counts, content kept, previews cleared', async () => {
      const token = await newUser();
      const content = unique('deleted');
      const doomed = await upload(token, { content, tags: ['input', 'doomed'], name: 'doomed' });
      const keeper = await upload(token, { content: unique(), tags: ['input'], name: 'keeper', preview_id: doomed.body.id });
      const del = await srv.fetch(`/api/assets/${doomed.body.id}`, { method: 'DELETE', token });
      assert.equal(del.status, 204);
      assert.equal(await del.text(), '');
      assertAssetError(await get(token, `/api/assets/${doomed.body.id}`), 404, 'ASSET_NOT_FOUND');
      assertAssetError(await send(token, 'DELETE', `/api/assets/${doomed.body.id}`), 404, 'ASSET_NOT_FOUND');
      assertAssetError(await send(token, 'POST', `/api/assets/${doomed.body.id}/tags`, { tags: ['x'] }), 404, 'ASSET_NOT_FOUND');
      assert.deepEqual(names(await list(token)), ['keeper']);
      const tags = (await get(token, '/api/tags')).body;
      assert.deepEqual(tags.tags, [{ name: 'input', count: 1 }]);
      const refine = (await get(token, '/api/assets/tags/refine')).body;
      assert.deepEqual(refine.tag_counts, { input: 1 });
      assert.equal(fs.existsSync(blobPath(doomed.body.asset_hash)), true, 'content stays in the blob store');
      const kept = (await get(token, `/api/assets/${keeper.body.id}`)).body;
      assert.equal('preview_id' in kept, false, 'a preview pointing at a deleted record is cleared');
      assert.equal((await srv.fetch(`/api/assets/hash/${doomed.body.asset_hash}`, { method: 'HEAD', token })).status, 404);
      const back = await upload(token, { content, tags: ['input'], name: 'doomed' });
      assert.equal(back.status, 201, 'uploading the content again makes a new record');
      assert.notEqual(back.body.id, doomed.body.id);
    });

    // ---- tags on a record ---------------------------------------------------------------------

    test('tag add and remove answer added/already_present and removed/not_present with total_tags, sorted', async () => {
      const token = await newUser();
      const a = await upload(token, { content: unique(), tags: ['input', 'm'] });
      const added = await send(token, 'POST', `/api/assets/${a.body.id}/tags`, { tags: [' Zed ', 'm', 'b', 'zed'] });
      assert.equal(added.status, 200);
      assert.deepEqual(added.body, { added: ['b', 'zed'], already_present: ['m'], total_tags: ['b', 'input', 'm', 'zed'] });
      const removed = await send(token, 'DELETE', `/api/assets/${a.body.id}/tags`, { tags: ['zed', 'nope', 'B'] });
      assert.equal(removed.status, 200);
      assert.deepEqual(removed.body, { removed: ['b', 'zed'], not_present: ['nope'], total_tags: ['input', 'm'] });
      const after = (await get(token, `/api/assets/${a.body.id}`)).body;
      assert.deepEqual(after.tags, ['input', 'm']);
      assert.ok(Date.parse(after.updated_at) > Date.parse(a.body.updated_at));
      assertAssetError(await send(token, 'POST', `/api/assets/${a.body.id}/tags`, { tags: [] }), 400, 'INVALID_BODY');
      assertAssetError(await send(token, 'POST', `/api/assets/${a.body.id}/tags`, { tags: ['  '] }), 400, 'INVALID_BODY');
      assertAssetError(await send(token, 'POST', `/api/assets/${a.body.id}/tags`, {}), 400, 'INVALID_BODY');
      assertAssetError(await send(token, 'POST', `/api/assets/${a.body.id}/tags`, { tags: 'x' }), 400, 'INVALID_BODY');
      assertAssetError(await send(token, 'POST', `/api/assets/${a.body.id}/tags`, { tags: ['missing'] }), 400, 'SYSTEM_TAG_FORBIDDEN');
      assertAssetError(await send(token, 'DELETE', `/api/assets/${a.body.id}/tags`, { tags: ['missing'] }), 400, 'SYSTEM_TAG_FORBIDDEN');
      assertAssetError(await send(token, 'POST', '/api/assets/00000000-0000-4000-8000-000000000000/tags', { tags: ['x'] }), 404, 'ASSET_NOT_FOUND');
    });

    // ---- listing -------------------------------------------------------------------------------

    test('list filters: include_tags (all), exclude_tags (none), name_contains (case-insensitive)', async () => {
      const token = await newUser();
      await upload(token, { content: unique(), name: 'Red Apple', tags: ['fruit', 'red'] });
      await upload(token, { content: unique(), name: 'green apple', tags: ['fruit', 'green'] });
      await upload(token, { content: unique(), name: 'red car', tags: ['vehicle', 'red'] });
      await upload(token, { content: unique(), name: '100%_done', tags: ['misc'] });
      const sorted = (q: string) => list(token, `${q}&sort=name&order=asc`).then(names);
      assert.deepEqual(await sorted('include_tags=fruit,red'), ['Red Apple']);
      assert.deepEqual(await sorted('include_tags=fruit&include_tags=RED'), ['Red Apple']);
      assert.deepEqual(await sorted('include_tags=red'), ['Red Apple', 'red car']);
      assert.deepEqual(await sorted('exclude_tags=red'), ['100%_done', 'green apple']);
      assert.deepEqual(await sorted('exclude_tags=red,misc'), ['green apple']);
      assert.deepEqual(await sorted('include_tags=fruit&exclude_tags=green'), ['Red Apple']);
      assert.deepEqual(await sorted('name_contains=APPLE'), ['Red Apple', 'green apple']);
      assert.deepEqual(await sorted('name_contains=%25'), ['100%_done'], '% is literal');
      assert.deepEqual(await sorted('name_contains=_'), ['100%_done'], '_ is literal');
      assert.deepEqual(await sorted('include_tags=nothing'), []);
    });

    test('metadata_filter: equality over system metadata merged with user metadata, user keys win, null means absent', async () => {
      const token = await newUser();
      const a = await upload(token, { content: unique(), name: 'a', user_metadata: JSON.stringify({ color: 'red', n: 3, ok: true, list: ['x', 'y'], obj: { b: 1, a: 2 } }) });
      await upload(token, { content: unique(), name: 'b', user_metadata: JSON.stringify({ color: 'blue', n: 4, ok: false, gone: null }) });
      const c = await upload(token, { content: unique(), name: 'c', user_metadata: JSON.stringify({ source: 'camera' }) });
      const systemKey = Object.keys(a.body.metadata).find((k) => k === 'source');
      assert.equal(systemKey, 'source', 'records carry system metadata');
      assert.equal(a.body.metadata.source, 'upload');
      assert.equal(c.body.metadata.source, 'upload', 'system metadata itself is unchanged');
      const f = (filter: unknown) => list(token, `sort=name&order=asc&metadata_filter=${encodeURIComponent(JSON.stringify(filter))}`).then(names);
      assert.deepEqual(await f({ color: 'red' }), ['a']);
      assert.deepEqual(await f({ n: 4 }), ['b']);
      assert.deepEqual(await f({ ok: true }), ['a']);
      assert.deepEqual(await f({ ok: false }), ['b']);
      assert.deepEqual(await f({ color: ['red', 'blue'] }), ['a', 'b'], 'an array is any of its values');
      assert.deepEqual(await f({ list: 'y' }), ['a'], 'array values match by element');
      assert.deepEqual(await f({ obj: { a: 2, b: 1 } }), ['a'], 'objects compare by value');
      assert.deepEqual(await f({ source: 'upload' }), ['a', 'b'], 'system metadata is filterable; user keys override it');
      assert.deepEqual(await f({ source: 'camera' }), ['c']);
      assert.deepEqual(await f({ filename: 'a' }), [], 'system filename of these uploads is file.bin');
      assert.deepEqual(await f({ filename: 'file.bin' }), ['a', 'b', 'c']);
      assert.deepEqual(await f({ gone: null }), ['a', 'b', 'c'], 'null values are not stored: absent everywhere');
      assert.deepEqual(await f({ color: null }), ['c']);
      assert.deepEqual(await f({ color: 'red', n: 4 }), []);
      assertAssetError(await get(token, '/api/assets?metadata_filter=%7Bbad'), 400, 'INVALID_QUERY');
      assertAssetError(await get(token, '/api/assets?metadata_filter=%5B1%5D'), 400, 'INVALID_QUERY');
    });

    test('pagination and sorting: limit 1-500 default 20, offset, total, has_more, sort and order', async () => {
      const token = await newUser();
      const sizes = [5, 1, 3, 2, 4];
      for (const [i, size] of sizes.entries()) {
        await upload(token, { content: Buffer.alloc(size, i + 1), name: `n${i}`, tags: ['input'] });
      }
      const all = await list(token);
      assert.equal(all.total, 5);
      assert.equal(all.has_more, false);
      assert.deepEqual(names(all), ['n4', 'n3', 'n2', 'n1', 'n0'], 'default: created_at desc');
      assert.deepEqual(names(await list(token, 'order=asc')), ['n0', 'n1', 'n2', 'n3', 'n4']);
      assert.deepEqual(names(await list(token, 'sort=size&order=asc')), ['n1', 'n3', 'n2', 'n4', 'n0']);
      assert.deepEqual(names(await list(token, 'sort=size')), ['n0', 'n4', 'n2', 'n3', 'n1']);
      assert.deepEqual(names(await list(token, 'sort=name&order=desc')), ['n4', 'n3', 'n2', 'n1', 'n0']);
      const page = await list(token, 'limit=2&offset=1&order=asc');
      assert.deepEqual(names(page), ['n1', 'n2']);
      assert.equal(page.total, 5);
      assert.equal(page.has_more, true);
      const last = await list(token, 'limit=2&offset=4&order=asc');
      assert.deepEqual(names(last), ['n4']);
      assert.equal(last.has_more, false);
      await send(token, 'PUT', `/api/assets/${all.assets[4].id}`, { name: 'n0-touched' });
      assert.equal(names(await list(token, 'sort=updated_at'))[0], 'n0-touched');
      for (let i = 0; i < 21; i++) await upload(token, { content: unique(), name: `bulk${i}` });
      const defaults = await list(token);
      assert.equal(defaults.assets.length, 20);
      assert.equal(defaults.total, 26);
      assert.equal(defaults.has_more, true);
      for (const bad of ['limit=0', 'limit=501', 'offset=-1', 'sort=bogus', 'order=up', 'limit=x']) {
        assertAssetError(await get(token, `/api/assets?${bad}`), 400, 'INVALID_QUERY');
      }
      assert.equal((await list(token, 'limit=500')).assets.length, 26);
    });

    // ---- tag listing and histogram --------------------------------------------------------------

    test('GET /api/tags: counts, count_desc (ties by name) or name_asc, prefix, limit/offset, total, has_more', async () => {
      const token = await newUser();
      await upload(token, { content: unique(), tags: ['input', 'cat', 'cute'] });
      await upload(token, { content: unique(), tags: ['input', 'cat'] });
      await upload(token, { content: unique(), tags: ['input', 'dog', 'cute'] });
      const all = (await get(token, '/api/tags')).body;
      assert.deepEqual(all, {
        tags: [{ name: 'input', count: 3 }, { name: 'cat', count: 2 }, { name: 'cute', count: 2 }, { name: 'dog', count: 1 }],
        total: 4,
        has_more: false,
      });
      const byName = (await get(token, '/api/tags?order=name_asc')).body;
      assert.deepEqual(byName.tags.map((t: Json) => t.name), ['cat', 'cute', 'dog', 'input']);
      const prefixed = (await get(token, '/api/tags?prefix=%20CU')).body;
      assert.deepEqual(prefixed, { tags: [{ name: 'cute', count: 2 }], total: 1, has_more: false });
      const page = (await get(token, '/api/tags?limit=2&offset=1')).body;
      assert.deepEqual(page, { tags: [{ name: 'cat', count: 2 }, { name: 'cute', count: 2 }], total: 4, has_more: true });
      for (const bad of ['limit=0', 'limit=1001', 'offset=-1', 'order=random']) {
        assertAssetError(await get(token, `/api/tags?${bad}`), 400, 'INVALID_QUERY');
      }
    });

    test('GET /api/assets/tags/refine: a histogram over the assets the list filters select', async () => {
      const token = await newUser();
      await upload(token, { content: unique(), name: 'one', tags: ['input', 'cat', 'cute'], user_metadata: '{"k":1}' });
      await upload(token, { content: unique(), name: 'two', tags: ['input', 'cat'] });
      await upload(token, { content: unique(), name: 'three', tags: ['output', 'dog'] });
      const r = async (q: string) => {
        const a = await get(token, `/api/assets/tags/refine${q}`);
        assert.equal(a.status, 200);
        return a.body.tag_counts;
      };
      assert.deepEqual(await r(''), { input: 2, cat: 2, cute: 1, output: 1, dog: 1 });
      assert.deepEqual(await r('?include_tags=cat'), { input: 2, cat: 2, cute: 1 });
      assert.deepEqual(await r('?exclude_tags=cute'), { input: 1, cat: 1, output: 1, dog: 1 });
      assert.deepEqual(await r('?name_contains=THR'), { output: 1, dog: 1 });
      assert.deepEqual(await r(`?metadata_filter=${encodeURIComponent('{"k":1}')}`), { input: 1, cat: 1, cute: 1 });
      assert.deepEqual(await r('?include_tags=none'), {});
      assertAssetError(await get(token, '/api/assets/tags/refine?metadata_filter=nope'), 400, 'INVALID_QUERY');
    });

    // ---- missing content ---------------------------------------------------------------------------

    test('content gone from the blob store: tagged missing, left out of lists and counts, still counted under missing', async () => {
      const token = await newUser();
      const content = unique('vanishing');
      const lost = await upload(token, { content, name: 'lost', tags: ['input', 'shared'] });
      await upload(token, { content: unique(), name: 'kept', tags: ['input', 'shared'] });
      fs.rmSync(blobPath(lost.body.asset_hash));
      assert.ok((await sweeper().sweepAll()) >= 1);
      const record = (await get(token, `/api/assets/${lost.body.id}`)).body;
      assert.deepEqual(record.tags, ['input', 'missing', 'shared']);
      assert.equal('preview_url' in record, false);
      assert.deepEqual(names(await list(token)), ['kept']);
      assert.equal((await list(token)).total, 1);
      assert.deepEqual(names(await list(token, 'include_tags=missing')), ['lost'], 'asked for by tag, missing records are listed');
      const tags = (await get(token, '/api/tags?order=name_asc')).body.tags;
      assert.deepEqual(tags, [{ name: 'input', count: 1 }, { name: 'missing', count: 1 }, { name: 'shared', count: 1 }]);
      assert.deepEqual((await get(token, '/api/assets/tags/refine')).body.tag_counts, { input: 1, shared: 1, missing: 1 });
      assertAssetError(await get(token, `/api/assets/${lost.body.id}/content`), 404, 'FILE_NOT_FOUND');
      assert.equal((await srv.fetch(`/api/assets/hash/${lost.body.asset_hash}`, { method: 'HEAD', token })).status, 404);
      assertAssetError(await get(token, `/api/view?filename=${lost.body.asset_hash}`), 404, 'FILE_NOT_FOUND');
      assertAssetError(await send(token, 'POST', '/api/assets/from-hash', { hash: lost.body.asset_hash, tags: ['x'] }), 404, 'ASSET_NOT_FOUND');
      // The same bytes again restore the content and clear the tag.
      const back = await upload(token, { content, name: 'lost', tags: ['input'] });
      assert.equal(back.body.id, lost.body.id);
      assert.deepEqual(back.body.tags, ['input', 'shared']);
      assert.deepEqual(names(await list(token, 'sort=name&order=asc')), ['kept', 'lost']);
    });

    test('the sweeper tags vanished content missing and clears the tag when the bytes are back; reads do not look', async () => {
      const token = await newUser();
      const content = unique('checked');
      const a = await upload(token, { content, name: 'checked', tags: ['input'] });
      fs.rmSync(blobPath(a.body.asset_hash));
      assert.deepEqual(names(await list(token)), ['checked'], 'a listing does not look at the blob store');
      assert.ok((await sweeper().check([a.body.asset_hash])) >= 1);
      assert.equal(await sweeper().check([a.body.asset_hash]), 0, 'nothing changes twice');
      assert.equal((await list(token)).total, 0);
      fs.writeFileSync(blobPath(a.body.asset_hash), content);
      assert.equal((await list(token)).total, 0, 'still missing until the sweep sees the bytes');
      assert.ok((await sweeper().sweepAll()) >= 1, 'a full sweep notices the content is back');
      assert.deepEqual(names(await list(token)), ['checked']);
      assert.deepEqual((await get(token, `/api/assets/${a.body.id}`)).body.tags, ['input']);
      fs.rmSync(blobPath(a.body.asset_hash));
      assert.ok((await sweeper().sweepAll()) >= 1, 'a full sweep finds it gone again');
      fs.writeFileSync(blobPath(a.body.asset_hash), content);
      assert.ok((await sweeper().sweepAll()) >= 1, 'and back again');
      assert.deepEqual(names(await list(token)), ['checked']);
      assert.equal(await sweeper().sweepAll(), 0, 'a sweep over unchanged content changes nothing');
    });

    test('reading content that has gone answers 404 FILE_NOT_FOUND before any sweep, and the record leaves listings at once', async () => {
      const token = await newUser();
      const kept = await upload(token, { content: unique('kept'), name: 'kept', tags: ['input'] });
      const gone = await upload(token, { content: unique('gone'), filename: 'gone.txt', name: 'gone', tags: ['input'] });
      fs.rmSync(blobPath(gone.body.asset_hash));
      assertAssetError(await get(token, '/api/view?filename=gone.txt&type=input'), 404, 'FILE_NOT_FOUND');
      assertAssetError(await get(token, `/api/assets/${gone.body.id}/content`), 404, 'FILE_NOT_FOUND');
      assert.deepEqual(names(await list(token)), ['kept']);
      assert.deepEqual((await get(token, `/api/assets/${gone.body.id}`)).body.tags, ['input', 'missing']);
      const res = await srv.fetch(`/api/assets/${kept.body.id}/content`, { token });
      assert.equal(res.status, 200);
      await res.arrayBuffer();
    });

    // ---- HEAD by hash and create from hash ---------------------------------------------------------

    test('HEAD /api/assets/hash/{hash}: 200 known, 404 unknown, 400 INVALID_HASH', async () => {
      const token = await newUser();
      const a = await upload(token, { content: unique('head') });
      const head = (h: string) => srv.fetch(`/api/assets/hash/${encodeURIComponent(h)}`, { method: 'HEAD', token });
      assert.equal((await head(a.body.asset_hash)).status, 200);
      assert.equal((await head(a.body.asset_hash.toUpperCase().replace('BLAKE3', 'blake3'))).status, 200);
      assert.equal((await head(await hashOf(unique('nope')))).status, 404);
      for (const bad of ['blake3:xyz', 'sha256:' + 'a'.repeat(64), 'a'.repeat(64), `blake3:${'a'.repeat(63)}`]) {
        const res = await head(bad);
        assert.equal(res.status, 400, bad);
      }
      const body = await get(token, '/api/view?filename=blake3:zz');
      assertAssetError(body, 400, 'INVALID_HASH');
    });

    test('POST /api/assets/from-hash: 201 new record, 404 unknown content, 400 on empty tags or a bad hash', async () => {
      const token = await newUser();
      const content = unique('fh');
      const a = await upload(token, { content, name: 'orig', tags: ['input'], partType: 'text/plain' });
      const created = await send(token, 'POST', '/api/assets/from-hash', { hash: a.body.asset_hash, tags: ['Copy', 'copy', 'input'], user_metadata: { via: 'hash' } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.notEqual(created.body.id, a.body.id);
      assert.equal(created.body.name, a.body.asset_hash.slice('blake3:'.length), 'the name defaults to the digest');
      assert.deepEqual(created.body.tags, ['copy', 'input']);
      assert.equal(created.body.size, content.length);
      assert.deepEqual(created.body.user_metadata, { via: 'hash' });
      assert.equal(typeof created.body.created_new, 'boolean');
      const named = await send(token, 'POST', '/api/assets/from-hash', { hash: a.body.asset_hash, name: 'named', tags: ['x'] });
      assert.equal(named.status, 201);
      assert.equal(named.body.name, 'named');
      assert.equal((await list(token)).total, 3);
      const unknown = await send(token, 'POST', '/api/assets/from-hash', { hash: await hashOf(unique('none')), tags: ['x'] });
      assertAssetError(unknown, 404, 'ASSET_NOT_FOUND');
      assertAssetError(await send(token, 'POST', '/api/assets/from-hash', { hash: a.body.asset_hash, tags: [] }), 400, 'INVALID_BODY');
      assertAssetError(await send(token, 'POST', '/api/assets/from-hash', { hash: a.body.asset_hash }), 400, 'INVALID_BODY');
      assertAssetError(await send(token, 'POST', '/api/assets/from-hash', { hash: 'md5:abc', tags: ['x'] }), 400, 'INVALID_HASH');
      assertAssetError(await send(token, 'POST', '/api/assets/from-hash', { tags: ['x'] }), 400, 'INVALID_BODY');
    });

    // ---- /api/view and /upload/image -----------------------------------------------------------------

    test('/api/view by filename, subfolder and type, and by blake3 hash, with the recorded mime type', async () => {
      const token = await newUser();
      const content = unique('view');
      const a = await upload(token, { content, filename: 'notes.txt', mime_type: 'image/png', tags: ['input'] });
      let res = await srv.fetch('/api/view?filename=notes.txt&type=input', { token });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'image/png', 'recorded type, not guessed from .txt');
      assert.deepEqual(Buffer.from(await res.arrayBuffer()), content);
      res = await srv.fetch(`/api/view?filename=${a.body.asset_hash}`, { token });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'image/png');
      assert.deepEqual(Buffer.from(await res.arrayBuffer()), content);
      assertAssetError(await get(token, '/api/view?filename=notes.txt&type=output'), 404, 'FILE_NOT_FOUND');
      assertAssetError(await get(token, '/api/view?filename=notes.txt'), 404, 'FILE_NOT_FOUND');
      assertAssetError(await get(token, '/api/view?filename=other.txt&type=input'), 404, 'FILE_NOT_FOUND');
      assertAssetError(await get(token, `/api/view?filename=${await hashOf(unique('x'))}`), 404, 'FILE_NOT_FOUND');
      assertAssetError(await get(token, '/api/view?filename=notes.txt&type=models'), 400, 'INVALID_QUERY');
      assertAssetError(await get(token, '/api/view'), 400, 'INVALID_QUERY');
      assert.equal((await get(token, '/api/view?filename=notes.txt&type=input&subfolder=../..')).status, 400);
    });

    test('/api/view by hash skips temp files', async () => {
      const token = await newUser();
      const content = Buffer.concat([PNG, unique('temp')]);
      const up = await uploadImage(token, { content, filename: 'scratch.png', type: 'temp' });
      assert.equal(up.status, 200);
      assertAssetError(await get(token, `/api/view?filename=${up.body.asset.asset_hash}`), 404, 'FILE_NOT_FOUND');
      const res = await srv.fetch('/api/view?filename=scratch.png&type=temp', { token });
      assert.equal(res.status, 200);
      await res.arrayBuffer();
    });

    test('POST /upload/image registers in place: tags from type and subfolder, ComfyUI renames, overwrite', async () => {
      const token = await newUser();
      const first = await uploadImage(token, { content: PNG, filename: 'a.png', subfolder: 'sub/Deep' });
      assert.equal(first.status, 200, JSON.stringify(first.body));
      assert.equal(first.body.name, 'a.png');
      assert.equal(first.body.subfolder, 'sub/Deep');
      assert.equal(first.body.type, 'input');
      const asset = first.body.asset;
      assert.match(asset.id, UUID);
      assert.equal(asset.name, 'a.png');
      assert.equal(asset.asset_hash, await hashOf(PNG));
      assert.equal(asset.size, PNG.length);
      assert.equal(asset.mime_type, 'image/png');
      assert.deepEqual(asset.tags, ['deep', 'input', 'sub']);
      assert.equal(asset.preview_url, '/api/view?type=input&filename=a.png&subfolder=sub%2FDeep');
      assert.equal((await get(token, `/api/assets/${asset.id}`)).body.id, asset.id, 'the image is an asset of the user');

      const same = await uploadImage(token, { content: PNG, filename: 'a.png', subfolder: 'sub/Deep' });
      assert.equal(same.body.name, 'a.png', 'identical content keeps the name');
      assert.equal(same.body.asset.id, asset.id);

      const other = Buffer.concat([PNG, Buffer.from('different')]);
      const renamed = await uploadImage(token, { content: other, filename: 'a.png', subfolder: 'sub/Deep' });
      assert.equal(renamed.body.name, 'a (1).png');
      assert.notEqual(renamed.body.asset.id, asset.id);
      const third = await uploadImage(token, { content: Buffer.concat([PNG, Buffer.from('third')]), filename: 'a.png', subfolder: 'sub/Deep' });
      assert.equal(third.body.name, 'a (2).png');
      const elsewhere = await uploadImage(token, { content: other, filename: 'a.png' });
      assert.equal(elsewhere.body.name, 'a.png', 'another subfolder is another place');
      assert.deepEqual(elsewhere.body.asset.tags, ['input']);

      const overwritten = await uploadImage(token, { content: other, filename: 'a.png', subfolder: 'sub/Deep', overwrite: 'true' });
      assert.equal(overwritten.body.name, 'a.png');
      assert.equal(overwritten.body.asset.id, asset.id, 'overwrite keeps the record and changes its content');
      assert.equal(overwritten.body.asset.asset_hash, await hashOf(other));
      const res = await srv.fetch('/api/view?filename=a.png&subfolder=sub/Deep&type=input', { token });
      assert.equal(res.headers.get('content-type'), 'image/png');
      assert.deepEqual(Buffer.from(await res.arrayBuffer()), other);

      const output = await uploadImage(token, { content: Buffer.concat([PNG, unique('out')]), filename: 'o.png', type: 'output' });
      assert.equal(output.body.type, 'output');
      assert.deepEqual(output.body.asset.tags, ['output']);
      const byDefaultType = await srv.fetch('/api/view?filename=o.png', { token });
      assert.equal(byDefaultType.status, 200, 'the view type defaults to output');
      await byDefaultType.arrayBuffer();

      const noImage = new FormData();
      noImage.append('type', 'input');
      assertAssetError(await answer(await srv.fetch('/upload/image', { method: 'POST', token, body: noImage })), 400, 'MISSING_FILE');
      assertAssetError(await uploadImage(token, { content: PNG, filename: 'b.png', type: 'models' }), 400, 'INVALID_BODY');
      assertAssetError(await uploadImage(token, { content: PNG, filename: 'b.png', subfolder: '../escape' }), 400, 'INVALID_BODY');
    });

    test('concurrent identical uploads make one record: one 201, the rest 200 (POST /api/assets and /upload/image)', async () => {
      const token = await newUser();
      const content = unique('race');
      const answers = await Promise.all(Array.from({ length: 5 }, () => upload(token, { content, filename: 'x.bin', tags: 'race', name: 'same' })));
      const statuses = answers.map((a) => a.status).sort();
      assert.deepEqual(statuses, [200, 200, 200, 200, 201], JSON.stringify(answers.map((a) => a.body)));
      assert.equal(new Set(answers.map((a) => a.body.id)).size, 1, 'every answer names the same record');
      assert.deepEqual(answers.map((a) => a.body.created_new).sort(), [false, false, false, false, true]);
      assert.equal((await list(token, 'include_tags=race')).total, 1);

      const image = Buffer.concat([PNG, unique('race-image')]);
      const images = await Promise.all(Array.from({ length: 4 }, () => uploadImage(token, { content: image, filename: 'r.png', subfolder: 'racing' })));
      for (const a of images) assert.equal(a.status, 200, JSON.stringify(a.body));
      assert.deepEqual(images.map((a) => a.body.name), ['r.png', 'r.png', 'r.png', 'r.png']);
      assert.equal(new Set(images.map((a) => a.body.asset.id)).size, 1);
      assert.equal((await list(token, 'include_tags=racing')).total, 1);
    });

    test('preview_url of records uploaded under the same file name resolves to each record\'s own content', async () => {
      const token = await newUser();
      const viewed = async (url: string): Promise<string> => {
        const res = await srv.fetch(url, { token });
        assert.equal(res.status, 200, url);
        return Buffer.from(await res.arrayBuffer()).toString();
      };
      const own = async (id: string): Promise<string> => Buffer.from(await (await srv.fetch(`/api/assets/${id}/content`, { token })).arrayBuffer()).toString();
      const first = await upload(token, { content: 'one', filename: 'photo.png', partType: 'image/png', name: 'first' });
      const second = await upload(token, { content: 'two', filename: 'photo.png', partType: 'image/png', name: 'second' });
      assert.equal(first.status, 201);
      assert.equal(second.status, 201);
      assert.equal(first.body.preview_url, '/api/view?type=input&filename=photo.png');
      assert.equal(second.body.preview_url, '/api/view?type=input&filename=photo%20(1).png');
      assert.equal(await viewed(first.body.preview_url), 'one');
      assert.equal(await viewed(second.body.preview_url), 'two');
      assert.equal(second.body.metadata.filename, 'photo.png', 'system metadata keeps the client file name');

      const fromHash = await send(token, 'POST', '/api/assets/from-hash', { hash: first.body.asset_hash, name: 'photo.png', tags: ['input'], mime_type: 'image/png' });
      assert.equal(fromHash.status, 201, JSON.stringify(fromHash.body));
      assert.equal(fromHash.body.preview_url, '/api/view?type=input&filename=photo%20(2).png');

      // /upload/image finds the name taken and numbers past every record there.
      const image = await uploadImage(token, { content: Buffer.from('three'), filename: 'photo.png' });
      assert.equal(image.body.name, 'photo (3).png');
      const overwritten = await uploadImage(token, { content: Buffer.from('four'), filename: 'photo (1).png', overwrite: 'true' });
      assert.equal(overwritten.body.asset.id, second.body.id, 'overwrite changes the record that lives at the name');
      for (const a of [first.body, second.body, fromHash.body, image.body.asset]) {
        const got = (await get(token, `/api/assets/${a.id}`)).body;
        assert.equal(await viewed(got.preview_url), await own(a.id), `${a.name} previews its own bytes`);
      }

      const { userId } = await newUserWithId('outputs');
      const out1 = await srv.server.services.assets.outputs.registerOutput({ userId, jobId: 'task_1', fileName: 'result.png', mimeType: 'image/png', source: Buffer.from('r1') });
      const out2 = await srv.server.services.assets.outputs.registerOutput({ userId, jobId: 'task_2', fileName: 'result.png', mimeType: 'image/png', source: Buffer.from('r2') });
      assert.equal(out1.preview_url, '/api/view?type=output&filename=result.png');
      assert.equal(out2.preview_url, '/api/view?type=output&filename=result%20(1).png');

      // A taken name is numbered after the highest number taken (of the same extension), found
      // in one query: past 10,000 outputs of one name (image-1.png of every task) it still works.
      const register = async (fileName: string, content: string) =>
        (await srv.server.services.assets.outputs.registerOutput({ userId, jobId: 'task_n', fileName, mimeType: 'image/png', source: Buffer.from(content) })).name;
      assert.equal(await register('scene.png', 's0'), 'scene.png');
      assert.equal(await register('scene (7).png', 's7'), 'scene (7).png');
      assert.equal(await register('scene (50).jpg', 's50'), 'scene (50).jpg');
      assert.equal(await register('scene (1) (2).png', 's12'), 'scene (1) (2).png');
      assert.equal(await register('scene.png', 's8'), 'scene (8).png');
      assert.equal(await register('scene.png', 's9'), 'scene (9).png');
      assert.equal(await register('deep (10000).png', 'd10000'), 'deep (10000).png');
      assert.equal(await register('deep.png', 'd0'), 'deep.png');
      assert.equal(await register('deep.png', 'd10001'), 'deep (10001).png');
    });

    test('refused uploads leave no content behind (file name too long, subfolder segment too long)', async () => {
      const token = await newUser();
      const content = unique('orphan');
      assertAssetError(await upload(token, { content, filename: `${'n'.repeat(600)}.png` }), 400, 'INVALID_BODY');
      assert.equal(fs.existsSync(blobPath(await hashOf(content))), false, 'no blob for a refused upload');
      assert.equal((await srv.fetch(`/api/assets/hash/${await hashOf(content)}`, { method: 'HEAD', token })).status, 404);

      const image = Buffer.concat([PNG, unique('orphan-image')]);
      assertAssetError(await uploadImage(token, { content: image, filename: 'a.png', subfolder: `ok/${'s'.repeat(300)}` }), 400, 'INVALID_BODY');
      assert.equal(fs.existsSync(blobPath(await hashOf(image))), false, 'no blob for a refused image');
      assert.equal((await list(token)).total, 0);
    });

    test('/upload/image refuses a subfolder named like a system tag with 400 SYSTEM_TAG_FORBIDDEN, storing nothing', async () => {
      const token = await newUser();
      const image = Buffer.concat([PNG, unique('system-tag')]);
      for (const subfolder of ['missing', 'a/Missing']) {
        const a = await uploadImage(token, { content: image, filename: 'm.png', subfolder });
        assertAssetError(a, 400, 'SYSTEM_TAG_FORBIDDEN');
      }
      assert.equal(fs.existsSync(blobPath(await hashOf(image))), false);
      assert.equal((await list(token, 'include_tags=missing')).total, 0);
      assert.equal((await list(token)).total, 0);
    });

    test('PUT /api/assets/{id} with a blank name answers 400 INVALID_BODY and changes nothing', async () => {
      const token = await newUser();
      const a = await upload(token, { content: unique(), name: 'kept' });
      for (const body of [{ name: '' }, { name: '   ' }, { name: '  ', user_metadata: { k: 1 } }]) {
        const res = await send(token, 'PUT', `/api/assets/${a.body.id}`, body);
        assertAssetError(res, 400, 'INVALID_BODY');
        assert.match(res.body.error.message, /name/);
      }
      assert.equal((await get(token, `/api/assets/${a.body.id}`)).body.name, 'kept');
      const renamed = await send(token, 'PUT', `/api/assets/${a.body.id}`, { name: '  new name ' });
      assert.equal(renamed.status, 200);
      assert.equal(renamed.body.name, 'new name');
    });

    test('registerOutput (for the task engine): tag output, job_id and prompt_id from the task id', async () => {
      const { userId, token } = await newUserWithId('owner');
      const stranger = await newUser('stranger');
      const bytes = Buffer.concat([PNG, unique('output')]);
      const record = await srv.server.services.assets.outputs.registerOutput({ userId, jobId: 'task_abc123', fileName: 'result.png', mimeType: 'image/png', source: bytes });
      assert.deepEqual(record.tags, ['output']);
      assert.equal(record.job_id, 'task_abc123');
      assert.equal(record.prompt_id, 'task_abc123');
      assert.equal(record.mime_type, 'image/png');
      assert.equal(record.asset_hash, await hashOf(bytes));
      assert.equal(record.preview_url, '/api/view?type=output&filename=result.png');
      const listed = await list(token, 'include_tags=output');
      assert.deepEqual(listed.assets.map((x: Json) => x.id), [record.id]);
      assert.equal(listed.assets[0].job_id, 'task_abc123');
      const res = await srv.fetch(record.preview_url!, { token });
      assert.equal(res.status, 200);
      assert.deepEqual(Buffer.from(await res.arrayBuffer()), bytes);
      assertAssetError(await get(stranger, `/api/assets/${record.id}`), 404, 'ASSET_NOT_FOUND');
      assert.equal((await list(stranger, 'include_tags=output')).total, 0);

      // The same bytes under the same name again (another task's output): a numbered name, one content.
      const again = await srv.server.services.assets.outputs.registerOutput({ userId, jobId: 'task_def456', fileName: 'result.png', mimeType: 'image/png', source: bytes });
      assert.equal(again.name, 'result (1).png');
      assert.equal(again.asset_hash, record.asset_hash);
      const fresh = Buffer.concat([PNG, unique('output')]);
      const other = await srv.server.services.assets.outputs.registerOutput({ userId, jobId: 'task_ghi789', fileName: 'result.png', mimeType: 'image/png', source: fresh });
      assert.equal(other.name, 'result (2).png');
      assert.equal((await srv.fetch(`/api/assets/hash/${other.asset_hash}`, { method: 'HEAD', token })).status, 200);
      assert.deepEqual(Buffer.from(await (await srv.fetch(`/api/assets/${other.id}/content`, { token })).arrayBuffer()), fresh);
      assert.equal((await list(token, 'include_tags=output')).total, 3);
    });

    // ---- owners -----------------------------------------------------------------------------------------

    test('two users: another user\'s records answer 404 and are invisible in lists, tags, view and hash lookups', async () => {
      const alice = await newUser('alice');
      const bob = await newUser('bob');
      const content = Buffer.concat([PNG, unique('private')]);
      const a = await upload(alice, { content, filename: 'secret.png', tags: ['input', 'private'], partType: 'image/png' });
      const id = a.body.id;
      assertAssetError(await get(bob, `/api/assets/${id}`), 404, 'ASSET_NOT_FOUND');
      assertAssetError(await get(bob, `/api/assets/${id}/content`), 404, 'ASSET_NOT_FOUND');
      assertAssetError(await send(bob, 'PUT', `/api/assets/${id}`, { name: 'mine' }), 404, 'ASSET_NOT_FOUND');
      assertAssetError(await send(bob, 'DELETE', `/api/assets/${id}`), 404, 'ASSET_NOT_FOUND');
      assertAssetError(await send(bob, 'POST', `/api/assets/${id}/tags`, { tags: ['x'] }), 404, 'ASSET_NOT_FOUND');
      assertAssetError(await send(bob, 'DELETE', `/api/assets/${id}/tags`, { tags: ['private'] }), 404, 'ASSET_NOT_FOUND');
      assert.equal((await list(bob)).total, 0);
      assert.deepEqual((await get(bob, '/api/tags')).body, { tags: [], total: 0, has_more: false });
      assert.deepEqual((await get(bob, '/api/assets/tags/refine')).body, { tag_counts: {} });
      assert.equal((await srv.fetch(`/api/assets/hash/${a.body.asset_hash}`, { method: 'HEAD', token: bob })).status, 404);
      assertAssetError(await get(bob, `/api/view?filename=${a.body.asset_hash}`), 404, 'FILE_NOT_FOUND');
      assertAssetError(await get(bob, '/api/view?filename=secret.png&type=input'), 404, 'FILE_NOT_FOUND');
      assertAssetError(await send(bob, 'POST', '/api/assets/from-hash', { hash: a.body.asset_hash, tags: ['stolen'] }), 404, 'ASSET_NOT_FOUND');
      assertAssetError(await upload(bob, { content: unique(), preview_id: id }), 404, 'ASSET_NOT_FOUND');
      assertAssetError(await upload(bob, { hash: a.body.asset_hash }), 400, 'MISSING_INPUT');

      // Bob uploading the same bytes gets his own record; nothing of Alice's changes or shows.
      const b = await upload(bob, { content, filename: 'secret.png', tags: ['input', 'bob'] });
      assert.equal(b.status, 201);
      assert.equal(b.body.created_new, true);
      assert.notEqual(b.body.id, id);
      assert.deepEqual(b.body.tags, ['bob', 'input']);
      const aliceView = (await get(alice, `/api/assets/${id}`)).body;
      assert.deepEqual(aliceView.tags, ['input', 'private']);
      assert.equal(aliceView.name, 'secret.png');
      assert.deepEqual((await list(alice)).assets.map((x: Json) => x.id), [id]);
      assert.deepEqual((await get(alice, '/api/tags?order=name_asc')).body.tags, [{ name: 'input', count: 1 }, { name: 'private', count: 1 }]);
      const aliceImage = await uploadImage(alice, { content: PNG, filename: 'shared-name.png' });
      const bobImage = await uploadImage(bob, { content: Buffer.concat([PNG, unique('bob')]), filename: 'shared-name.png' });
      assert.equal(aliceImage.body.name, 'shared-name.png');
      assert.equal(bobImage.body.name, 'shared-name.png', 'upload/image names are per user: no rename');
      const res = await srv.fetch('/api/view?filename=shared-name.png&type=input', { token: alice });
      assert.deepEqual(Buffer.from(await res.arrayBuffer()), PNG, 'each user sees their own file under the name');
    });

    test('auth: no token answers 401 in the asset error shape; routes are in /openapi.json', async () => {
      const res = await answer(await srv.fetch('/api/assets'));
      assertAssetError(res, 401, 'MISSING_API_KEY');
      assertAssetError(await answer(await srv.fetch('/upload/image', { method: 'POST' })), 401, 'MISSING_API_KEY');
      const spec = (await (await srv.fetch('/openapi.json')).json()) as { paths: Record<string, Record<string, unknown>> };
      const expected: [string, string][] = [
        ['/api/assets/hash/{hash}', 'head'],
        ['/api/assets', 'get'],
        ['/api/assets', 'post'],
        ['/api/assets/from-hash', 'post'],
        ['/api/assets/{id}', 'get'],
        ['/api/assets/{id}', 'put'],
        ['/api/assets/{id}', 'delete'],
        ['/api/assets/{id}/content', 'get'],
        ['/api/assets/{id}/tags', 'post'],
        ['/api/assets/{id}/tags', 'delete'],
        ['/api/assets/tags/refine', 'get'],
        ['/api/tags', 'get'],
        ['/api/view', 'get'],
        ['/upload/image', 'post'],
      ];
      for (const [p, method] of expected) assert.ok(spec.paths[p]?.[method], `${method.toUpperCase()} ${p} documented`);
    });
  });
}

assetSuite('asset registry (SQLite)', async () => ({ env: {} }));
assetSuite('asset registry (PostgreSQL)', () => postgresEnv());

describe('asset registry: the periodic missing-content sweep', () => {
  it('walks every content in batches of ASSET_SWEEP_BATCH and tags the records of content that has gone', { timeout: 20_000 }, async () => {
    const srv = await startTestServer({ ASSET_SWEEP_INTERVAL_MS: '10', ASSET_SWEEP_BATCH: '2' });
    try {
      const token = await srv.tokenFor('sweep-owner');
      const hashes: string[] = [];
      for (let i = 0; i < 5; i++) {
        const form = uploadForm({ content: unique(`swept-${i}`), name: `n${i}`, tags: ['input'] });
        const a = await answer(await srv.fetch('/api/assets', { method: 'POST', token, body: form }));
        assert.equal(a.status, 201, JSON.stringify(a.body));
        hashes.push(a.body.asset_hash);
      }
      // The first and the last content in hash order: the walk must reach both ends.
      const gone = [...hashes].sort().filter((_, i, all) => i === 0 || i === all.length - 1);
      for (const hash of gone) fs.rmSync(path.join(srv.dataDir, 'blobs', 'assets', hash.slice('blake3:'.length)));
      const sweeper = srv.server.services.assets.sweeper;
      // The walk under way may have passed those contents already; the next one starts after the removal.
      await sweeper.nextRound();
      await sweeper.nextRound();
      const listed = await answer(await srv.fetch('/api/assets?limit=10', { token }));
      assert.equal(listed.body.total, 3);
      assert.equal(listed.body.assets.some((x: Json) => gone.includes(x.asset_hash)), false);
      const missing = await answer(await srv.fetch('/api/assets?include_tags=missing', { token }));
      assert.deepEqual(missing.body.assets.map((x: Json) => x.asset_hash).sort(), gone);
    } finally {
      await srv.close();
    }
  });
});
