import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dropSchema, postgresEnv, redisEnv, startTestServer, type TestServer } from './support/server.ts';
import { readTaskEvents, type StreamedTaskEvent } from './support/sse.ts';
import { eventually } from './support/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const IMAGE = { model: 'seedream-4.0', prompt: 'a red kite over green hills', size: '64x64', n: 2 };
const TERMINAL = ['success', 'failed', 'rejected', 'cancelled'];

async function submit(srv: TestServer, token: string, body: object = IMAGE): Promise<string> {
  const res = await srv.fetch('/v1/images/generations', { method: 'POST', token, json: body, headers: { 'x-async': '1' } });
  assert.equal(res.status, 200);
  return ((await res.json()) as Json).task_id;
}

function openStream(base: string, token: string, taskId: string, lastEventId?: string): Promise<Response> {
  return fetch(`${base}/v1/tasks/${taskId}/events`, { headers: { authorization: `Bearer ${token}`, ...(lastEventId !== undefined ? { 'last-event-id': lastEventId } : {}) } });
}

/** The whole stream, to its end. */
async function follow(base: string, token: string, taskId: string, lastEventId?: string): Promise<StreamedTaskEvent[]> {
  return (await readTaskEvents(await openStream(base, token, taskId, lastEventId))).events;
}

const statusOf = (event: StreamedTaskEvent): string => event.data.queue_status.status;

async function endedRecord(srv: TestServer, token: string, taskId: string): Promise<Json> {
  return eventually(`the end of ${taskId}`, async () => {
    const record = (await (await srv.fetch(`/v1/ai/result/${taskId}`, { token })).json()) as Json;
    return TERMINAL.includes(record.queue_status.status) ? record : undefined;
  }, 30_000);
}

/** Ids of a whole stream: each one more than the one before. */
function assertConsecutive(events: StreamedTaskEvent[], from: number): void {
  assert.deepEqual(events.map((e) => e.id), events.map((_, i) => from + i), `ids: ${events.map((e) => `${e.id}:${e.event}`).join(' ')}`);
}

describe('task event streams', () => {
  let srv: TestServer;
  let token: string;

  before(async () => {
    // Progress steps every 200 ms: faster than two progress events of a stream may be.
    srv = await startTestServer({ LOCAL_ENGINE_MIN_DURATION_MS: '1200', TASK_EVENTS_HEARTBEAT_MS: '400' });
    token = await srv.tokenFor('streamer');
  });
  after(() => srv.close());

  it('follows a task: its record, one status per change, spaced progress, a preview, each output, and ends after the terminal status', async () => {
    const taskId = await submit(srv, token);
    const events = await follow(srv.url, token, taskId);
    const record = await endedRecord(srv, token, taskId);

    assert.equal(events[0]!.event, 'status', 'the stream starts with the current record');
    assert.equal(events[0]!.data.queue_status.task_id, taskId);
    const last = events.at(-1)!;
    assert.equal(last.event, 'status');
    assert.equal(statusOf(last), 'success');
    assert.deepEqual(last.data, record, 'the terminal status is the record GET /v1/ai/result answers');
    const ids = events.map((e) => e.id);
    assert.deepEqual(ids, [...ids].sort((a, b) => a - b), 'ids increase');
    assert.equal(new Set(ids).size, ids.length, 'no id twice');

    const statuses = events.filter((e) => e.event === 'status').map(statusOf);
    for (let i = 1; i < statuses.length; i++) assert.notEqual(statuses[i], statuses[i - 1], `one status event per change: ${statuses.join(' ')}`);
    assert.ok(statuses.includes('process'), statuses.join(' '));

    const progress = events.filter((e) => e.event === 'progress');
    assert.ok(progress.length >= 2, `progress events: ${progress.length}`);
    for (let i = 1; i < progress.length; i++) {
      assert.ok(progress[i]!.at - progress[i - 1]!.at >= 490, `progress events ${progress[i]!.at - progress[i - 1]!.at} ms apart`);
      assert.ok(progress[i]!.data.progress >= progress[i - 1]!.data.progress);
    }
    assert.deepEqual(Object.keys(progress[0]!.data), ['progress']);

    const previews = events.filter((e) => e.event === 'preview');
    assert.ok(previews.length >= 1, 'the local engine sends a draft');
    const draft = await fetch(previews[0]!.data.url);
    assert.equal(draft.status, 200);
    assert.equal(draft.headers.get('content-type'), 'image/png');

    const outputs = events.filter((e) => e.event === 'output').map((e) => e.data);
    assert.equal(outputs.length, 2);
    assert.deepEqual(outputs, record.queue_status.output_content, 'each output item as stored');
    assert.ok(events.indexOf(events.find((e) => e.event === 'output')!) < events.length - 1, 'outputs come before the terminal status');
  });

  it('answers a task that has ended with its last status, and ends', async () => {
    const res = await srv.fetch('/v1/images/generations', { method: 'POST', token, json: { ...IMAGE, n: 1 } });
    assert.equal(res.status, 200);
    const taskId = ((await res.json()) as Json).task_id;
    const events = await follow(srv.url, token, taskId);
    assert.equal(events.length, 1);
    assert.equal(events[0]!.event, 'status');
    assert.equal(statusOf(events[0]!), 'success');
    // Its id is the task's last event: resuming from it sends nothing and ends.
    assert.deepEqual(await follow(srv.url, token, taskId, String(events[0]!.id)), []);
  });

  it('resumes with Last-Event-ID: every event after that one, nothing missed or repeated, also once the task has ended', async () => {
    const taskId = await submit(srv, token);
    // Cut off after the first progress event, then resumed from the last event it got.
    const first = (await readTaskEvents(await openStream(srv.url, token, taskId), (events) => events.some((e) => e.event === 'progress'))).events;
    const resumed = await follow(srv.url, token, taskId, String(first.at(-1)!.id));
    await endedRecord(srv, token, taskId);

    const everything = await follow(srv.url, token, taskId, '0');
    assertConsecutive(everything, 1);
    assert.equal(everything[0]!.event, 'status');
    assert.equal(statusOf(everything[0]!), 'submitted');
    assert.equal(statusOf(everything.at(-1)!), 'success');
    assertConsecutive([...first, ...resumed], first[0]!.id);
    assert.deepEqual(resumed.map((e) => [e.id, e.event, e.data]), everything.filter((e) => e.id > first.at(-1)!.id).map((e) => [e.id, e.event, e.data]));

    // After the end, from anywhere in the sequence.
    const middle = everything[Math.floor(everything.length / 2)]!.id;
    const late = await follow(srv.url, token, taskId, String(middle));
    assert.deepEqual(late.map((e) => [e.id, e.event, e.data]), everything.filter((e) => e.id > middle).map((e) => [e.id, e.event, e.data]));
  });

  it('sends a comment line when no event went for the heartbeat interval', async () => {
    const taskId = await submit(srv, token, { ...IMAGE, n: 1 });
    const res = await openStream(srv.url, token, taskId);
    // The task is cancelled once a comment came: the stream then ends with the cancelled status.
    let cancelled = false;
    const { events, comments } = await readTaskEvents(res, (_events, got) => {
      if (got.length > 0 && !cancelled) {
        cancelled = true;
        void srv.fetch(`/v1/ai/cancel/${taskId}`, { token });
      }
      return false;
    });
    assert.ok(comments.includes('keep-alive'), `comments: ${comments.join(',')}`);
    const end = events.at(-1)!;
    assert.equal(statusOf(end), cancelled ? 'cancelled' : 'success');
  });

  it('answers 404 not_found_error for another user\'s task and an unknown one, and 400 for a Last-Event-ID that is not a number', async () => {
    const taskId = await submit(srv, token, { ...IMAGE, n: 1 });
    const other = await srv.tokenFor('someone-else');
    for (const [who, id] of [[other, taskId], [token, 'task_unknown']] as const) {
      const res = await openStream(srv.url, who, id);
      assert.equal(res.status, 404);
      const body = (await res.json()) as Json;
      assert.equal(body.error.type, 'not_found_error');
      assert.equal(body.error.code, 'task_not_found');
    }
    for (const bad of ['abc', '-3', '1.5', '12abc', '999999']) {
      const res = await openStream(srv.url, token, taskId, bad);
      assert.equal(res.status, 400, bad);
      const body = (await res.json()) as Json;
      assert.equal(body.error.code, 'invalid_parameter');
      assert.equal(body.error.param, 'Last-Event-ID');
    }
    await endedRecord(srv, token, taskId);
  });
});

