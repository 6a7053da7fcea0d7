// What limits add to a chat call: sequential non-streaming chat completions through the built
// server to an OpenAI-compatible upstream on loopback, alternating a token without limits and one
// with every limit set (requests and tokens per minute, tasks at once, credits with a priced model),
// embedded and with Redis (one script call per admission). Prints the added median and mean.
// BENCH_PROBE_CALLS (default 3000) sets the calls per token.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { Client } from 'undici';
import { startBenchServer, startChatUpstream, type BenchServer } from './support.ts';

const CALLS = Number(process.env.BENCH_PROBE_CALLS ?? 3000);
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const UPSTREAM_KEY = 'sk-bench-upstream';
const BODY = JSON.stringify({ model: 'gpt-4.1', messages: [{ role: 'user', content: 'Hello there, how are you today?' }], stream: false });
const EVERY_LIMIT = { requests_per_minute: 1_000_000_000, tokens_per_minute: 1_000_000_000, concurrent_tasks: 1000, credits: 1_000_000_000, credits_period: 'day' };


async function token(server: BenchServer, userId: string, limits?: object): Promise<string> {
  const res = await fetch(`${server.url}/admin/tokens`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ user_id: userId, ...(limits ? { limits } : {}) }),
  });
  if (res.status !== 201) throw new Error(`token create answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { token: string }).token;
}

async function timed(client: Client, authorization: string): Promise<number> {
  const started = performance.now();
  const res = await client.request({ method: 'POST', path: '/v1/chat/completions', headers: { authorization, 'content-type': 'application/json' }, body: BODY });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`answered ${res.statusCode}: ${text}`);
  return performance.now() - started;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
const ms = (value: number) => value.toFixed(3);

/** Alternates the two tokens on one keep-alive connection each; the first tenth warms up. */
async function measure(name: string, env: Record<string, string>, upstreamUrl: string, target: number): Promise<string> {
  const server = await startBenchServer({
    GENGATE_CONFIG: JSON.stringify({
      providers: { openai: { base_url: upstreamUrl, api_key_env: 'BENCH_UPSTREAM_KEY', concurrency: 64 } },
      models: { 'gpt-4.1': { pricing: { input_per_million: 2, output_per_million: 8 } } },
    }),
    BENCH_UPSTREAM_KEY: UPSTREAM_KEY,
    ...env,
  }, { built: true });
  try {
    const free = `Bearer ${await token(server, 'bench-free')}`;
    const limited = `Bearer ${await token(server, 'bench-limited', EVERY_LIMIT)}`;
    const clients = [new Client(server.url), new Client(server.url)];
    const times: [number[], number[]] = [[], []];
    try {
      for (let i = 0; i < CALLS + CALLS / 10; i++) {
        const a = await timed(clients[0]!, free);
        const b = await timed(clients[1]!, limited);
        if (i >= CALLS / 10) {
          times[0].push(a);
          times[1].push(b);
        }
      }
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
    const added = median(times[1]) - median(times[0]);
    return `limits ${name}, ${CALLS} sequential chat calls per token: +${ms(added)} ms median, +${ms(mean(times[1]) - mean(times[0]))} ms mean ` +
      `(no limits ${ms(median(times[0]))} ms, every limit ${ms(median(times[1]))} ms; target under ${target} ms)`;
  } finally {
    await server.stop();
  }
}

async function redisAnswers(): Promise<boolean> {
  const client = new Redis(REDIS_URL, { lazyConnect: true, connectTimeout: 2000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.ping();
    return true;
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

const build = spawnSync('npm', ['run', 'build', '--silent'], { stdio: 'inherit' });
if (build.status !== 0) throw new Error('npm run build failed');
const upstream = await startChatUpstream();
try {
  const lines = [await measure('embedded', {}, upstream.url, 0.1)];
  if (await redisAnswers()) {
    const prefix = `bench-limits-${randomBytes(4).toString('hex')}`;
    lines.push(await measure('with Redis', { REDIS_URL, REDIS_PREFIX: prefix }, upstream.url, 0.3));
    const client = new Redis(REDIS_URL);
    const keys = await client.keys(`${prefix}:*`);
    if (keys.length > 0) await client.del(...keys);
    await client.quit();
  } else {
    lines.push(`limits with Redis: skipped, ${REDIS_URL} not reachable`);
  }
  process.stdout.write(lines.join('\n') + '\n');
} finally {
  upstream.child.kill('SIGTERM');
}
