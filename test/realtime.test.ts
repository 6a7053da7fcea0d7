import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import WebSocket from 'ws';
import { startTestServer, type TestServer } from './support/server.ts';
import { within } from './support/wait.ts';
import { freePort } from './support/free-port.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const IMAGE = { prompt: 'a lighthouse at dusk', model: 'seedream-4.0', size: '32x32' };
const WAIT_MS = 10_000;

interface Closed {
  code: number;
  reason: string;
}

/** A WebSocket client keeping every message it receives, to await them in order or by shape. */
class TestClient {
  /** Messages received and not yet taken: parsed JSON, or the raw text when not JSON. */
  private readonly inbox: Json[] = [];
  private readonly waiters = new Set<() => void>();
  readonly closed: Promise<Closed>;
  pings = 0;

  readonly ws: WebSocket;

  private constructor(ws: WebSocket) {
    this.ws = ws;
    ws.on('message', (data) => {
      const text = String(data);
      let message: Json = text;
      try {
        message = JSON.parse(text);
      } catch {
        // plain text such as `pong`
      }
      this.inbox.push(message);
      this.wake();
    });
    ws.on('ping', () => {
      this.pings++;
      this.wake();
    });
    this.closed = new Promise((resolve) => {
      ws.on('close', (code, reason) => {
        resolve({ code, reason: String(reason) });
        this.wake();
      });
    });
  }

  static async open(url: string, options: WebSocket.ClientOptions = {}): Promise<TestClient> {
    const ws = new WebSocket(url, options);
    const client = new TestClient(ws);
    await within(new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    }), WAIT_MS, `connecting to ${url}`);
    return client;
  }

  private wake(): void {
    for (const waiter of [...this.waiters]) waiter();
  }

  /** Resolves once `check` answers something other than undefined, re-checking on every message. */
  until<T>(check: () => T | undefined, what: string, ms = WAIT_MS): Promise<T> {
    let attempt = () => {};
    const found = new Promise<T>((resolve) => {
      attempt = () => {
        const value = check();
        if (value === undefined) return;
        this.waiters.delete(attempt);
        resolve(value);
      };
      this.waiters.add(attempt);
      attempt();
    });
    return within(found, ms, what).finally(() => this.waiters.delete(attempt));
  }

  /** The next message, whatever it is. */
  next(ms = WAIT_MS): Promise<Json> {
    return this.until(() => (this.inbox.length > 0 ? this.inbox.shift() : undefined), 'the next message', ms);
  }

  /** Takes the first message matching `predicate`, leaving the others in place. */
  take(predicate: (m: Json) => boolean, what: string, ms = WAIT_MS): Promise<Json> {
    return this.until(() => {
      const index = this.inbox.findIndex(predicate);
      return index === -1 ? undefined : this.inbox.splice(index, 1)[0];
    }, what, ms);
  }

  /** Messages received and not taken so far. */
  pending(): Json[] {
    return [...this.inbox];
  }

  send(message: Json): void {
    this.ws.send(typeof message === 'string' ? message : JSON.stringify(message));
  }

  /** Sends `ping` and waits for `pong`: everything the server sent before its answer has arrived. */
  async roundTrip(): Promise<void> {
    this.send('ping');
    await this.take((m) => m === 'pong', 'pong');
  }

  /** Waits for the connection to close (bounded). */
  closeEvent(ms = WAIT_MS): Promise<Closed> {
    return within(this.closed, ms, 'the connection to close');
  }

  close(): void {
    this.ws.close();
  }
}

function wsUrl(srv: TestServer, path = '/realtime', query = 'channel=draw'): string {
  return `${srv.url.replace(/^http/, 'ws')}${path}${query ? `?${query}` : ''}`;
}

