// The OpenAI-compatible surface: chat completions through /openai/v1 (no stream field, OpenAI's
// default) beside the same call through /v1 (stream: false), both to the OpenAI-compatible test
// upstream on loopback, requests/s and p50/p99 at 1 and 50 connections and the ratio of the two;
// and embeddings on the built-in engine (/openai/v1/embeddings, 8 texts of 1536 dimensions, float
// and base64). Runs the built server, as `npm start` does. BENCH_DURATION_S (default 5) sets each run.
import { spawnSync } from 'node:child_process';
import autocannon from 'autocannon';
import { createToken, startBenchServer, startChatUpstream } from './support.ts';

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 5);
const MESSAGES = [{ role: 'user', content: 'Hello there, how are you today?' }];
const TEXTS = Array.from({ length: 8 }, (_, i) => `document number ${i} about the weather, rivers and the mountains of the north`);


async function run(url: string, token: string, body: unknown, connections: number, duration: number) {
  const result = await autocannon({
    url, method: 'POST', connections, duration,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${url}: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
  return result;
}

/** Embeddings on the built-in engine: a server with no provider configured. */
async function embeddingFigures(): Promise<string[]> {
  const server = await startBenchServer({}, { built: true });
  try {
    const token = await createToken(server, 'bench');
    const lines: string[] = [];
    for (const encoding of ['float', 'base64']) {
      const body = { model: 'text-embedding-3-small', input: TEXTS, encoding_format: encoding };
      await run(`${server.url}/openai/v1/embeddings`, token, body, 10, 1);
      const result = await run(`${server.url}/openai/v1/embeddings`, token, body, 10, DURATION_S);
      lines.push(`embeddings on the built-in engine, ${TEXTS.length} texts x 1536 dimensions, ${encoding}, 10 connections: ${Math.round(result.requests.average)} req/s (${Math.round(result.requests.average * TEXTS.length)} texts/s), p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms`);
    }
    return lines;
  } finally {
    await server.stop();
  }
}

async function main(): Promise<void> {
  const build = spawnSync('npm', ['run', 'build', '--silent'], { stdio: 'inherit' });
  if (build.status !== 0) throw new Error('npm run build failed');
  const upstream = await startChatUpstream();
  const server = await startBenchServer({
    GENGATE_CONFIG: JSON.stringify({ providers: { openai: { base_url: upstream.url, api_key_env: 'BENCH_UPSTREAM_KEY', concurrency: 64 } } }),
    BENCH_UPSTREAM_KEY: 'sk-bench-upstream',
  }, { built: true });
  try {
    const token = await createToken(server, 'bench');
    const lines: string[] = [];
    for (const connections of [1, 50]) {
      const targets = [
        { name: '/v1', url: `${server.url}/v1/chat/completions`, body: { model: 'gpt-4.1', messages: MESSAGES, stream: false } },
        { name: '/openai/v1', url: `${server.url}/openai/v1/chat/completions`, body: { model: 'gpt-4.1', messages: MESSAGES } },
      ];
      const rates: number[] = [];
      const parts: string[] = [];
      // Alternated twice, so both paths see the same machine load.
      for (const target of [...targets, ...targets]) await run(target.url, token, target.body, connections, 1);
      for (const target of targets) {
        const result = await run(target.url, token, target.body, connections, DURATION_S);
        rates.push(result.requests.average);
        parts.push(`${target.name} ${Math.round(result.requests.average)} req/s, p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms`);
      }
      lines.push(`chat non-streaming, ${connections} connection${connections > 1 ? 's' : ''}, ${DURATION_S}s: ${parts.join(' | ')}; /openai/v1 at ${((rates[1]! / rates[0]!) * 100).toFixed(1)}% of /v1 (target: within 5%)`);
    }
    lines.push(...(await embeddingFigures()));
    process.stdout.write(lines.join('\n') + '\n');
  } finally {
    await server.stop();
    upstream.child.kill('SIGTERM');
  }
}

await main();
