// Async submits per second (POST /v1/images/generations with x-async: 1) and submit→success
// latency (the same call in sync mode) with the local engine, on SQLite and on PostgreSQL.
import autocannon from 'autocannon';
import { createToken, rssMb, onPostgres, startBenchServer, type BenchServer } from './support.ts';

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const BODY = JSON.stringify({ prompt: 'bench', model: 'seedream-4.0', size: '64x64' });

async function waitUntilDrained(server: BenchServer, token: string, timeoutMs: number): Promise<number> {
  // The newest task finishing means the queue worked through the backlog (FIFO).
  const started = Date.now();
  const probe = await fetch(`${server.url}/v1/images/generations`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-async': '1' }, body: BODY });
  const { task_id } = (await probe.json()) as { task_id: string };
  for (;;) {
    const record = (await (await fetch(`${server.url}/v1/ai/result/${task_id}`, { headers: { authorization: `Bearer ${token}` } })).json()) as { queue_status: { status: string } };
    if (record.queue_status.status === 'success') return Date.now() - started;
    if (Date.now() - started > timeoutMs) throw new Error(`backlog not drained within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function benchStore(label: string, env: Record<string, string>): Promise<void> {
  const server = await startBenchServer({ LOCAL_ENGINE_MIN_DURATION_MS: '0', ...env });
  try {
    const token = await createToken(server, 'bench');
    const submit = (connections: number, duration: number, async: boolean) => autocannon({
      url: `${server.url}/v1/images/generations`,
      method: 'POST',
      connections,
      duration,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...(async ? { 'x-async': '1' } : {}) },
      body: BODY,
    });
    await submit(20, 2, true); // warm-up
    await waitUntilDrained(server, token, 120_000);
    const burst = await submit(50, DURATION_S, true);
    if (burst.non2xx > 0 || burst.errors > 0) throw new Error(`${burst.non2xx} non-2xx answers, ${burst.errors} errors`);
    const rssAfterBurst = rssMb(server.pid);
    // The workers need time in proportion to the backlog; allow down to 30 tasks/s before giving up.
    const drainMs = await waitUntilDrained(server, token, Math.max(300_000, burst.requests.total * 33));
    const sync = await submit(10, Math.max(3, Math.round(DURATION_S / 2)), false);
    if (sync.non2xx > 0 || sync.errors > 0) throw new Error(`${sync.non2xx} non-2xx sync answers, ${sync.errors} errors`);
    process.stdout.write(
      `task-submit (${label}): async submits ${Math.round(burst.requests.average)}/s over ${DURATION_S}s at 50 connections ` +
      `(${burst.requests.total} tasks, p99 ${burst.latency.p99} ms, backlog done ${(drainMs / 1000).toFixed(1)} s later (${Math.round(burst.requests.total / (drainMs / 1000))} tasks/s run), RSS ${rssAfterBurst.toFixed(0)} MB); ` +
      `sync submit→success at 10 connections: p50 ${sync.latency.p50} ms, p99 ${sync.latency.p99} ms, ${Math.round(sync.requests.average)} tasks/s\n`,
    );
  } finally {
    await server.stop();
  }
}

await benchStore('SQLite', {});

await onPostgres('task-submit', (env) => benchStore('PostgreSQL', env));