/** Opens a session and walks the whole handshake with the given credential. */
async function session(url: string, credential: { bearer: string } | { ticket: string }): Promise<{ client: TestClient; ready: Json }> {
  const client = await TestClient.open(url);
  const challenge = await client.next();
  assert.equal(challenge.type, 'session.challenge');
  client.send({ type: 'session.initialize', protocolVersion: '1.0', client: 'test' });
  assert.deepEqual(await client.next(), { type: 'session.initialized', authRequired: true });
  client.send('bearer' in credential
    ? { type: 'session.authenticate', method: 'bearer', credential: `Bearer ${credential.bearer}` }
    : { type: 'session.authenticate', method: 'ws_ticket', credential: credential.ticket });
  assert.deepEqual(await client.next(), { type: 'session.authenticated' });
  const ready = await client.next();
  assert.equal(ready.type, 'session.ready');
  assert.equal(ready.sessionId, challenge.sessionId);
  return { client, ready };
}

/** Expects session.error with `code` and then the close with the same code. */
async function expectFailure(client: TestClient, code: number): Promise<Json> {
  const error = await client.take((m) => m.type === 'session.error', 'session.error');
  assert.equal(error.code, code);
  assert.equal(typeof error.message, 'string');
  assert.equal((await client.closeEvent()).code, code);
  return error;
}

/** Walks the handshake up to session.initialized. */
async function initialized(url: string): Promise<TestClient> {
  const client = await TestClient.open(url);
  assert.equal((await client.next()).type, 'session.challenge');
  client.send({ type: 'session.initialize', protocolVersion: '1.0', client: 'test' });
  assert.equal((await client.next()).type, 'session.initialized');
  return client;
}

async function submit(srv: TestServer, token: string, headers: Record<string, string> = {}): Promise<string> {
  const res = await srv.fetch('/v1/images/generations', { method: 'POST', token, json: IMAGE, headers: { 'x-async': 'true', ...headers } });
  assert.equal(res.status, 200, await res.clone().text());
  return ((await res.json()) as { task_id: string }).task_id;
}

async function ticketFor(srv: TestServer, token: string): Promise<string> {
  const res = await srv.fetch('/v1/realtime/tickets', { method: 'POST', token });
  assert.equal(res.status, 200);
  const body: Json = await res.json();
  assert.deepEqual(Object.keys(body).sort(), ['expires_in', 'ticket']);
  assert.equal(body.expires_in, 60);
  return body.ticket;
}

const isStatusOf = (taskId: string, status?: string) => (m: Json) =>
  m.type === 'task.status' && m.taskId === taskId && (status === undefined || m.data.queue_status.status === status);

/** Takes the task's pushes up to its end; answers them in order. */
async function pushesUntilEnd(client: TestClient, taskId: string): Promise<Json[]> {
  const pushes: Json[] = [];
  for (;;) {
    const push = await client.take(isStatusOf(taskId), `task.status of ${taskId}`);
    pushes.push(push);
    if (['success', 'failed', 'rejected', 'cancelled'].includes(push.data.queue_status.status)) return pushes;
  }
}