describe('task event streams across two instances on PostgreSQL and Redis', () => {
  let skip: string | undefined;
  let runner: TestServer | undefined;
  let api: TestServer | undefined;
  const cleanups: (() => Promise<void>)[] = [];

  before(async () => {
    const pg = await postgresEnv();
    const redis = await redisEnv();
    if ('skip' in pg || 'skip' in redis) {
      skip = 'skip' in pg ? pg.skip : (redis as { skip: string }).skip;
      process.stdout.write(`# ${skip}\n`);
      return;
    }
    cleanups.push(() => dropSchema(pg.env.DATABASE_SCHEMA!), redis.cleanup);
    const env = { ...pg.env, ...redis.env, LOCAL_ENGINE_MIN_DURATION_MS: '1500' };
    runner = await startTestServer({ ...env, INSTANCE_ID: 'events-runner' });
    // Runs no tasks: every event it streams was written by the other instance.
    api = await startTestServer({ ...env, INSTANCE_ID: 'events-api', ROLE: 'api' });
  });
  after(async () => {
    await Promise.allSettled([api?.close(), runner?.close()]);
    for (const cleanup of cleanups) await cleanup().catch(() => undefined);
  });

  it('streams on one instance a task that runs on the other, and resumes there without a gap', async (t) => {
    if (skip) return t.skip(skip);
    const token = await api!.tokenFor('far-away');
    const taskId = await submit(api!, token);
    const first = (await readTaskEvents(await openStream(api!.url, token, taskId), (events) => events.some((e) => e.event === 'progress'))).events;
    const resumed = await follow(api!.url, token, taskId, String(first.at(-1)!.id));
    const record = await endedRecord(api!, token, taskId);
    assert.equal(record.queue_status.server, 'events-runner');
    assert.equal(statusOf(resumed.at(-1)!), 'success');
    assertConsecutive([...first, ...resumed], first[0]!.id);
    assert.deepEqual(resumed.filter((e) => e.event === 'output').map((e) => e.data), record.queue_status.output_content);

    // Both instances hand out one sequence.
    const fromApi = await follow(api!.url, token, taskId, '0');
    const fromRunner = await follow(runner!.url, token, taskId, '0');
    assertConsecutive(fromApi, 1);
    assert.deepEqual(fromApi.map((e) => [e.id, e.event, e.data]), fromRunner.map((e) => [e.id, e.event, e.data]));
  });
});
