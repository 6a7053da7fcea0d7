// Chat completions through Gengate (the built server, as `npm start` runs it) to an OpenAI-compatible
// upstream on loopback, against the same upstream called directly: requests/s, p50 and p99 at 1 and
// 50 connections, non-streaming and streaming; the latency Gengate adds per call and before the
// first streamed chunk (sequential calls timed to the microsecond); the server's RSS idle and under
// load. The upstream is the test fake, run in a process of its own so the two do not share an event loop.
// BENCH_DURATION_S (default 5) sets each load run, BENCH_PROBE_CALLS (default 3000) the sequential calls.
import { spawnSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { Client } from 'undici';
import { startFakeChatUpstream } from '../test/fakes/openai-chat-upstream.ts';
import { createToken, rssMb, startBenchServer, startChatUpstream } from './support.ts';

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 5);
const PROBE_CALLS = Number(process.env.BENCH_PROBE_CALLS ?? 3000);
const UPSTREAM_KEY = 'sk-bench-upstream';
const bodyOf = (stream: boolean) => JSON.stringify({ model: 'gpt-4.1', messages: [{ role: 'user', content: 'Hello there, how are you today?' }], stream });

interface Target {
  name: string;
  origin: string;
  path: string;
  authorization: string;
}


function load(target: Target, stream: boolean, connections: number, duration: number) {
  return autocannon({
    url: target.origin + target.path,
    method: 'POST',
    connections,
    duration,
    headers: { authorization: target.authorization, 'content-type': 'application/json' },
    body: bodyOf(stream),
  });
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;

interface Timings {
  /** Milliseconds to the whole answer. */
  total: number[];
  /** Milliseconds to the first bytes of the answer's body (the first streamed chunk). */
  first: number[];
}

/** One call on a keep-alive connection, timed. */
async function timedCall(client: Client, target: Target, stream: boolean, into: Timings | undefined): Promise<void> {
  const started = performance.now();
  const res = await client.request({ method: 'POST', path: target.path, headers: { authorization: target.authorization, 'content-type': 'application/json' }, body: bodyOf(stream) });
  if (res.statusCode !== 200) throw new Error(`${target.name} answered ${res.statusCode}: ${await res.body.text()}`);
  let firstAt: number | undefined;
  for await (const _chunk of res.body) firstAt ??= performance.now();
  const ended = performance.now();
  into?.total.push(ended - started);
  into?.first.push((firstAt ?? ended) - started);
}

/**
 * Sequential calls, one connection per target, alternating direct and through Gengate so both
 * see the same machine load; the first tenth warms up JIT and connections.
 */
async function probe(direct: Target, gengate: Target, stream: boolean, calls: number): Promise<[Timings, Timings]> {
  const clients = [new Client(direct.origin), new Client(gengate.origin)];
  const timings: [Timings, Timings] = [{ total: [], first: [] }, { total: [], first: [] }];
  try {
    for (let i = 0; i < calls + calls / 10; i++) {
      const warm = i < calls / 10;
      await timedCall(clients[0], direct, stream, warm ? undefined : timings[0]);
      await timedCall(clients[1], gengate, stream, warm ? undefined : timings[1]);
    }
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
  return timings;
}

const ms = (value: number) => value.toFixed(3);

async function main(): Promise<void> {
  const build = spawnSync('npm', ['run', 'build', '--silent'], { stdio: 'inherit' });
  if (build.status !== 0) throw new Error('npm run build failed');

  // Idle memory of the same server run through tsx, for comparison with the built one.
  const viaTsx = await startBenchServer();
  const tsxIdleRss = rssMb(viaTsx.pid);
  await viaTsx.stop();

  const upstream = await startChatUpstream();
  const server = await startBenchServer({
    GENGATE_CONFIG: JSON.stringify({ providers: { openai: { base_url: upstream.url, api_key_env: 'BENCH_UPSTREAM_KEY', concurrency: 64 } } }),
    BENCH_UPSTREAM_KEY: UPSTREAM_KEY,
  }, { built: true });
  try {
    const idleRss = rssMb(server.pid);
    const token = await createToken(server, 'bench');
    const upstreamUrl = new URL(upstream.url);
    const direct: Target = { name: 'direct', origin: upstreamUrl.origin, path: `${upstreamUrl.pathname}/chat/completions`, authorization: `Bearer ${UPSTREAM_KEY}` };
    const gengate: Target = { name: 'gengate', origin: server.url, path: '/v1/chat/completions', authorization: `Bearer ${token}` };

    let peakRss = idleRss;
    const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssMb(server.pid))), 100);
    const lines: string[] = [];
    const throughput: Record<string, number> = {};
    for (const stream of [false, true]) {
      for (const connections of [1, 50]) {
        const results: string[] = [];
        for (const target of [direct, gengate]) {
          await load(target, stream, connections, 1); // warm-up
          const result = await load(target, stream, connections, DURATION_S);
          if (result.non2xx > 0 || result.errors > 0) throw new Error(`${target.name}: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
          throughput[`${target.name} ${stream} ${connections}`] = result.requests.average;
          results.push(`${target.name} ${Math.round(result.requests.average)} req/s, p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms`);
        }
        lines.push(`chat ${stream ? 'streaming' : 'non-streaming'}, ${connections} connection${connections > 1 ? 's' : ''}, ${DURATION_S}s: ${results.join(' | ')}`);
      }
    }
    clearInterval(sampler);
    const loadedRss = rssMb(server.pid);

    const [plainDirect, plainGengate] = await probe(direct, gengate, false, PROBE_CALLS);
    const [streamDirect, streamGengate] = await probe(direct, gengate, true, PROBE_CALLS);
    const added = (a: number[], b: number[]) => `+${ms(median(b) - median(a))} ms median, +${ms(mean(b) - mean(a))} ms mean (direct ${ms(median(a))}, through Gengate ${ms(median(b))})`;
    lines.push(`chat added latency, ${PROBE_CALLS} sequential non-streaming calls: ${added(plainDirect.total, plainGengate.total)}`);
    lines.push(`chat added time to the first streamed chunk, ${PROBE_CALLS} sequential calls: ${added(streamDirect.first, streamGengate.first)}`);
    lines.push(`chat added time to the end of a stream: ${added(streamDirect.total, streamGengate.total)}`);
    lines.push(`chat server RSS: ${idleRss.toFixed(0)} MB idle (built JS; ${tsxIdleRss.toFixed(0)} MB idle through tsx), ${peakRss.toFixed(0)} MB peak under load, ${loadedRss.toFixed(0)} MB after`);
    const ratio = (stream: boolean) => throughput[`gengate ${stream} 50`] / throughput[`direct ${stream} 50`];
    const addedMs = median(plainGengate.total) - median(plainDirect.total);
    const addedStreamMs = median(streamGengate.total) - median(streamDirect.total);
    lines.push('chat figures beside their targets (ratios of one run; the absolute figures vary by machine):');
    lines.push(`  non-streaming, 50 connections: ${Math.round(throughput['gengate false 50'])} req/s, ${ratio(false).toFixed(2)} of direct's ${Math.round(throughput['direct false 50'])} (target 0.30 or more)`);
    lines.push(`  streaming (10 chunks), 50 connections: ${Math.round(throughput['gengate true 50'])} req/s, ${ratio(true).toFixed(2)} of direct's ${Math.round(throughput['direct true 50'])} (target 0.25 or more)`);
    lines.push(`  added median, 1 connection, non-streaming: ${ms(addedMs)} ms (target 0.20 ms or less)`);
    lines.push(`  added median, 1 connection, whole stream: ${ms(addedStreamMs)} ms (target 0.30 ms or less)`);
    lines.push(`  RSS under load: ${peakRss.toFixed(0)} MB peak (target 150 MB or less)`);
    process.stdout.write(lines.join('\n') + '\n');
  } finally {
    await server.stop();
    upstream.child.kill('SIGTERM');
  }
}

if (process.argv[2] === 'upstream') {
  const fake = await startFakeChatUpstream({ record: false });
  process.stdout.write(`upstream listening on ${fake.url}\n`);
  process.on('SIGTERM', () => void fake.close().then(() => process.exit(0)));
} else {
  await main();
}