describe('realtime gateway: handshake', () => {
  let srv: TestServer;
  let alice: string;
  before(async () => {
    srv = await startTestServer();
    alice = await srv.tokenFor('alice');
  });
  after(() => srv.close());

  it('challenges, initializes, authenticates with a bearer token and welcomes the channel and client_id', async () => {
    const client = await TestClient.open(wsUrl(srv, '/realtime', 'channel=draw&client_id=abc'));
    const challenge = await client.next();
    assert.deepEqual(Object.keys(challenge).sort(), ['authRequired', 'challenge', 'methods', 'sessionId', 'timeoutMs', 'type']);
    assert.equal(challenge.type, 'session.challenge');
    assert.equal(challenge.authRequired, true);
    assert.deepEqual(challenge.methods, ['bearer', 'ws_ticket']);
    assert.equal(challenge.timeoutMs, 10_000);
    assert.ok(typeof challenge.sessionId === 'string' && challenge.sessionId.length > 8);
    assert.ok(typeof challenge.challenge === 'string' && challenge.challenge.length >= 16);

    client.send({ type: 'session.initialize', protocolVersion: '1.0', client: 'web' });
    assert.deepEqual(await client.next(), { type: 'session.initialized', authRequired: true });
    client.send({ type: 'session.authenticate', method: 'bearer', credential: `Bearer ${alice}` });
    assert.deepEqual(await client.next(), { type: 'session.authenticated' });
    assert.deepEqual(await client.next(), { type: 'session.ready', sessionId: challenge.sessionId, welcome: { channel: 'draw', client_id: 'abc' } });

    client.send('ping');
    assert.equal(await client.next(), 'pong');
    client.close();
  });

  it('gives every connection its own session id and challenge', async () => {
    const [a, b] = await Promise.all([TestClient.open(wsUrl(srv)), TestClient.open(wsUrl(srv))]);
    const [ca, cb] = await Promise.all([a.next(), b.next()]);
    assert.notEqual(ca.sessionId, cb.sessionId);
    assert.notEqual(ca.challenge, cb.challenge);
    a.close();
    b.close();
  });

  it('closes 4400 on a message out of order', async () => {
    const early = await TestClient.open(wsUrl(srv));
    await early.next();
    early.send({ type: 'session.authenticate', method: 'bearer', credential: `Bearer ${alice}` });
    await expectFailure(early, 4400);

    const twice = await initialized(wsUrl(srv));
    twice.send({ type: 'session.initialize', protocolVersion: '1.0', client: 'test' });
    await expectFailure(twice, 4400);

    const command = await initialized(wsUrl(srv));
    command.send({ messageType: 'command', eventName: 'task.subscribe', payload: { taskId: 'task_x' } });
    await expectFailure(command, 4400);

    const { client: ready } = await session(wsUrl(srv), { bearer: alice });
    ready.send({ type: 'session.initialize', protocolVersion: '1.0', client: 'test' });
    await expectFailure(ready, 4400);
  });

  it('closes 4400 on a malformed message and on an unknown protocolVersion', async () => {
    const notJson = await TestClient.open(wsUrl(srv));
    await notJson.next();
    notJson.send('hello');
    await expectFailure(notJson, 4400);

    const noVersion = await TestClient.open(wsUrl(srv));
    await noVersion.next();
    noVersion.send({ type: 'session.initialize', client: 'test' });
    await expectFailure(noVersion, 4400);

    const badVersion = await TestClient.open(wsUrl(srv));
    await badVersion.next();
    badVersion.send({ type: 'session.initialize', protocolVersion: '2.0', client: 'test' });
    const error = await expectFailure(badVersion, 4400);
    assert.match(error.message, /protocolVersion/);

    const noCredential = await initialized(wsUrl(srv));
    noCredential.send({ type: 'session.authenticate', method: 'bearer' });
    await expectFailure(noCredential, 4400);
  });

  it('closes 4401 on an unknown token, a missing Bearer prefix or an unknown method', async () => {
    for (const [method, credential] of [['bearer', 'Bearer gg-unknown'], ['bearer', alice], ['basic', `Bearer ${alice}`]]) {
      const client = await initialized(wsUrl(srv));
      client.send({ type: 'session.authenticate', method, credential });
      await expectFailure(client, 4401);
    }
  });

  it('authenticates the admin token as the user admin', async () => {
    const { client } = await session(wsUrl(srv), { bearer: srv.adminToken });
    const taskId = await submit(srv, srv.adminToken);
    const pushes = await pushesUntilEnd(client, taskId);
    assert.equal(pushes.at(-1).data.user._id, 'admin');
    client.close();
  });

  it('answers 404 to an upgrade on another path of the main port', async () => {
    const ws = new WebSocket(wsUrl(srv, '/elsewhere'));
    const status = await within(new Promise<number>((resolve) => {
      ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.on('error', () => undefined);
    }), WAIT_MS, 'the refusal');
    assert.equal(status, 404);
  });
});

