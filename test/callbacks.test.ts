import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createHmac, randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { dropSchema, postgresEnv, startTestServer, tempDataDir, type TestServer } from './support/server.ts';
import { CallbackReceiver, type ReceivedCallback } from './fakes/callback-receiver.ts';
import sharp from 'sharp';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

const TERMINAL = new Set(['success', 'failed', 'rejected', 'cancelled']);
const ISO_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
/** Short retry delays, so retries happen within a test; the timeout leaves room for a loaded machine. */
const FAST = { callback_timeout_ms: 1000, callback_retry_delays_ms: [50, 100, 150] };

async function configure(server: TestServer, settings: Json): Promise<void> {
  const res = await server.fetch('/admin/config', { method: 'PUT', token: server.adminToken, json: { callback_secret: null, ...FAST, ...settings } });
  assert.equal(res.status, 200, await res.text());
}

/** Submits an async image generation; answers its task id. */
async function submit(server: TestServer, token: string): Promise<string> {
  const res = await server.fetch('/v1/images/generations', {
    method: 'POST',
    token,
    headers: { 'x-async': 'true' },
    json: { model: 'seedream-4.0', prompt: `a lighthouse ${randomBytes(4).toString('hex')}`, size: '16x16' },
  });
  const body = (await res.json()) as Json;
  assert.equal(res.status, 200, JSON.stringify(body));
  return body.task_id as string;
}

function taskOf(request: ReceivedCallback): string | undefined {
  return request.json?.queue_status?.task_id;
}

/** Waits until the task's final status was answered 200, then answers every request about the task, in arrival order. */
async function deliveredUpdates(receiver: CallbackReceiver, taskId: string): Promise<ReceivedCallback[]> {
  await receiver.first((r) => taskOf(r) === taskId && TERMINAL.has(r.json.queue_status.status) && r.answer !== 'hang-up' && (r.answer.status ?? 200) === 200);
  return receiver.requests.filter((r) => taskOf(r) === taskId);
}

async function history(server: TestServer, taskId: string): Promise<Json[]> {
  const res = await server.fetch(`/admin/callbacks?task_id=${encodeURIComponent(taskId)}`, { token: server.adminToken });
  const body = (await res.json()) as Json;
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.equal(body.task_id, taskId);
  return body.data as Json[];
}

/**
 * Re-reads the delivery history until `check` holds: for what no receiver sees (refused
 * connections, an outcome being recorded), the admin API is the only witness. Bounded; fails
 * with the last history.
 */
async function historyWhen(server: TestServer, taskId: string, check: (deliveries: Json[]) => boolean, timeoutMs = 10_000): Promise<Json[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const deliveries = await history(server, taskId);
    if (check(deliveries)) return deliveries;
    if (Date.now() > deadline) assert.fail(`history of ${taskId} did not reach the expected state: ${JSON.stringify(deliveries)}`);
    await delay(20);
  }
}

/** The history once every delivery of the task has its outcome recorded (a receiver has the request a moment before). */
function settledHistory(server: TestServer, taskId: string): Promise<Json[]> {
  return historyWhen(server, taskId, (deliveries) => deliveries.length > 0 && deliveries.every((d) => d.state !== 'pending'));
}

/** The statuses of a task's updates must follow submitted → started → process* → end, progress never going back. */
function assertInStatusOrder(updates: ReceivedCallback[]): void {
  const statuses = updates.map((u) => u.json.queue_status.status as string);
  assert.equal(statuses[0], 'submitted', statuses.join(','));
  assert.equal(statuses[1], 'started', statuses.join(','));
  assert.equal(statuses.at(-1), 'success', statuses.join(','));
  for (const middle of statuses.slice(2, -1)) assert.equal(middle, 'process', statuses.join(','));
  const progress = updates.map((u) => u.json.queue_status.progress as number);
  assert.deepEqual(progress, [...progress].sort((a, b) => a - b), `progress went back: ${progress.join(',')}`);
}

function expectedSignature(secretKey: Buffer, request: ReceivedCallback): string {
  const signed = `${request.id}.${request.headers['webhook-timestamp']}.${request.body}`;
  return `v1,${createHmac('sha256', secretKey).update(signed).digest('base64')}`;
}

