import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { CallbackReceiver, type ReceivedCallback } from './fakes/callback-receiver.ts';
import { spawnServer, type ServerProcess } from './support/process.ts';
import { tempDataDir } from './support/server.ts';
import { eventually } from './support/wait.ts';
import { updatesAnnouncedTwice } from './support/task-updates.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const ADMIN = 'crash-admin-token';
const TERMINAL = ['success', 'failed', 'rejected', 'cancelled'];
const ORDER = ['submitted', 'started', 'process', 'success'];

async function api(server: ServerProcess, token: string, path: string, init: RequestInit = {}): Promise<Json> {
  const res = await fetch(server.url + path, { ...init, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...init.headers } });
  const body = await res.json();
  if (!res.ok) throw new Error(`${path}: ${res.status} ${JSON.stringify(body)}`);
  return body;
}


describe('SIGKILL and restart (SQLite)', () => {
  const dataDir = tempDataDir();
  let server: ServerProcess | undefined;
  let receiver: CallbackReceiver | undefined;
  after(async () => {
    await server?.stop('SIGKILL');
    await receiver?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('tasks queued, running and callbacks between retries all finish after a restart', async () => {
    receiver = await CallbackReceiver.start();
    let healthy = false;
    // Until the crash every delivery fails, so each one waits between retries.
    receiver.answerWith(() => ({ status: healthy ? 200 : 500 }));
    const env = {
      DATA_DIR: dataDir,
      ADMIN_TOKEN: ADMIN,
      WORKER_CONCURRENCY: '2',
      TASK_LEASE_MS: '1000',
      LOCAL_ENGINE_MIN_DURATION_MS: '3000',
      GENGATE_CONFIG: JSON.stringify({ callback: { callback_url: receiver.url, callback_timeout_ms: 1000, callback_retry_delays_ms: [2000, 2000, 2000] } }),
    };
    server = await spawnServer(env);
    const { token } = await api(server, ADMIN, '/admin/tokens', { method: 'POST', body: JSON.stringify({ user_id: 'survivor' }) });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const body = await api(server, token, '/v1/images/generations', { method: 'POST', headers: { 'x-async': '1' }, body: JSON.stringify({ prompt: `crash ${i}`, model: 'seedream-4.0', size: '32x32' }) });
      ids.push(body.task_id);
    }
    const statusOf = async (s: ServerProcess, id: string) => (await api(s, token, `/v1/ai/result/${id}`)).queue_status;
    // Two running (progress under way), three queued, and a delivery refused once (between retries).
    await eventually('two tasks running', async () => (await Promise.all(ids.slice(0, 2).map((id) => statusOf(server!, id)))).every((q) => q.status === 'process'), 30_000);
    const before = await Promise.all(ids.map((id) => statusOf(server!, id)));
    assert.deepEqual(before.slice(2).map((q) => q.status), ['submitted', 'submitted', 'submitted'], JSON.stringify(before));
    const refused = await receiver.first((r) => r.answer !== 'hang-up' && r.answer.status === 500);
    const progressAtCrash = new Map(before.map((q) => [q.task_id, q.progress]));

    await server.stop('SIGKILL');
    healthy = true;
    server = await spawnServer(env);

    const finals = new Map<string, Json>();
    await eventually('every task terminal', async () => {
      for (const id of ids) if (!finals.has(id)) {
        const q = await statusOf(server!, id);
        if (TERMINAL.includes(q.status)) finals.set(id, q);
      }
      return finals.size === ids.length;
    }, 60_000);
    for (const [id, q] of finals) {
      assert.equal(q.status, 'success', `${id}: ${JSON.stringify(q)}`);
      assert.ok(q.progress >= progressAtCrash.get(id)!, 'progress never went back');
    }

    // The delivery refused before the crash is sent again after it, under the same webhook id.
    const redelivered = await receiver.first((r) => r.id === refused.id && r.answer !== 'hang-up' && r.answer.status === 200, 20_000);
    assert.deepEqual(redelivered.json, refused.json);

    // Every task's final update is delivered, and each task's accepted deliveries arrive in status order.
    const accepted = (id: string): ReceivedCallback[] => receiver!.requests.filter((r) => r.json.queue_status.task_id === id && r.answer !== 'hang-up' && r.answer.status === 200);
    await eventually('every final callback delivered', () => ids.every((id) => accepted(id).some((r) => r.json.queue_status.status === 'success')), 30_000);
    for (const id of ids) {
      const statuses = accepted(id).map((r) => r.json.queue_status.status as string);
      const ranks = statuses.map((s) => ORDER.indexOf(s));
      assert.deepEqual(ranks, [...ranks].sort((a, b) => a - b), `${id} delivered out of order: ${statuses.join(', ')}`);
      assert.equal(statuses[0], 'submitted', `${id}: ${statuses.join(', ')}`);
      assert.equal(statuses.at(-1), 'success');
    }
  });
});

describe('resuming after SIGKILL without waiting for a lease (SQLite)', () => {
  const dataDir = tempDataDir();
  const servers: ServerProcess[] = [];
  let receiver: CallbackReceiver | undefined;
  after(async () => {
    for (const s of servers) await s.stop('SIGKILL');
    await receiver?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('a second server on the same DATA_DIR is refused', async () => {
    const first = await spawnServer({ DATA_DIR: dataDir, ADMIN_TOKEN: ADMIN });
    servers.push(first);
    await assert.rejects(spawnServer({ DATA_DIR: dataDir, ADMIN_TOKEN: ADMIN }), /DATA_DIR .* is in use by another gengate process/);
    await first.stop('SIGKILL');
  });

  it('running tasks move again within 3 s of the restart, and no progress is announced twice', async () => {
    receiver = await CallbackReceiver.start();
    const env = {
      DATA_DIR: dataDir,
      ADMIN_TOKEN: ADMIN,
      WORKER_CONCURRENCY: '2',
      // The default lease (30 s): a restart must not wait for it.
      LOCAL_ENGINE_MIN_DURATION_MS: '9000',
      GENGATE_CONFIG: JSON.stringify({ callback: { callback_url: receiver.url } }),
    };
    let server = await spawnServer(env);
    servers.push(server);
    const { token } = await api(server, ADMIN, '/admin/tokens', { method: 'POST', body: JSON.stringify({ user_id: 'restarted' }) });
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) ids.push((await api(server, token, '/v1/images/generations', { method: 'POST', headers: { 'x-async': '1' }, body: JSON.stringify({ prompt: `resume ${i}`, model: 'seedream-4.0', size: '32x32' }) })).task_id);
    const recordOf = async (id: string) => (await api(server, token, `/v1/ai/result/${id}`)).queue_status;
    const callbacksOf = (id: string) => receiver!.requests.filter((r) => r.json.queue_status.task_id === id).map((r) => r.json.queue_status);
    // Two progress steps announced (and delivered) each, so a run starting over would repeat one.
    await eventually('two progress steps of both tasks delivered', () => ids.every((id) => callbacksOf(id).some((q) => q.progress >= 30)), 30_000);

    await server.stop('SIGKILL');
    server = await spawnServer(env);
    servers.push(server);
    const ready = Date.now();
    const samples: { id: string; ms: number; progress: number; status: string }[] = [];
    await eventually('both tasks successful', async () => {
      const records = await Promise.all(ids.map(recordOf));
      const ms = Date.now() - ready;
      for (const q of records) samples.push({ id: q.task_id, ms, progress: q.progress, status: q.status });
      return records.every((q) => q.status === 'success');
    }, 60_000);
    await eventually('both success callbacks', () => ids.every((id) => callbacksOf(id).some((q) => q.status === 'success')));
    for (const id of ids) {
      const resumed = callbacksOf(id).find((q) => q.message === 'resumed after an interruption');
      assert.ok(resumed, `${id} was resumed`);
      // Moving again: a progress beyond the point of the crash, or the end.
      const moved = samples.find((s) => s.id === id && (s.progress > resumed.progress || TERMINAL.includes(s.status)));
      assert.ok(moved && moved.ms <= 3000, `${id} moved ${moved?.ms} ms after the restart was ready`);
      assert.deepEqual(updatesAnnouncedTwice(receiver.requests, id), [], `${id}: an update was announced again`);
    }
  });
});