describe('realtime gateway: tickets', () => {
  let srv: TestServer;
  let alice: string;
  before(async () => {
    srv = await startTestServer();
    alice = await srv.tokenFor('alice');
  });
  after(() => srv.close());

  it('needs a bearer token', async () => {
    assert.equal((await srv.fetch('/v1/realtime/tickets', { method: 'POST' })).status, 401);
    assert.equal((await srv.fetch('/v1/realtime/tickets', { method: 'POST', token: 'gg-unknown' })).status, 401);
  });

  it('authenticates once: the same ticket again closes 4401', async () => {
    const ticket = await ticketFor(srv, alice);
    const { client, ready } = await session(wsUrl(srv, '/realtime', 'channel=draw&client_id=t1'), { ticket });
    assert.deepEqual(ready.welcome, { channel: 'draw', client_id: 't1' });

    const again = await initialized(wsUrl(srv));
    again.send({ type: 'session.authenticate', method: 'ws_ticket', credential: ticket });
    await expectFailure(again, 4401);

    // The ticket's session acts for alice.
    const taskId = await submit(srv, alice);
    assert.equal((await pushesUntilEnd(client, taskId)).at(-1).data.user._id, 'alice');
    client.close();
  });

  it('revoking a token ends the sessions opened with it, directly or through a ticket, and no others', async () => {
    const created = await srv.fetch('/admin/tokens', { method: 'POST', token: srv.adminToken, json: { user_id: 'alice', name: 'to revoke' } });
    const { id, token } = (await created.json()) as Json;
    const direct = await session(wsUrl(srv), { bearer: token });
    const viaTicket = await session(wsUrl(srv), { ticket: await ticketFor(srv, token) });
    const other = await session(wsUrl(srv), { bearer: alice });
    assert.equal((await srv.fetch(`/admin/tokens/${id}`, { method: 'DELETE', token: srv.adminToken })).status, 204);
    for (const { client } of [direct, viaTicket]) {
      const error = await expectFailure(client, 4401);
      assert.match(error.message, /revoked/);
    }
    // The session of alice's other token still works.
    other.client.send('ping');
    assert.equal(await other.client.next(), 'pong');
    other.client.close();
  });

  it('lets only one of two sessions presenting the same ticket at once in', async () => {
    const ticket = await ticketFor(srv, alice);
    const clients = await Promise.all([initialized(wsUrl(srv)), initialized(wsUrl(srv))]);
    for (const client of clients) client.send({ type: 'session.authenticate', method: 'ws_ticket', credential: ticket });
    const outcomes = await Promise.all(clients.map((c) => c.next()));
    assert.deepEqual(outcomes.map((m) => m.type).sort(), ['session.authenticated', 'session.error']);
    for (const client of clients) client.close();
  });

  it('closes 4401 on an unknown or expired ticket', async () => {
    const unknown = await initialized(wsUrl(srv));
    unknown.send({ type: 'session.authenticate', method: 'ws_ticket', credential: 'wst-not-issued' });
    await expectFailure(unknown, 4401);

    const ticket = await ticketFor(srv, alice);
    const hash = createHash('sha256').update(ticket).digest('hex');
    await srv.server.services.db.kysely.updateTable('ws_tickets').set({ expires_at: Date.now() - 1 }).where('ticket_hash', '=', hash).execute();
    const expired = await initialized(wsUrl(srv));
    expired.send({ type: 'session.authenticate', method: 'ws_ticket', credential: ticket });
    await expectFailure(expired, 4401);
  });

  it('stores tickets hashed only', async () => {
    const ticket = await ticketFor(srv, alice);
    const rows = await srv.server.services.db.kysely.selectFrom('ws_tickets').selectAll().execute();
    assert.ok(rows.some((r) => r.ticket_hash === createHash('sha256').update(ticket).digest('hex') && r.user_id === 'alice'));
    assert.ok(!JSON.stringify(rows).includes(ticket));
  });
});