/** Every status update reaches the receiver once, in order, with the full record; on both stores. */
function orderedDeliverySuite(store: 'SQLite' | 'PostgreSQL', envOf: () => Promise<{ env: Record<string, string>; cleanup(): Promise<void> } | { skip: string }>): void {
  describe(`task callback delivery on ${store}`, () => {
    let server: TestServer;
    let receiver: CallbackReceiver;
    let token: string;
    let cleanup: () => Promise<void> = async () => undefined;
    let skip: string | undefined;

    before(async () => {
      const found = await envOf();
      if ('skip' in found) {
        skip = found.skip;
        return;
      }
      cleanup = found.cleanup;
      // A run long enough for the local engine to report progress (process updates) on the way.
      server = await startTestServer({ LOCAL_ENGINE_MIN_DURATION_MS: '60', ...found.env });
      receiver = await CallbackReceiver.start();
      token = await server.tokenFor('alice');
      await configure(server, { callback_url: receiver.url });
    });

    after(async () => {
      await server?.close();
      await receiver?.close();
      await cleanup();
    });

    it('POSTs every status update of a task, in order, with the full task status record', async (t) => {
      if (skip) return t.skip(skip);
      const before = Math.floor(Date.now() / 1000);
      const taskId = await submit(server, token);
      const updates = await deliveredUpdates(receiver, taskId);
      assertInStatusOrder(updates);
      assert.ok(updates.some((u) => u.json.queue_status.status === 'process'), 'progress updates are delivered too');
      assert.equal(new Set(updates.map((u) => u.id)).size, updates.length, 'each update has its own webhook-id');

      for (const update of updates) {
        assert.equal(update.headers['content-type'], 'application/json');
        assert.match(update.id, /^msg_/);
        const timestamp = Number(update.headers['webhook-timestamp']);
        assert.ok(Number.isInteger(timestamp) && timestamp >= before && timestamp <= Math.ceil(Date.now() / 1000), `webhook-timestamp ${timestamp}`);
        assert.equal(update.headers['webhook-signature'], undefined, 'no signature without a secret');
        assert.equal(update.json.queue_status.task_id, taskId);
        assert.equal(update.json.user._id, 'alice');
        assert.equal(update.json.callback_url, receiver.url);
        assert.equal(update.json.generate_info.workflow._id, 'seedream-4.0');
      }
      // The last update is the record GET /v1/ai/result answers.
      const result = await server.fetch(`/v1/ai/result/${taskId}`, { token });
      assert.deepEqual(updates.at(-1)!.json, await result.json());
      assert.equal(updates.at(-1)!.json.queue_status.data.output.length, 1);

      const deliveries = await settledHistory(server, taskId);
      assert.deepEqual(deliveries.map((d) => d.id), updates.map((u) => u.id));
      assert.deepEqual(deliveries.map((d) => d.task_status), updates.map((u) => u.json.queue_status.status));
      const seqs = deliveries.map((d) => d.seq as number);
      assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b));
      for (const d of deliveries) {
        assert.equal(d.state, 'delivered');
        assert.equal(d.url, receiver.url);
        assert.equal(d.next_attempt_at, null);
        assert.match(d.created_at, ISO_UTC);
        assert.equal(d.attempts.length, 1);
        assert.equal(d.attempts[0].attempt, 1);
        assert.equal(d.attempts[0].http_status, 200);
        assert.equal(d.attempts[0].error, null);
        assert.match(d.attempts[0].at, ISO_UTC);
        assert.ok(Number.isInteger(d.attempts[0].duration_ms) && d.attempts[0].duration_ms >= 0);
      }
    });

    it('keeps each task in order while many tasks are delivered at once', async (t) => {
      if (skip) return t.skip(skip);
      const taskIds = await Promise.all(Array.from({ length: 20 }, () => submit(server, token)));
      for (const taskId of taskIds) assertInStatusOrder(await deliveredUpdates(receiver, taskId));
    });
  });
}

orderedDeliverySuite('SQLite', async () => ({ env: {}, cleanup: async () => undefined }));
orderedDeliverySuite('PostgreSQL', async () => {
  const pg = await postgresEnv();
  if ('skip' in pg) return pg;
  return { env: pg.env, cleanup: () => dropSchema(pg.env.DATABASE_SCHEMA!) };
});

