// The task pipeline with the noop engine (every task succeeds at once with a 1x1 PNG, so the gateway
// alone is measured), on SQLite and on PostgreSQL: submit→success of sequential sync calls
// (POST /v1/images/generations, median and p99), async submits per second at 50 connections and
// the rate at which the workers then run the backlog. Targets are printed beside the figures.
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { Client } from 'undici';
import { createToken, rssMb, onPostgres, startBenchServer, type BenchServer } from './support.ts';

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const SYNC_CALLS = Number(process.env.BENCH_PROBE_CALLS ?? 1000);
const BODY = JSON.stringify({ prompt: 'bench', model: 'seedream-4.0', size: '64x64' });
/** seedream-4.0's provider runs on the noop engine. */
const NOOP_CONFIG = JSON.stringify({ providers: { volcengine: { adapter: 'noop' } } });
const TARGETS: Record<string, { syncMs: number; runRate: number }> = { SQLite: { syncMs: 5, runRate: 1000 }, PostgreSQL: { syncMs: 10, runRate: 400 } };

async function waitUntilDrained(server: BenchServer, token: string, timeoutMs: number): Promise<number> {
  // The newest task finishing means the queue worked through the backlog (FIFO).
  const started = Date.now();
  const probe = await fetch(`${server.url}/v1/images/generations`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-async': '1' }, body: BODY });
  const { task_id } = (await probe.json()) as { task_id: string };
  for (;;) {
    const record = (await (await fetch(`${server.url}/v1/ai/result/${task_id}`, { headers: { authorization: `Bearer ${token}` } })).json()) as { queue_status: { status: string } };
    if (record.queue_status.status === 'success') return Date.now() - started;
    if (Date.now() - started > timeoutMs) throw new Error(`backlog not drained within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Sequential sync submits on one keep-alive connection, each timed to its successful answer; the first tenth warms up. */
async function syncLatencies(server: BenchServer, token: string, calls: number): Promise<number[]> {
  const client = new Client(server.url);
  const times: number[] = [];
  try {
    for (let i = 0; i < calls + calls / 10; i++) {
      const started = performance.now();
      const res = await client.request({ method: 'POST', path: '/v1/images/generations', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: BODY });
      const body = await res.body.text();
      if (res.statusCode !== 200 || !body.includes('"success"')) throw new Error(`sync submit answered ${res.statusCode}: ${body.slice(0, 200)}`);
      if (i >= calls / 10) times.push(performance.now() - started);
    }
  } finally {
    await client.close();
  }
  return times.sort((a, b) => a - b);
}

async function benchStore(label: string, env: Record<string, string>): Promise<void> {
  const server = await startBenchServer({ GENGATE_CONFIG: NOOP_CONFIG, ...env });
  const target = TARGETS[label];
  try {
    const token = await createToken(server, 'bench');
    const submit = (connections: number, duration: number) => autocannon({
      url: `${server.url}/v1/images/generations`,
      method: 'POST',
      connections,
      duration,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-async': '1' },
      body: BODY,
    });
    await submit(20, 2); // warm-up
    await waitUntilDrained(server, token, 120_000);
    const sync = await syncLatencies(server, token, SYNC_CALLS);
    const burst = await submit(50, DURATION_S);
    if (burst.non2xx > 0 || burst.errors > 0) throw new Error(`${burst.non2xx} non-2xx answers, ${burst.errors} errors`);
    const rssAfterBurst = rssMb(server.pid);
    // The workers need time in proportion to the backlog; allow down to 30 tasks/s before giving up.
    const drainMs = await waitUntilDrained(server, token, Math.max(300_000, burst.requests.total * 33));
    // From the first submit to the last task's success: the workers run while the submits come in.
    const runRate = burst.requests.total / (DURATION_S + drainMs / 1000);
    const at = (q: number) => sync[Math.min(sync.length - 1, Math.floor(sync.length * q))].toFixed(2);
    process.stdout.write(
      `task pipeline, noop engine (${label}):\n` +
      `  sync submit→success, ${SYNC_CALLS} sequential calls: median ${at(0.5)} ms (target ${target.syncMs} ms or less), p99 ${at(0.99)} ms\n` +
      `  run rate: ${Math.round(runRate)} tasks/s (target ${target.runRate} or more): ${burst.requests.total} async tasks submitted at 50 connections over ${DURATION_S}s ` +
      `(${Math.round(burst.requests.average)} submits/s, p99 ${burst.latency.p99} ms), the last one done ${(drainMs / 1000).toFixed(1)} s after the submits ended; RSS ${rssAfterBurst.toFixed(0)} MB\n`,
    );
  } finally {
    await server.stop();
  }
}

await benchStore('SQLite', {});

await onPostgres('task pipeline', (env) => benchStore('PostgreSQL', env), { inQuickRun: true });