describe('realtime gateway: task pushes and commands', () => {
  let srv: TestServer;
  let alice: string;
  let bob: string;
  before(async () => {
    srv = await startTestServer({ LOCAL_ENGINE_MIN_DURATION_MS: '300' });
    alice = await srv.tokenFor('alice');
    bob = await srv.tokenFor('bob');
  });
  after(() => srv.close());

  it('pushes a task from submit to success to the owner on channel draw, progress rising', async () => {
    const { client } = await session(wsUrl(srv), { bearer: alice });
    const taskId = await submit(srv, alice);
    const pushes = await pushesUntilEnd(client, taskId);
    const statuses = pushes.map((p) => p.data.queue_status.status);
    assert.equal(statuses[0], 'submitted');
    assert.equal(statuses.at(-1), 'success');
    assert.ok(statuses.includes('started') && statuses.includes('process'), statuses.join(','));
    const progress = pushes.map((p) => p.data.queue_status.progress);
    for (let i = 1; i < progress.length; i++) assert.ok(progress[i] >= progress[i - 1], `progress ${progress.join(',')}`);
    assert.ok(new Set(progress).size >= 4, `progress ${progress.join(',')}`);
    assert.equal(progress.at(-1), 100);
    const last = pushes.at(-1);
    assert.deepEqual(Object.keys(last).sort(), ['data', 'taskId', 'type']);
    assert.equal(last.data.queue_status.task_id, taskId);
    assert.equal(last.data.user._id, 'alice');
    assert.equal(last.data.queue_status.data.output.length, 1);
    // The last push is the record the result endpoint answers.
    assert.deepEqual(await (await srv.fetch(`/v1/ai/result/${taskId}`, { token: alice })).json(), last.data);

    // An update older than one already pushed (as a late delivery between instances would be) is dropped.
    await srv.server.services.bus.publish('task.status', { taskId, ownerId: 'alice', clientId: null, status: 'process', version: 2, record: pushes[2].data, events: [] });
    await client.roundTrip();
    assert.deepEqual(client.pending().filter(isStatusOf(taskId)), []);
    client.close();
  });

  it('sends a task submitted with X-Client-Id only to that client, and nothing to other channels or users', async () => {
    const { client: mine } = await session(wsUrl(srv, '/realtime', 'channel=draw&client_id=c1'), { bearer: alice });
    const { client: otherClient } = await session(wsUrl(srv, '/realtime', 'channel=draw&client_id=c2'), { bearer: alice });
    const { client: otherChannel } = await session(wsUrl(srv, '/realtime', 'channel=login&client_id=c1'), { bearer: alice });
    const { client: otherUser } = await session(wsUrl(srv, '/realtime', 'channel=draw&client_id=c1'), { bearer: bob });

    const targeted = await submit(srv, alice, { 'X-Client-Id': 'c1' });
    await pushesUntilEnd(mine, targeted);
    // Without a client id every draw session of the owner gets it.
    const broadcast = await submit(srv, alice);
    await pushesUntilEnd(mine, broadcast);
    await pushesUntilEnd(otherClient, broadcast);

    for (const client of [otherClient, otherChannel, otherUser]) {
      await client.roundTrip();
      assert.deepEqual(client.pending().filter(isStatusOf(targeted)), []);
    }
    for (const client of [otherChannel, otherUser]) assert.deepEqual(client.pending().filter(isStatusOf(broadcast)), []);
    for (const client of [mine, otherClient, otherChannel, otherUser]) client.close();
  });

  it('task.subscribe: accepted, the current record at once, then the task on any channel; not another user\'s', async () => {
    const { client } = await session(wsUrl(srv, '/realtime', 'channel=login'), { bearer: alice });
    const taskId = await submit(srv, alice);
    client.send({ messageType: 'command', eventName: 'task.subscribe', payload: { taskId } });
    assert.deepEqual(await client.next(), { type: 'command.accepted', eventName: 'task.subscribe' });
    const first = await client.next();
    assert.ok(isStatusOf(taskId)(first), JSON.stringify(first));
    const pushes = [first, ...(['success', 'failed', 'cancelled'].includes(first.data.queue_status.status) ? [] : await pushesUntilEnd(client, taskId))];
    assert.equal(pushes.at(-1).data.queue_status.status, 'success');
    const seen = pushes.map((p) => `${p.data.queue_status.status}/${p.data.queue_status.progress}`);
    assert.equal(new Set(seen).size, seen.length, `no repeats: ${seen.join(',')}`);

    // An ended task: its record once, and the subscription ends with it.
    client.send({ messageType: 'command', eventName: 'task.subscribe', payload: { taskId } });
    assert.equal((await client.next()).type, 'command.accepted');
    assert.equal((await client.next()).data.queue_status.status, 'success');

    const { client: intruder } = await session(wsUrl(srv), { bearer: bob });
    intruder.send({ messageType: 'command', eventName: 'task.subscribe', payload: { taskId } });
    const rejected = await intruder.next();
    assert.equal(rejected.type, 'command.rejected');
    assert.equal(rejected.eventName, 'task.subscribe');
    assert.equal(rejected.reason, 'task_not_found');
    client.close();
    intruder.close();
  });

  it('a draw session that also subscribes gets each update once', async () => {
    const { client } = await session(wsUrl(srv), { bearer: alice });
    const taskId = await submit(srv, alice);
    client.send({ messageType: 'command', eventName: 'task.subscribe', payload: { taskId } });
    await client.take((m) => m.type === 'command.accepted', 'command.accepted');
    const pushes = await pushesUntilEnd(client, taskId);
    const seen = pushes.map((p) => `${p.data.queue_status.status}/${p.data.queue_status.progress}`);
    // The record sent on subscribing may repeat the latest push; updates themselves come once.
    const repeats = seen.length - new Set(seen).size;
    assert.ok(repeats <= 1, `updates repeated: ${seen.join(',')}`);
    for (let i = 1; i < pushes.length; i++) {
      assert.ok(pushes[i].data.queue_status.progress >= pushes[i - 1].data.queue_status.progress, `never backwards: ${seen.join(',')}`);
    }
    client.close();
  });

  it('agent.approval of nothing waiting for one is rejected and reaches no run', async () => {
    const published: Json[] = [];
    const unsubscribe = srv.server.services.bus.subscribe('agent.approval', (m) => published.push(m));
    const { client } = await session(wsUrl(srv), { bearer: alice });
    const ownTask = await submit(srv, alice);
    const bobsTask = await submit(srv, bob);
    const cases: [Json, string][] = [
      [{ taskId: 'approval_unknown', approved: true }, 'task_not_found'],
      [{ taskId: bobsTask, approved: true }, 'task_not_found'],
      // A generation task of the user's own never waits for an approval.
      [{ taskId: ownTask, approved: true }, 'not_awaiting_approval'],
      [{ taskId: ownTask, approved: 'yes' }, 'invalid_payload'],
    ];
    for (const [payload, reason] of cases) {
      client.send({ messageType: 'command', eventName: 'agent.approval', payload });
      const rejected = await client.take((m) => m.type?.startsWith('command.'), 'the command\'s answer');
      assert.deepEqual([rejected.type, rejected.eventName, rejected.reason], ['command.rejected', 'agent.approval', reason], JSON.stringify(payload));
    }
    assert.deepEqual(published, []);
    unsubscribe();
    client.close();
  });

  it('task.subscribe and task.cancel of another user\'s or an unknown task are rejected', async () => {
    const { client } = await session(wsUrl(srv, '/realtime', 'channel=login'), { bearer: alice });
    const bobsTask = await submit(srv, bob);
    for (const eventName of ['task.subscribe', 'task.cancel']) {
      for (const taskId of [bobsTask, 'task_unknown']) {
        client.send({ messageType: 'command', eventName, payload: { taskId } });
        const rejected = await client.take((m) => m.type?.startsWith('command.'), 'the command\'s answer');
        assert.deepEqual([rejected.type, rejected.eventName, rejected.reason], ['command.rejected', eventName, 'task_not_found'], taskId);
      }
    }
    // Bob's task went on unharmed.
    const record: Json = await (await srv.fetch(`/v1/ai/result/${bobsTask}`, { token: bob })).json();
    assert.notEqual(record.queue_status.status, 'cancelled');
    client.close();
  });

  it('rejects unknown events, bad payloads and non-JSON without closing', async () => {
    const { client } = await session(wsUrl(srv), { bearer: alice });
    const cases: [Json, string | null, string][] = [
      [{ messageType: 'command', eventName: 'task.launch', payload: {} }, 'task.launch', 'unknown_event'],
      [{ messageType: 'command', eventName: 'task.subscribe', payload: { taskId: 7 } }, 'task.subscribe', 'invalid_payload'],
      [{ messageType: 'command', eventName: 'task.cancel', payload: {} }, 'task.cancel', 'invalid_payload'],
      [{ messageType: 'command', eventName: 'task.cancel' }, 'task.cancel', 'invalid_command'],
      [{ eventName: 'task.cancel', payload: {} }, 'task.cancel', 'invalid_command'],
      ['not json', null, 'invalid_json'],
      [{ messageType: 'command', eventName: 'task.cancel', payload: { taskId: 'task_missing' } }, 'task.cancel', 'task_not_found'],
    ];
    for (const [message, eventName, reason] of cases) {
      client.send(message);
      // Status pushes of the user's tasks from earlier tests may come in between.
      const answer = await client.take((m) => m.type !== 'task.status', 'the answer to the command');
      assert.equal(answer.type, 'command.rejected', JSON.stringify(message));
      assert.equal(answer.eventName, eventName);
      assert.equal(answer.reason, reason, JSON.stringify(answer));
      assert.equal(typeof answer.message, 'string');
    }
    await client.roundTrip();
    client.close();
  });
});