describe('task callback with two instances on one PostgreSQL', () => {
  it('sends every delivery once, each task in order, whichever instance ran the task', async (t) => {
    const pg = await postgresEnv();
    if ('skip' in pg) return t.skip(pg.skip);
    const receiver = await CallbackReceiver.start();
    const env = { LOCAL_ENGINE_MIN_DURATION_MS: '0', ...pg.env };
    const first = await startTestServer(env);
    let second: TestServer | undefined;
    try {
      await configure(first, { callback_url: receiver.url });
      second = await startTestServer({ ...env, ADMIN_TOKEN: first.adminToken });
      const token = await first.tokenFor('erin');
      const taskIds = await Promise.all(Array.from({ length: 40 }, (_, i) => submit(i % 2 ? second! : first, token)));
      for (const taskId of taskIds) assertInStatusOrder(await deliveredUpdates(receiver, taskId));
      const ids = receiver.requests.map((r) => r.id);
      assert.equal(new Set(ids).size, ids.length, 'no delivery was sent twice');
    } finally {
      await second?.close();
      await first.close();
      await receiver.close();
      await dropSchema(pg.env.DATABASE_SCHEMA!);
    }
  });
});

describe('task callback retries', () => {
  let server: TestServer;
  let token: string;
  const receivers: CallbackReceiver[] = [];

  /** A receiver of its own per test, so no test sees another's deliveries. */
  async function receiverFor(settings: Json = {}): Promise<CallbackReceiver> {
    const receiver = await CallbackReceiver.start();
    receivers.push(receiver);
    await configure(server, { callback_url: receiver.url, ...settings });
    return receiver;
  }

  before(async () => {
    server = await startTestServer({ LOCAL_ENGINE_MIN_DURATION_MS: '0' });
    token = await server.tokenFor('bob');
  });

  after(async () => {
    await server?.close();
    for (const receiver of receivers) await receiver.close();
  });

  it('retries an update answered 500 or 201 (only 200 counts), with the same webhook-id, after the configured delays', async () => {
    const receiver = await receiverFor();
    receiver.answerNext({ status: 500 }, { status: 201 });
    const taskId = await submit(server, token);
    const updates = await deliveredUpdates(receiver, taskId);

    const [first, second, third] = updates;
    assert.equal(first!.json.queue_status.status, 'submitted');
    assert.equal(second!.id, first!.id);
    assert.equal(third!.id, first!.id);
    assert.equal(second!.body, first!.body);
    assert.ok(second!.receivedAt - first!.receivedAt >= 45, `first retry after ${second!.receivedAt - first!.receivedAt} ms`);
    assert.ok(third!.receivedAt - second!.receivedAt >= 95, `second retry after ${third!.receivedAt - second!.receivedAt} ms`);
    // The task's next update waits for this one and goes out once.
    assertInStatusOrder(updates.filter((u, i) => i >= 2));

    const [delivery] = await settledHistory(server, taskId);
    assert.equal(delivery!.id, first!.id);
    assert.equal(delivery!.state, 'delivered');
    assert.deepEqual(delivery!.attempts.map((a: Json) => [a.attempt, a.http_status, a.error]), [[1, 500, null], [2, 201, null], [3, 200, null]]);
  });

  it('retries an update whose receiver does not answer within callback_timeout_ms', async () => {
    const receiver = await receiverFor();
    receiver.answerNext({ delayMs: 3000 });
    const taskId = await submit(server, token);
    const updates = await deliveredUpdates(receiver, taskId);
    assert.equal(updates[1]!.id, updates[0]!.id);
    assertInStatusOrder(updates.slice(1));

    const [delivery] = await settledHistory(server, taskId);
    const [timedOut, delivered] = delivery!.attempts as Json[];
    assert.equal(timedOut!.http_status, null);
    assert.match(timedOut!.error, /timed out after 1000 ms/);
    assert.ok(timedOut!.duration_ms >= 990 && timedOut!.duration_ms < 3000, `${timedOut!.duration_ms} ms`);
    assert.equal(delivered!.http_status, 200);
  });

  it('retries an update whose receiver refuses the connection', async () => {
    const receiver = await receiverFor({ callback_retry_delays_ms: [50, 400, 400] });
    await receiver.refuse();
    const taskId = await submit(server, token);
    // The first two tries are refused; the receiver comes back while the third is waiting.
    const refused = await historyWhen(server, taskId, ([first]) => first?.attempts.length === 2);
    await receiver.accept();
    const updates = await deliveredUpdates(receiver, taskId);
    assert.equal(updates[0]!.id, refused[0]!.id);
    assert.equal(updates[0]!.json.queue_status.status, 'submitted');
    assertInStatusOrder(updates);

    const [delivery] = await settledHistory(server, taskId);
    const attempts = delivery!.attempts as Json[];
    assert.ok(attempts.length >= 3 && attempts.length <= 4, JSON.stringify(attempts));
    for (const attempt of attempts.slice(0, -1)) {
      assert.equal(attempt.http_status, null);
      assert.match(attempt.error, /ECONNREFUSED/);
    }
    assert.equal(attempts.at(-1)!.http_status, 200);
  });

  it('gives up after 4 attempts, then delivers the task\'s next updates in order', async () => {
    const receiver = await receiverFor();
    receiver.answerNext({ status: 500 }, { status: 503 }, { status: 500 }, { status: 404 });
    const taskId = await submit(server, token);
    const updates = await deliveredUpdates(receiver, taskId);

    const failedId = updates[0]!.id;
    assert.equal(updates.filter((u) => u.id === failedId).length, 4);
    assert.deepEqual(updates.slice(0, 4).map((u) => u.id), [failedId, failedId, failedId, failedId]);
    assert.equal(updates[4]!.json.queue_status.status, 'started');
    const rest = updates.slice(4);
    assert.equal(new Set(rest.map((u) => u.id)).size, rest.length, 'the later updates went once each');

    const deliveries = await settledHistory(server, taskId);
    assert.equal(deliveries[0]!.state, 'failed');
    assert.equal(deliveries[0]!.next_attempt_at, null);
    assert.deepEqual(deliveries[0]!.attempts.map((a: Json) => [a.attempt, a.http_status]), [[1, 500], [2, 503], [3, 500], [4, 404]]);
    for (const d of deliveries.slice(1)) assert.equal(d.state, 'delivered');
  });

  it('signs each try with HMAC-SHA256 of id.timestamp.body: a whsec_ secret is base64, any other its UTF-8 bytes', async () => {
    const key = randomBytes(24);
    const standard = await receiverFor({ callback_secret: `whsec_${key.toString('base64')}` });
    standard.answerNext({ status: 500 });
    const standardTask = await submit(server, token);
    const signedStandard = await deliveredUpdates(standard, standardTask);
    assert.equal(signedStandard[0]!.id, signedStandard[1]!.id);
    for (const update of signedStandard) assert.equal(update.headers['webhook-signature'], expectedSignature(key, update));

    const plain = await receiverFor({ callback_secret: 'a plain shared secret' });
    const plainTask = await submit(server, token);
    for (const update of await deliveredUpdates(plain, plainTask)) {
      assert.equal(update.headers['webhook-signature'], expectedSignature(Buffer.from('a plain shared secret'), update));
    }
  });

  it('sends nothing for a task submitted while no callback address is set', async () => {
    const res = await server.fetch('/admin/config', { method: 'PUT', token: server.adminToken, json: { callback_url: null } });
    assert.equal(((await res.json()) as Json).callback_url, undefined);
    const silentTask = await submit(server, token);
    const ended = await server.server.services.tasks.waitForEnd(silentTask, 10_000);
    assert.equal(ended?.queue_status.status, 'success');
    assert.deepEqual(await history(server, silentTask), []);

    // A task submitted after the address is set again is delivered, and nothing of the silent one comes before it.
    const receiver = await receiverFor();
    const loudTask = await submit(server, token);
    await deliveredUpdates(receiver, loudTask);
    assert.deepEqual(new Set(receiver.requests.map(taskOf)), new Set([loudTask]));
  });
});

