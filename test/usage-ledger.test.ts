/**
 * Task lists and the usage ledger's reading side: filters, newest first, cursor pages, usage
 * grouped over whole and partial days, retention of old rows with the daily sums kept, and the
 * thread that writes the rows of calls.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { startTestServer, type TestServer } from './support/server.ts';
import { WRITER_NICE_STEPS } from '../src/storage/background-writer.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const DAY = 86_400_000;

describe('task lists and the usage ledger', () => {
  let srv: TestServer;
  let token: string;
  const ids: string[] = [];
  before(async () => {
    srv = await startTestServer();
    token = await srv.tokenFor('lou');
    for (let i = 0; i < 5; i++) {
      const res = await srv.fetch('/v1/images/generations', { method: 'POST', token, json: { model: i < 3 ? 'seedream-4.0' : 'gpt-image-1', prompt: `sea ${i}`, size: '32x32' }, headers: { 'x-async': '1' } });
      ids.push(((await res.json()) as Json).task_id);
    }
    for (const id of ids) assert.ok(await srv.server.services.tasks.waitForEnd(id, 20_000));
  });
  after(() => srv.close());

  it('GET /v1/tasks lists the caller\'s tasks newest first in cursor pages, with filters', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await srv.fetch(`/v1/tasks?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { token });
      assert.equal(res.status, 200);
      const page: Json = await res.json();
      assert.ok(page.data.length <= 2);
      seen.push(...page.data.map((r: Json) => r.queue_status.task_id));
      cursor = page.next_cursor;
    } while (cursor);
    assert.deepEqual(seen, [...ids].reverse());
    const filtered: Json = await (await srv.fetch('/v1/tasks?model=gpt-image-1&status=success', { token })).json();
    assert.deepEqual(filtered.data.map((r: Json) => r.queue_status.task_id), [ids[4], ids[3]]);
    assert.deepEqual(((await (await srv.fetch('/v1/tasks', { token: await srv.tokenFor('other') })).json()) as Json).data, []);
    assert.equal((await srv.fetch('/v1/tasks?limit=500', { token })).status, 400);
    assert.equal((await srv.fetch('/v1/tasks?from=yesterday', { token })).status, 400);
  });

  it('writes the rows of calls from a thread below the event loop\'s priority', { skip: process.platform !== 'linux' && 'a thread has a nice value of its own on Linux only' }, async () => {
    // A call's row (here a refused call's) goes to the writer thread; a read of the ledger waits for it.
    assert.equal((await srv.fetch('/v1/images/generations', { method: 'POST', token, json: { model: 'seedream-4.0' } })).status, 400);
    assert.equal((await srv.fetch('/admin/requests?limit=1', { token: srv.adminToken })).status, 200);
    // The nice value is the 19th field of a thread's stat, the 17th after its name.
    const niceOf = (thread: string) => Number(fs.readFileSync(`/proc/self/task/${thread}/stat`, 'utf8').split(') ')[1]!.split(' ')[16]);
    const eventLoop = niceOf(String(process.pid));
    const others = fs.readdirSync('/proc/self/task').filter((thread) => thread !== String(process.pid)).map(niceOf);
    assert.ok(eventLoop < 19, 'the test runs below the lowest priority already');
    assert.deepEqual(others.filter((nice) => nice !== eventLoop), [Math.min(19, eventLoop + WRITER_NICE_STEPS)]);
  });

  it('GET /admin/tasks lists every user\'s tasks, by user on request', async () => {
    const all: Json = await (await srv.fetch('/admin/tasks?user_id=lou&limit=3', { token: srv.adminToken })).json();
    assert.equal(all.data.length, 3);
    assert.equal(all.data[0].user._id, 'lou');
    assert.ok(all.next_cursor);
    assert.equal((await srv.fetch('/admin/tasks', { token })).status, 403);
  });

  it('usage by model over a partial day and whole days agree, and retention keeps the daily sums', async () => {
    const now = Date.now();
    const partial: Json = await (await srv.fetch(`/v1/usage?group_by=model&from=${new Date(now - 3_600_000).toISOString()}`, { token })).json();
    const wide: Json = await (await srv.fetch(`/v1/usage?group_by=model&from=${new Date(now - 3 * DAY).toISOString()}&to=${new Date(now + DAY).toISOString()}`, { token })).json();
    assert.deepEqual(partial.rows.map((r: Json) => [r.key, r.tasks]), [['gpt-image-1', 2], ['seedream-4.0', 3]]);
    assert.deepEqual(wide.rows, partial.rows);
    const byDay: Json = await (await srv.fetch('/admin/usage?group_by=day', { token: srv.adminToken })).json();
    assert.equal(byDay.rows.at(-1).key, new Date(now).toISOString().slice(0, 10));

    // Rows that began before now are past a retention of "now".
    const deleted = await (srv.server.services.usage as unknown as { repo: { deleteBefore(at: number): Promise<number> } }).repo.deleteBefore(Date.now() + 1);
    assert.ok(deleted >= 5);
    assert.deepEqual(((await (await srv.fetch('/admin/requests?user_id=lou', { token: srv.adminToken })).json()) as Json).data, []);
    const kept: Json = await (await srv.fetch(`/v1/usage?group_by=model&from=${new Date(now - 3 * DAY).toISOString()}&to=${new Date(now + DAY).toISOString()}`, { token })).json();
    assert.deepEqual(kept.rows.map((r: Json) => [r.key, r.tasks]), [['gpt-image-1', 2], ['seedream-4.0', 3]], 'whole days come from the daily sums');
  });
});

describe('refused requests in the usage ledger', () => {
  let srv: TestServer;
  let token: string;
  const long = 'm'.repeat(70_000);
  const rows = async (query: string): Promise<Json[]> => ((await (await srv.fetch(`/admin/requests?${query}`, { token: srv.adminToken })).json()) as Json).data;

  before(async () => {
    srv = await startTestServer();
    token = await srv.tokenFor('refused');
    const generate = (body: Json, as = token) => srv.fetch('/v1/images/generations', { method: 'POST', token: as, json: body, headers: { 'x-async': '1' } });
    assert.equal((await generate({ model: '../../etc/passwd', prompt: 'sea' })).status, 404);
    assert.equal((await generate({ model: long, prompt: 'sea' })).status, 404);
    assert.equal((await generate({ model: 'seedream-4.0', prompt: 'sea', n: 0 })).status, 400);
    const malformed = await srv.fetch('/v1/images/generations', { method: 'POST', token, headers: { 'content-type': 'application/json' }, body: '{"model": "seedream-4.0",' });
    assert.equal(malformed.status, 400);
    assert.equal((await generate({ model: 'seedream-4.0', prompt: 'sea' }, 'gg-not-a-token')).status, 401);
  });
  after(() => srv.close());

  it('keeps a refused request\'s model only when it names a catalog model, never the caller\'s text', async () => {
    const refused = await rows('user_id=refused');
    assert.deepEqual(refused.map((r) => [r.status, r.http_status, r.model]).sort(), [
      ['refused', 400, null],
      ['refused', 400, 'seedream-4.0'],
      ['refused', 404, null],
      ['refused', 404, null],
    ]);
    assert.ok(refused.every((r) => r.endpoint === '/v1/images/generations' && r.token_id !== null && r.cost === 0));
  });

  it('ledgers a request refused for its token (401) with no user, token or model', async () => {
    const unknown = (await rows('status=refused')).filter((r) => r.http_status === 401);
    assert.deepEqual(unknown.map((r) => [r.user_id, r.token_id, r.model, r.endpoint]), [['', null, null, '/v1/images/generations']]);
  });

  it('groups usage by model without the caller\'s text', async () => {
    const text = JSON.stringify(await (await srv.fetch('/admin/usage?group_by=model', { token: srv.adminToken })).json());
    assert.ok(!text.includes('etc/passwd') && !text.includes(long.slice(0, 100)), text.slice(0, 300));
    const own: Json = await (await srv.fetch('/v1/usage?group_by=model', { token })).json();
    assert.deepEqual(own.rows.map((r: Json) => [r.key, r.requests, r.errors]), [['', 3, 3], ['seedream-4.0', 1, 1]]);
  });
});