describe('realtime gateway: long tasks and its own port', () => {
  let srv: TestServer;
  let alice: string;
  let realtimePort: number;
  before(async () => {
    realtimePort = await freePort();
    srv = await startTestServer({ LOCAL_ENGINE_MIN_DURATION_MS: '3000', REALTIME_PORT: String(realtimePort) });
    alice = await srv.tokenFor('alice');
  });
  after(() => srv.close());

  it('task.cancel: a running task is accepted and ends cancelled; cancelling again is rejected', async () => {
    const { client } = await session(wsUrl(srv), { bearer: alice });
    const taskId = await submit(srv, alice);
    await client.take(isStatusOf(taskId, 'process'), 'the task running');
    client.send({ messageType: 'command', eventName: 'task.cancel', payload: { taskId } });
    await client.take((m) => m.type === 'command.accepted' && m.eventName === 'task.cancel', 'command.accepted');
    const cancelled = await client.take(isStatusOf(taskId, 'cancelled'), 'the cancelled record');
    assert.equal(cancelled.data.queue_status.task_id, taskId);
    const record: Json = await (await srv.fetch(`/v1/ai/result/${taskId}`, { token: alice })).json();
    assert.equal(record.queue_status.status, 'cancelled');

    client.send({ messageType: 'command', eventName: 'task.cancel', payload: { taskId } });
    const rejected = await client.take((m) => m.type === 'command.rejected', 'command.rejected');
    assert.equal(rejected.reason, 'task_already_finished');
    client.close();
  });

  it('task.subscribe to a running task: the record now, then its later updates', async () => {
    const taskId = await submit(srv, alice);
    const { client } = await session(wsUrl(srv, '/realtime', 'channel=other'), { bearer: alice });
    client.send({ messageType: 'command', eventName: 'task.subscribe', payload: { taskId } });
    assert.equal((await client.next()).type, 'command.accepted');
    const now = await client.next();
    assert.ok(isStatusOf(taskId)(now));
    assert.notEqual(now.data.queue_status.status, 'success');
    const later = await pushesUntilEnd(client, taskId);
    assert.equal(later.at(-1).data.queue_status.status, 'success');
    assert.ok(later.at(-1).data.queue_status.progress > now.data.queue_status.progress);
    client.close();
  });

  it('serves the gateway on REALTIME_PORT at any path; plain HTTP there gets 426', async () => {
    const { client, ready } = await session(`ws://127.0.0.1:${realtimePort}/any/path/at/all?channel=draw&client_id=p1`, { bearer: alice });
    assert.deepEqual(ready.welcome, { channel: 'draw', client_id: 'p1' });
    client.send('ping');
    assert.equal(await client.take((m) => m === 'pong', 'pong'), 'pong');
    const bare = await session(`ws://127.0.0.1:${realtimePort}`, { bearer: alice });
    assert.deepEqual(bare.ready.welcome, { channel: 'draw', client_id: null });
    assert.equal((await fetch(`http://127.0.0.1:${realtimePort}/`)).status, 426);
    client.close();
    bare.client.close();
  });
});