describe('GET /admin/callbacks', () => {
  let server: TestServer;

  before(async () => {
    server = await startTestServer({ LOCAL_ENGINE_MIN_DURATION_MS: '0' });
  });

  after(async () => server?.close());

  it('is for the admin token only', async () => {
    const apiToken = await server.tokenFor('carol');
    const forbidden = await server.fetch('/admin/callbacks?task_id=task_x', { token: apiToken });
    assert.equal(forbidden.status, 403);
    assert.equal(((await forbidden.json()) as Json).error.type, 'permission_error');
    const anonymous = await server.fetch('/admin/callbacks?task_id=task_x');
    assert.equal(anonymous.status, 401);
  });

  it('needs task_id and answers 404 task_not_found for an unknown task', async () => {
    const missing = await server.fetch('/admin/callbacks', { token: server.adminToken });
    assert.equal(missing.status, 400);
    const missingBody = (await missing.json()) as Json;
    assert.equal(missingBody.error.type, 'invalid_request_error');
    assert.equal(missingBody.error.code, 'missing_parameter');
    assert.equal(missingBody.error.param, 'task_id');

    const unknown = await server.fetch('/admin/callbacks?task_id=task_nope', { token: server.adminToken });
    assert.equal(unknown.status, 404);
    const unknownBody = (await unknown.json()) as Json;
    assert.deepEqual(unknownBody.error, { message: 'no task task_nope', type: 'not_found_error', code: 'task_not_found', param: 'task_id' });
  });
});

