import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { dropSchema, postgresEnv, startTestServer, type TestServer } from './support/server.ts';
import { eventually } from './support/wait.ts';
import { ensureConsoleBuilt } from './console/support.ts';

/** Receives callbacks: answers 500 until told to accept; keeps what came. */
async function startReceiver() {
  let accept = false;
  const received: { headers: http.IncomingHttpHeaders; body: string }[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      res.writeHead(accept ? 200 : 500).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, received, accept: () => { accept = true; }, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** The console's APIs on one store: SQLite (env {}) or PostgreSQL (its env, dropped after). */
function consoleApiSuite(store: string, found: { env: Record<string, string> } | { skip: string }): void {
  describe(`console APIs on ${store}`, { skip: 'skip' in found ? found.skip : false }, () => {
    let srv: TestServer;
    let receiver: Awaited<ReturnType<typeof startReceiver>>;
    const admin = (path: string, init: Parameters<TestServer['fetch']>[1] = {}) => srv.fetch(path, { token: srv.adminToken, ...init });

    before(async () => {
      ensureConsoleBuilt();
      receiver = await startReceiver();
      srv = await startTestServer('env' in found ? found.env : {});
    });
    after(async () => {
      await srv?.close();
      await receiver?.close();
      if ('env' in found && found.env.DATABASE_SCHEMA) await dropSchema(found.env.DATABASE_SCHEMA);
    });

    it('a test delivery needs a callback address, then reaches the receiver signed', async () => {
      const unset = await admin('/admin/config/test-delivery', { method: 'POST' });
      assert.equal(unset.status, 400);
      assert.equal(((await unset.json()) as { error: { code: string } }).error.code, 'callback_url_not_set');
      await admin('/admin/config', { method: 'PUT', json: { callback_url: receiver.url, callback_secret: 'shh', callback_retry_delays_ms: [] } });
      const res = await admin('/admin/config/test-delivery', { method: 'POST' });
      assert.equal(res.status, 200);
      const body = (await res.json()) as { delivered: boolean; http_status: number; webhook_id: string };
      assert.deepEqual([body.delivered, body.http_status], [false, 500]);
      const got = receiver.received.find((r) => r.headers['webhook-id'] === body.webhook_id);
      assert.ok(got?.headers['webhook-signature'], 'signed like a delivery');
      assert.equal((JSON.parse(got.body) as { test: boolean }).test, true);
    });

    it('retries a failed delivery now; a delivered one is 409 and an unknown one 404', async () => {
      const user = await srv.tokenFor('carol');
      const submit = await srv.fetch('/v1/images/generations', { method: 'POST', token: user, headers: { 'x-async': '1' }, json: { model: 'seedream-4.0', prompt: 'a kite', size: '64x64' } });
      const { task_id: taskId } = (await submit.json()) as { task_id: string };
      assert.ok(submit.ok && taskId, `submitted: ${submit.status}`);
      type Deliveries = { data: { id: string; state: string; attempts: unknown[] }[] };
      const deliveries = async () => ((await (await admin(`/admin/callbacks?task_id=${taskId}`)).json()) as Deliveries).data;
      const failed = await eventually('every delivery failed', async () => {
        const list = await deliveries();
        return list.length >= 2 && list.every((d) => d.state === 'failed') && list;
      });
      receiver.accept();
      const retried = await admin(`/admin/callbacks/${failed[0].id}/retry`, { method: 'POST' });
      assert.equal(retried.status, 202);
      assert.equal(((await retried.json()) as { state: string }).state, 'pending');
      await eventually('delivered on the retry', async () => {
        const first = (await deliveries()).find((d) => d.id === failed[0].id);
        return first?.state === 'delivered' && first.attempts.length === 2;
      });
      const again = await admin(`/admin/callbacks/${failed[0].id}/retry`, { method: 'POST' });
      assert.equal(again.status, 409);
      assert.equal(((await again.json()) as { error: { code: string } }).error.code, 'delivery_not_retryable');
      assert.equal((await admin('/admin/callbacks/nope/retry', { method: 'POST' })).status, 404);
      assert.equal((await srv.fetch(`/admin/callbacks/${failed[0].id}/retry`, { method: 'POST', token: user })).status, 403);
    });

    it('the overview counts calls and tasks by window, the caller\'s own on /v1', async () => {
      type Overview = { windows: { window: string; requests: number; tasks_by_status: Record<string, number>; latency_ms_avg: number | null }[] };
      // The ledger row is written when the task ends.
      const all = await eventually('the task ended and settled', async () => {
        const overview = (await (await admin('/admin/overview')).json()) as Overview;
        return overview.windows[0].tasks_by_status.success === 1 && overview;
      }, 30_000);
      assert.deepEqual(all.windows.map((w) => w.window), ['1h', '24h', '7d']);
      const hour = all.windows[0];
      assert.ok(hour.requests >= 1, JSON.stringify(hour));
      assert.equal(all.windows[2].tasks_by_status.success, 1);
      assert.ok(hour.latency_ms_avg !== null);
      const other = await srv.tokenFor('dave');
      const own = (await (await srv.fetch('/v1/overview', { token: other })).json()) as Overview;
      assert.deepEqual(own.windows.map((w) => [w.requests, w.tasks_by_status]), [[0, {}], [0, {}], [0, {}]]);
    });

    it('an admin reads any task by id; /console answers the app', async () => {
      const list = (await (await admin('/admin/tasks?limit=1')).json()) as { data: { queue_status: { task_id: string } }[] };
      const id = list.data[0].queue_status.task_id;
      const res = await admin(`/admin/tasks/${id}`);
      assert.equal(res.status, 200);
      assert.equal(((await res.json()) as { user: { _id: string } }).user._id, 'carol');
      assert.equal((await admin('/admin/tasks/none')).status, 404);
      for (const path of ['/console', '/console/', '/console/tasks']) {
        const page = await srv.fetch(path);
        assert.equal(page.status, 200, path);
        assert.match(await page.text(), /<div id="root">/);
      }
      assert.equal((await srv.fetch('/console/../package.json')).status, 404);
      assert.equal((await srv.fetch('/console/assets/none.js')).status, 404);
    });
  });
}

consoleApiSuite('SQLite', { env: {} });
consoleApiSuite('PostgreSQL', await postgresEnv());