describe('realtime gateway: timeouts, heartbeats and shutdown', () => {
  let srv: TestServer;
  let alice: string;
  before(async () => {
    srv = await startTestServer({ REALTIME_HANDSHAKE_TIMEOUT_MS: '400', REALTIME_HEARTBEAT_MS: '100' });
    alice = await srv.tokenFor('alice');
  });
  after(() => srv.close());

  it('closes 4408 when the handshake does not finish within timeoutMs', async () => {
    const silent = await TestClient.open(wsUrl(srv));
    assert.equal((await silent.next()).timeoutMs, 400);
    await expectFailure(silent, 4408);

    // The limit covers the whole handshake, not each step.
    const halfway = await initialized(wsUrl(srv));
    await expectFailure(halfway, 4408);
  });

  it('keeps a client that answers pings and drops one that does not', async () => {
    const { client: answering } = await session(wsUrl(srv), { bearer: alice });
    const mute = await TestClient.open(wsUrl(srv), { autoPong: false });
    const closed = await mute.closeEvent(5_000);
    assert.equal(closed.code, 1006, 'terminated without a close frame');
    await answering.until(() => (answering.pings >= 3 ? true : undefined), 'three heartbeats');
    assert.equal(answering.ws.readyState, WebSocket.OPEN);
    answering.close();
  });

  it('closes open sessions with 1001 when the server shuts down', async () => {
    const own = await startTestServer();
    const token = await own.tokenFor('alice');
    const { client } = await session(wsUrl(own), { bearer: token });
    const handshaking = await TestClient.open(wsUrl(own));
    await own.close();
    assert.equal((await client.closeEvent()).code, 1001);
    assert.equal((await handshaking.closeEvent()).code, 1001);
  });
});