describe('callback history retention', () => {
  it('forgets ended deliveries after CALLBACK_HISTORY_MS and keeps pending ones', async () => {
    const receiver = await CallbackReceiver.start();
    const server = await startTestServer({ LOCAL_ENGINE_MIN_DURATION_MS: '0', CALLBACK_HISTORY_MS: '300' });
    try {
      // Updates of tasks whose prompt starts with "refused" are answered 500 and wait a minute for their retry.
      receiver.answerWith((r) => (String(r.json.generate_info.input.prompt).startsWith('refused') ? { status: 500 } : undefined));
      await configure(server, { callback_url: receiver.url, callback_retry_delays_ms: [60_000, 60_000, 60_000] });
      const token = await server.tokenFor('dora');
      const delivered = await submit(server, token);
      const res = await server.fetch('/v1/images/generations', { method: 'POST', token, headers: { 'x-async': 'true' }, json: { model: 'seedream-4.0', prompt: 'refused lighthouse', size: '16x16' } });
      const pending = ((await res.json()) as Json).task_id as string;

      await deliveredUpdates(receiver, delivered);
      await historyWhen(server, pending, (deliveries) => deliveries[0]?.attempts.length === 1);
      await historyWhen(server, delivered, (deliveries) => deliveries.length === 0);
      const kept = await history(server, pending);
      assert.equal(kept[0].state, 'pending', JSON.stringify(kept));
    } finally {
      await server.close();
      await receiver.close();
    }
  });
});

