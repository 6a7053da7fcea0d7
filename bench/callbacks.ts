// Task callback deliveries per second to a receiver in this process that answers 200 at once,
// with async tasks on the local engine (no minimum duration), on SQLite and on PostgreSQL:
//   stream  — callbacks keep up with tasks as they are submitted and run;
//   backlog — the receiver stalls (holding the dispatcher's connections) while tasks finish, then
//             recovers: how fast the outbox that piled up is sent.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createToken, rssMb, onPostgres, startBenchServer, type BenchServer } from './support.ts';

const STREAM_TASKS = Number(process.env.BENCH_CALLBACK_STREAM_TASKS ?? 2000);
/** Enough for a backlog that takes a few seconds to send. */
const BACKLOG_TASKS = Number(process.env.BENCH_CALLBACK_BACKLOG_TASKS ?? 4000);
const SUBMIT_CONCURRENCY = 32;
const TERMINAL = new Set(['success', 'failed', 'rejected', 'cancelled']);

/** Counts callbacks; while stalled, holds every request unanswered until release(). */
class Receiver {
  received = 0;
  finals = 0;
  firstAt = 0;
  lastAt = 0;
  /** Arrival times, in order. */
  private readonly times: number[] = [];
  private held: http.ServerResponse[] = [];
  private heldBodies: string[] = [];
  private stalled = false;
  private waitingFor = Infinity;
  private onFinals: () => void = () => undefined;
  readonly server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (this.stalled) {
        this.held.push(res);
        this.heldBodies.push(Buffer.concat(chunks).toString('utf8'));
        return;
      }
      res.writeHead(200).end();
      this.count(Buffer.concat(chunks).toString('utf8'));
    });
  });

  async listen(): Promise<string> {
    this.server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  reset(): void {
    this.received = this.finals = this.firstAt = this.lastAt = 0;
    this.times.length = 0;
  }

  stall(): void {
    this.stalled = true;
  }

  /** Answers the held requests and every later one at once. */
  release(): void {
    this.stalled = false;
    for (const res of this.held) res.writeHead(200).end();
    for (const body of this.heldBodies) this.count(body);
    this.held = [];
    this.heldBodies = [];
  }

  /** Resolves once `n` final-status callbacks were counted since the last reset. */
  finalsReached(n: number, timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`only ${this.finals} of ${n} final callbacks within ${timeoutMs} ms`)), timeoutMs);
      this.waitingFor = n;
      this.onFinals = () => {
        clearTimeout(timer);
        resolve();
      };
      if (this.finals >= n) this.onFinals();
    });
  }

  /** Callbacks in the busiest second (any 1000 ms window). */
  peakPerSecond(): number {
    let peak = 0;
    for (let start = 0, end = 0; end < this.times.length; end++) {
      while (this.times[end]! - this.times[start]! >= 1000) start++;
      peak = Math.max(peak, end - start + 1);
    }
    return peak;
  }

  private count(body: string): void {
    const now = Date.now();
    this.firstAt ||= now;
    this.lastAt = now;
    this.received++;
    this.times.push(now);
    const status = (JSON.parse(body) as { queue_status: { status: string } }).queue_status.status;
    if (TERMINAL.has(status) && ++this.finals >= this.waitingFor) this.onFinals();
  }
}

async function api(server: BenchServer, token: string, path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${server.url}${path}`, { ...init, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...init.headers } });
}

/** Submits `count` async tasks, `SUBMIT_CONCURRENCY` at a time; answers their ids. */
async function submitTasks(server: BenchServer, token: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  let next = 0;
  const worker = async () => {
    while (next < count) {
      next++;
      const res = await api(server, token, '/v1/images/generations', {
        method: 'POST',
        headers: { 'x-async': 'true' },
        body: JSON.stringify({ model: 'seedream-4.0', prompt: `bench ${next}`, size: '16x16' }),
      });
      if (res.status !== 200) throw new Error(`submit answered ${res.status}: ${await res.text()}`);
      ids.push(((await res.json()) as { task_id: string }).task_id);
    }
  };
  await Promise.all(Array.from({ length: SUBMIT_CONCURRENCY }, worker));
  return ids;
}

/** Resolves once every task has ended (read through GET /v1/ai/result). */
async function allEnded(server: BenchServer, token: string, ids: string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (const id of ids) {
    for (;;) {
      const record = (await (await api(server, token, `/v1/ai/result/${id}`)).json()) as { queue_status: { status: string } };
      if (TERMINAL.has(record.queue_status.status)) break;
      if (Date.now() > deadline) throw new Error(`task ${id} still ${record.queue_status.status} after ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

function rate(receiver: Receiver): string {
  const spanS = (receiver.lastAt - receiver.firstAt) / 1000;
  return `${receiver.received} callbacks in ${spanS.toFixed(1)} s: ${Math.round(receiver.received / spanS)} callbacks/s on average, ${receiver.peakPerSecond()} in the busiest second`;
}

async function benchStore(label: string, env: Record<string, string>): Promise<void> {
  const receiver = new Receiver();
  const receiverUrl = await receiver.listen();
  const server = await startBenchServer({ LOCAL_ENGINE_MIN_DURATION_MS: '0', ...env });
  try {
    const token = await createToken(server, 'bench');
    // A long timeout, so the requests held while the receiver stalls are not given up on.
    const configured = await api(server, server.adminToken, '/admin/config', { method: 'PUT', body: JSON.stringify({ callback_url: receiverUrl, callback_timeout_ms: 300_000 }) });
    if (configured.status !== 200) throw new Error(`PUT /admin/config answered ${configured.status}`);

    const streamStarted = Date.now();
    await submitTasks(server, token, STREAM_TASKS);
    await receiver.finalsReached(STREAM_TASKS, 300_000);
    const streamS = (Date.now() - streamStarted) / 1000;
    process.stdout.write(`callbacks stream (${label}): ${STREAM_TASKS} async tasks submitted ${SUBMIT_CONCURRENCY} at once and run in ${streamS.toFixed(1)} s (${Math.round(STREAM_TASKS / streamS)} tasks/s), ${rate(receiver)}\n`);

    receiver.reset();
    receiver.stall();
    const ids = await submitTasks(server, token, BACKLOG_TASKS);
    await allEnded(server, token, ids, 300_000);
    receiver.release();
    await receiver.finalsReached(BACKLOG_TASKS, 300_000);
    process.stdout.write(`callbacks backlog (${label}): outbox of ${BACKLOG_TASKS} finished tasks sent once the receiver recovers, ${rate(receiver)}; server RSS ${rssMb(server.pid).toFixed(0)} MB\n`);
  } finally {
    await server.stop();
    receiver.server.closeAllConnections();
    receiver.server.close();
  }
}

await benchStore('SQLite', {});

await onPostgres('callbacks', (env) => benchStore('PostgreSQL', env));