describe('realtime gateway without required authentication', () => {
  let srv: TestServer;
  let alice: string;
  before(async () => {
    srv = await startTestServer({ REALTIME_AUTH_REQUIRED: 'false' });
    alice = await srv.tokenFor('alice');
  });
  after(() => srv.close());

  it('is ready right after session.initialized, rejects commands and pushes no user data', async () => {
    const client = await TestClient.open(wsUrl(srv, '/realtime', 'channel=draw&client_id=x'));
    const challenge = await client.next();
    assert.equal(challenge.authRequired, false);
    client.send({ type: 'session.initialize', protocolVersion: '1.0', client: 'kiosk' });
    assert.deepEqual(await client.next(), { type: 'session.initialized', authRequired: false });
    assert.deepEqual(await client.next(), { type: 'session.ready', sessionId: challenge.sessionId, welcome: { channel: 'draw', client_id: 'x' } });

    const taskId = await submit(srv, alice, { 'X-Client-Id': 'x' });
    client.send({ messageType: 'command', eventName: 'task.subscribe', payload: { taskId } });
    const rejected = await client.next();
    assert.equal(rejected.type, 'command.rejected');
    assert.equal(rejected.reason, 'unauthenticated');
    assert.equal((await srv.server.services.tasks.waitForEnd(taskId, WAIT_MS))?.queue_status.status, 'success');
    await client.roundTrip();
    assert.deepEqual(client.pending().filter((m) => m.type === 'task.status'), []);
    client.close();
  });
});
