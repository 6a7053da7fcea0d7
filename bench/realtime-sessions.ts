// Concurrent authenticated realtime sessions (default 10000, over 100 users), then async tasks
// on the local engine: how fast sessions open, what they cost in server memory, and how long a
// task's status change takes to reach every session of its owner (p50/p99).
import fs from 'node:fs';
import WebSocket from 'ws';
import { createToken, rssMb, startBenchServer } from './support.ts';

const SESSIONS = Number(process.env.BENCH_REALTIME_SESSIONS ?? 10_000);
const USERS = Number(process.env.BENCH_REALTIME_USERS ?? 100);
const TASKS = Number(process.env.BENCH_REALTIME_TASKS ?? 200);
/** Tasks submitted per second. */
const TASK_RATE = Number(process.env.BENCH_REALTIME_TASK_RATE ?? 20);
/** Handshakes in flight at once while opening the sessions. */
const CONNECT_CONCURRENCY = 200;
const BODY = JSON.stringify({ prompt: 'bench', model: 'seedream-4.0', size: '16x16' });

interface Push {
  taskId: string;
  data: { queue_status: { status: string; request_id: string; data: { started_at?: number; finished_at?: number } } };
}

/** Latencies in ms, per kind of measurement. */
const latencies = { submitToFirstPush: [] as number[], startedToPush: [] as number[], successToPush: [] as number[] };
/** When each submit was sent, by the request id the task carries. */
const submittedAt = new Map<string, number>();
let successPushes = 0;
let onSuccessPush = () => {};

function onPush(push: Push, receivedAt: number): void {
  const status = push.data.queue_status;
  if (status.status === 'submitted') {
    const sentAt = submittedAt.get(status.request_id);
    if (sentAt !== undefined) latencies.submitToFirstPush.push(receivedAt - sentAt);
  } else if (status.status === 'started' && status.data.started_at !== undefined) {
    latencies.startedToPush.push(receivedAt - status.data.started_at);
  } else if (status.status === 'success' && status.data.finished_at !== undefined) {
    latencies.successToPush.push(receivedAt - status.data.finished_at);
    successPushes++;
    onSuccessPush();
  }
}

/** Opens a session and walks the handshake; resolves once it is ready. */
function openSession(url: string, token: string): Promise<WebSocket> {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  return new Promise((resolve, reject) => {
    let ready = false;
    ws.on('message', (raw) => {
      const receivedAt = Date.now();
      const message = JSON.parse(String(raw)) as { type: string } & Push;
      switch (message.type) {
        case 'task.status':
          onPush(message, receivedAt);
          break;
        case 'session.challenge':
          ws.send(JSON.stringify({ type: 'session.initialize', protocolVersion: '1.0', client: 'bench' }));
          break;
        case 'session.initialized':
          ws.send(JSON.stringify({ type: 'session.authenticate', method: 'bearer', credential: `Bearer ${token}` }));
          break;
        case 'session.ready':
          ready = true;
          resolve(ws);
          break;
        case 'session.error':
          reject(new Error(`handshake failed: ${String(raw)}`));
          break;
      }
    });
    ws.on('error', (err) => (ready ? undefined : reject(err)));
    ws.on('close', (code) => (ready ? undefined : reject(new Error(`closed during the handshake (${code})`))));
  });
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

const summary = (values: number[]) => `p50 ${percentile(values, 50)} ms, p99 ${percentile(values, 99)} ms, max ${Math.max(...values)} ms (${values.length} pushes)`;

// This process and the server (which inherits the limit) each hold one descriptor per session.
const openFilesLimit = Number(/Max open files\s+(\d+)/.exec(fs.readFileSync('/proc/self/limits', 'utf8'))?.[1] ?? Infinity);
if (SESSIONS + 512 > openFilesLimit) {
  throw new Error(`${SESSIONS} sessions need more open files than the limit of ${openFilesLimit}: raise ulimit -n or lower BENCH_REALTIME_SESSIONS`);
}

const server = await startBenchServer({ LOCAL_ENGINE_MIN_DURATION_MS: '0' });
const sockets: WebSocket[] = [];
try {
  const tokens = await Promise.all(Array.from({ length: USERS }, (_, i) => createToken(server, `bench-user-${i}`)));
  const wsUrl = `${server.url.replace(/^http/, 'ws')}/realtime?channel=draw`;
  const rssBefore = rssMb(server.pid);

  const connectStarted = Date.now();
  let next = 0;
  await Promise.all(Array.from({ length: CONNECT_CONCURRENCY }, async () => {
    while (next < SESSIONS) {
      const i = next++;
      sockets.push(await openSession(wsUrl, tokens[i % USERS]!));
    }
  }));
  const connectMs = Date.now() - connectStarted;
  const rssSessions = rssMb(server.pid);

  // Every session of the task's owner gets its success push.
  const sessionsOfUser = (user: number) => Math.floor(SESSIONS / USERS) + (user < SESSIONS % USERS ? 1 : 0);
  let expectedSuccessPushes = 0;
  for (let i = 0; i < TASKS; i++) expectedSuccessPushes += sessionsOfUser(i % USERS);
  const allDelivered = new Promise<void>((resolve, reject) => {
    const timeout = setTimeout(() => reject(new Error(`only ${successPushes} of ${expectedSuccessPushes} success pushes arrived`)), 120_000);
    onSuccessPush = () => {
      if (successPushes < expectedSuccessPushes) return;
      clearTimeout(timeout);
      resolve();
    };
  });

  const tasksStarted = Date.now();
  const submits: Promise<void>[] = [];
  for (let i = 0; i < TASKS; i++) {
    const due = tasksStarted + (i * 1000) / TASK_RATE;
    if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
    const requestId = `bench-${i}`;
    submittedAt.set(requestId, Date.now());
    submits.push(fetch(`${server.url}/v1/images/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens[i % USERS]}`, 'content-type': 'application/json', 'x-async': '1', 'x-request-id': requestId },
      body: BODY,
    }).then(async (res) => {
      if (res.status !== 200) throw new Error(`submit answered ${res.status}: ${await res.text()}`);
    }));
  }
  await Promise.all(submits);
  await allDelivered;
  const tasksMs = Date.now() - tasksStarted;

  process.stdout.write(
    `realtime-sessions: ${SESSIONS} authenticated sessions over ${USERS} users opened in ${(connectMs / 1000).toFixed(1)} s ` +
    `(${Math.round(SESSIONS / (connectMs / 1000))}/s); server RSS ${rssBefore.toFixed(0)} MB before, ${rssSessions.toFixed(0)} MB with the sessions ` +
    `(${(((rssSessions - rssBefore) * 1024) / SESSIONS).toFixed(1)} KB each), ${rssMb(server.pid).toFixed(0)} MB after the tasks\n` +
    `realtime-sessions: ${TASKS} tasks at ${TASK_RATE}/s, each pushed to its owner's ${Math.floor(SESSIONS / USERS)} sessions, done in ${(tasksMs / 1000).toFixed(1)} s\n` +
    `  submit sent -> submitted push received: ${summary(latencies.submitToFirstPush)}\n` +
    `  started_at -> started push received:    ${summary(latencies.startedToPush)}\n` +
    `  finished_at -> success push received:  ${summary(latencies.successToPush)}\n`,
  );
} finally {
  for (const ws of sockets) ws.terminate();
  await server.stop();
}
