// Authenticated GET /v1/models/list at 50 connections: requests/s and latency percentiles.
import autocannon from 'autocannon';
import { createToken, rssMb, startBenchServer } from './support.ts';

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);

const server = await startBenchServer();
try {
  const token = await createToken(server, 'bench');
  const run = (connections: number, duration: number) => autocannon({
    url: `${server.url}/v1/models/list?type=text_to_model`,
    connections,
    duration,
    headers: { authorization: `Bearer ${token}` },
  });
  await run(50, 2); // warm-up: JIT, caches
  const result = await run(50, DURATION_S);
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${result.non2xx} non-2xx answers, ${result.errors} errors`);
  process.stdout.write(
    `models-list: GET /v1/models/list?type=text_to_model, 50 connections, ${DURATION_S}s: ` +
    `${Math.round(result.requests.average)} req/s, p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, ` +
    `server RSS ${rssMb(server.pid).toFixed(0)} MB\n`,
  );
} finally {
  await server.stop();
}