describe('task callback across a restart', () => {
  it('sends a delivery that was waiting for its retry when the server stopped, from the next start on the same data', async () => {
    const dataDir = tempDataDir();
    const adminToken = `admin-${randomBytes(8).toString('hex')}`;
    const env = { DATA_DIR: dataDir, ADMIN_TOKEN: adminToken, LOCAL_ENGINE_MIN_DURATION_MS: '0' };
    const receiver = await CallbackReceiver.start();
    try {
      const first = await startTestServer(env);
      let taskId: string;
      try {
        // The retry falls due after this server has stopped.
        await configure(first, { callback_url: receiver.url, callback_retry_delays_ms: [400, 100, 100] });
        receiver.answerNext({ status: 503 });
        taskId = await submit(first, await first.tokenFor('dave'));
        await receiver.nth(1);
        // All of the task's updates are in the outbox before the stop (a run cut short would be resumed, and its updates differ).
        assert.equal((await first.server.services.tasks.waitForEnd(taskId, 10_000))?.queue_status.status, 'success');
      } finally {
        await first.close();
      }
      const stoppedAt = Date.now();

      const second = await startTestServer(env);
      try {
        const updates = await deliveredUpdates(receiver, taskId);
        assert.equal(updates[1]!.id, updates[0]!.id, 'the retry of the waiting update comes first');
        assert.ok(updates[1]!.receivedAt >= stoppedAt);
        assertInStatusOrder(updates.slice(1));
        const [delivery] = await settledHistory(second, taskId);
        assert.deepEqual(delivery!.attempts.map((a: Json) => [a.attempt, a.http_status]), [[1, 503], [2, 200]]);
      } finally {
        await second.close();
      }
    } finally {
      await receiver.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('callback filter (callback_events)', () => {
  let server: TestServer;
  let receiver: CallbackReceiver;
  let token: string;

  before(async () => {
    server = await startTestServer({ LOCAL_ENGINE_MIN_DURATION_MS: '60' });
    receiver = await CallbackReceiver.start();
    token = await server.tokenFor('frank');
    await configure(server, { callback_url: receiver.url });
  });

  after(async () => {
    await server?.close();
    await receiver?.close();
  });

  const generate = (body: Json, route = '/v1/images/generations') =>
    server.fetch(route, { method: 'POST', token, headers: { 'x-async': 'true' }, json: { model: 'seedream-4.0', prompt: 'a harbour', size: '16x16', ...body } });

  async function submitted(res: Response): Promise<string> {
    const body = (await res.json()) as Json;
    assert.equal(res.status, 200, JSON.stringify(body));
    return body.task_id as string;
  }

  async function refused(res: Response): Promise<void> {
    const body = (await res.json()) as Json;
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.equal(body.error.type, 'invalid_request_error');
    assert.equal(body.error.param, 'callback_events', JSON.stringify(body));
  }

  it('delivers only the statuses listed, and keeps the field out of the task input', async () => {
    const taskId = await submitted(await generate({ callback_events: ['success'] }));
    const updates = await deliveredUpdates(receiver, taskId);
    // Deliveries go out in status order: any earlier status let through would have come before success.
    assert.deepEqual(updates.map((u) => u.json.queue_status.status), ['success']);
    assert.equal(updates[0]!.json.generate_info.input.callback_events, undefined);
    assert.deepEqual((await settledHistory(server, taskId)).map((d) => d.task_status), ['success']);
  });

  it('delivers nothing for callback_events []', async () => {
    const taskId = await submitted(await generate({ callback_events: [] }));
    const ended = await server.server.services.tasks.waitForEnd(taskId, 10_000);
    assert.equal(ended?.queue_status.status, 'success');
    // Deliveries are written with the status changes they announce: none now means none ever.
    assert.deepEqual(await history(server, taskId), []);
    assert.equal(receiver.requests.filter((r) => taskOf(r) === taskId).length, 0);
  });

  it('is taken by submits whose body schema allows no other field (speech)', async () => {
    const res = await server.fetch('/v1/speech/generations', {
      method: 'POST', token, headers: { 'x-async': 'true' }, json: { model: 'minimax-speech-02-hd', text: 'hello', voice_id: 'English_Graceful_Lady', callback_events: ['started', 'success'] },
    });
    const taskId = await submitted(res);
    const updates = await deliveredUpdates(receiver, taskId);
    assert.deepEqual(updates.map((u) => u.json.queue_status.status), ['started', 'success']);
  });

  it('answers 400 naming callback_events for anything but a list of statuses (JSON)', async () => {
    for (const bad of [['done'], 'success', [1], ['success', null], {}]) await refused(await generate({ callback_events: bad }));
    await refused(await server.fetch('/openai/v1/images/generations', { method: 'POST', token, json: { model: 'seedream-4.0', prompt: 'a harbour', callback_events: ['finished'] } }));
    await refused(await server.fetch('/v1/video/generations', { method: 'POST', token, json: { model: 'seedance-1.0-pro', content: [{ type: 'text', text: 'waves' }], callback_events: ['nope'] } }));
    await refused(await server.fetch('/v1/mesh3d/generate/text', { method: 'POST', token, json: { model: 'tripo-v3.1', prompt: 'a chair', callback_events: 'all' } }));
  });

  it('takes a repeated multipart field, and answers 400 naming callback_events for a bad one', async () => {
    const png = await sharp({ create: { width: 16, height: 16, channels: 3, background: '#336699' } }).png().toBuffer();
    const form = (events: string[]) => {
      const data = new FormData();
      data.append('model', 'seedream-4.0');
      data.append('prompt', 'make it red');
      for (const event of events) data.append('callback_events', event);
      data.append('image', new Blob([new Uint8Array(png)]), 'in.png');
      return data;
    };
    const edit = (events: string[]) => server.fetch('/v1/images/edits', { method: 'POST', token, headers: { 'x-async': 'true' }, body: form(events) });
    await refused(await edit(['success', 'bogus']));
    const taskId = await submitted(await edit(['submitted', 'success']));
    const updates = await deliveredUpdates(receiver, taskId);
    assert.deepEqual(updates.map((u) => u.json.queue_status.status), ['submitted', 'success']);
  });
});
