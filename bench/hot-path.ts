// The chat hot path against its floor, on one core: Gengate (the built server, as `npm start` runs
// it) pinned to core 0, and in the same run a bare forwarding proxy (node:http, keep-alive, bodies
// piped) pinned to core 0 too; the upstream and the load generator (wrk -t1) pinned to core 1.
// Non-streaming chat, after a warm-up that takes every step once: the p50 and p99 each adds at one
// connection (the median of three rounds), the sustained rate (the highest requests/s over 1 to 128
// connections whose p99 stays under 20 ms without an error), CPU per call (from /proc at 8 to 64
// connections), and per step the event loop's wait for the core and the CPU of the process's other
// threads; streams: 256 to 4,096 concurrent streaming calls of 20 chunks 100 ms apart, clean when
// every chunk and [DONE] arrive with no gap over 500 ms; RSS throughout.
// Needs wrk (Debian's package `wrk`). BENCH_DURATION_S (default 5) sets each load step.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpuSeconds, createToken, listeningUrl, requireWrk, rssMb, startBenchServer, threadTimes, wrkCounts, wrkPostScript, type ThreadTimes } from './support.ts';

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 5);
const CONNECTION_STEPS = [1, 4, 8, 16, 32, 64, 128];
/** The steps whose CPU per call is reported: a loaded but not saturated server. */
const CPU_STEPS = [8, 16, 32, 64];
const STREAM_STEPS = process.env.BENCH_QUICK === '1' ? [256, 1024, 2048] : [256, 512, 1024, 2048, 4096];
const P99_BOUND_MS = 20;
/**
 * Load before the figures of each proxy: after 2 s V8 still compiled some 30 functions a second on
 * Gengate's core (a second of compiler threads' CPU in 8 s at one connection); the figures are of
 * a server in its steady state.
 */
const WARM_UP_S = 15;
/**
 * Load at a step's own connections before its figures, on every target. Gengate's /metrics, read
 * before it, is a GET after thousands of POSTs from one client: V8 then deoptimized some 40
 * functions of the request path (their code had seen only the POSTs' objects), and the next 2 to 4
 * s of calls took up to twice the CPU while it compiled them again (V8's threads 100 to 340 µs a
 * call); a step measured at once measured that, the one-connection step most.
 */
const SETTLE_S = 3;
/**
 * After the warm-up, each target takes every connection step once for this long, Gengate's /metrics
 * read before each, as the steps will: a step's first GET, a pool of upstream connections grown to
 * the step's size and the clients' connections closed mid-call each deoptimized much of the request
 * path at once (V8's --log-deopt), and without this the 8-connection step's 5 s held 63
 * deoptimizations and 108 optimizing compiles, its CPU per call 162 µs against 96 with it. A
 * gateway in service has long seen all of these; the figures are of that state.
 */
const WALK_S = 1;
/**
 * Rounds of the one-connection step, the targets in turn within each; the round with the median p99
 * gives each target's figures. That p99 is set by rare events (a collection, another process on the
 * core): over rounds of 8 s taken in turn the bare proxy's own read 0.65 to 2.96 ms (23 rounds) and
 * Gengate's 1.26 to 5.44 (14), so one round said more about its moment than about the proxy.
 */
const ROUNDS_AT_ONE = 3;
const STREAM_CHUNKS = 20;
const STREAM_GAP_MS = 100;
const CLEAN_GAP_MS = 500;
const UPSTREAM_KEY = 'sk-bench-upstream';
const GATEWAY_CORE = '0';
const LOAD_CORE = '1';
const REQUEST = { model: 'gpt-4.1', messages: [{ role: 'user', content: 'Hello there, how are you today?' }] };

// ---- the processes of core 1: upstream and stream client, and the bare proxy of core 0 ----

/** An OpenAI-shaped chat upstream doing as little as it can: one fixed answer, or 20 chunks 100 ms apart. */
function serveUpstream(): void {
  const completion = JSON.stringify({
    id: 'chatcmpl-bench', object: 'chat.completion', created: 1_700_000_000, model: 'gpt-4.1',
    choices: [{ index: 0, message: { role: 'assistant', content: 'I am fine, thank you.' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 12, completion_tokens: 6, total_tokens: 18 },
  });
  const chunk = (delta: object, finish: string | null) => `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'gpt-4.1', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  const usage = `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'gpt-4.1', choices: [], usage: { prompt_tokens: 12, completion_tokens: STREAM_CHUNKS, total_tokens: 12 + STREAM_CHUNKS } })}\n\n`;
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (body += d));
    req.on('end', () => {
      const parsed = JSON.parse(body) as { stream?: boolean; stream_options?: { include_usage?: boolean } };
      if (!parsed.stream) {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(completion) });
        res.end(completion);
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.write(chunk({ role: 'assistant', content: '' }, null));
      let sent = 0;
      const timer = setInterval(() => {
        sent += 1;
        res.write(chunk({ content: ` word${sent}` }, null));
        if (sent < STREAM_CHUNKS) return;
        clearInterval(timer);
        res.end(`${chunk({}, 'stop')}${parsed.stream_options?.include_usage ? usage : ''}data: [DONE]\n\n`);
      }, STREAM_GAP_MS);
      res.on('close', () => clearInterval(timer));
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, () => process.stdout.write(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}\n`));
}

/** The floor: a forwarding proxy as small as Node allows, keep-alive to the upstream, bodies piped. */
function serveBareProxy(upstreamUrl: string): void {
  const upstream = new URL(upstreamUrl);
  const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
  const server = http.createServer((req, res) => {
    const forward = http.request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, authorization: `Bearer ${UPSTREAM_KEY}`, host: upstream.host }, agent }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  server.keepAliveTimeout = 60_000;
  server.listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, () => process.stdout.write(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}\n`));
}

interface StreamsResult { clean: number; total: number; worstGapMs: number; worstFirstMs: number }

/** Opens `count` streaming calls at once and says how many arrived clean. */
async function runStreams(url: string, authorization: string, count: number): Promise<void> {
  const target = new URL(url);
  const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  const body = JSON.stringify({ ...REQUEST, stream: true });
  const one = () => new Promise<{ clean: boolean; worstGap: number; first: number }>((resolve) => {
    const start = Date.now();
    let last = 0;
    let first = 0;
    let worstGap = 0;
    let chunks = 0;
    let tail = '';
    let done = false;
    const req = http.request({ host: target.hostname, port: target.port, path: target.pathname, method: 'POST', agent, headers: { authorization, 'content-type': 'application/json' } }, (res) => {
      res.setEncoding('utf8');
      res.on('data', (text: string) => {
        const now = Date.now();
        if (last) worstGap = Math.max(worstGap, now - last);
        else first = now - start;
        last = now;
        const events = (tail + text).split('\n\n');
        tail = events.pop()!;
        for (const event of events) {
          if (event.includes('[DONE]')) done = true;
          else if (event.includes('"content":" word')) chunks += 1;
        }
      });
      res.on('end', () => resolve({ clean: res.statusCode === 200 && done && chunks === STREAM_CHUNKS && worstGap <= CLEAN_GAP_MS, worstGap, first }));
      res.on('error', () => resolve({ clean: false, worstGap, first }));
    });
    req.on('error', () => resolve({ clean: false, worstGap, first }));
    req.end(body);
  });
  const results = await Promise.all(Array.from({ length: count }, one));
  const result: StreamsResult = { clean: results.filter((r) => r.clean).length, total: count, worstGapMs: Math.max(...results.map((r) => r.worstGap)), worstFirstMs: Math.max(...results.map((r) => r.first)) };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

// ---- the run ----

/** Runs `node --import tsx bench/hot-path.ts <mode> …` pinned to a core, its output piped. */
function spawnPinned(core: string, mode: string, ...args: string[]): ChildProcess {
  return spawn('taskset', ['-c', core, process.execPath, '--import', 'tsx', 'bench/hot-path.ts', mode, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
}

/** Starts a server mode of this script pinned to a core; resolves with its URL. */
async function startPinned(core: string, mode: string, ...args: string[]): Promise<{ url: string; child: ChildProcess }> {
  const child = spawnPinned(core, mode, ...args);
  return { url: await listeningUrl(child, mode), child };
}

interface Target { name: string; url: string; authorization: string; pid?: number; metricsUrl?: string }

interface WrkResult { rps: number; requests: number; p50: number; p99: number; errors: number }

const UNITS: Record<string, number> = { us: 0.001, ms: 1, s: 1000 };
const millis = (text: string) => {
  const match = /([\d.]+)(us|ms|s)/.exec(text);
  if (!match) throw new Error(`not a duration: ${text}`);
  return Number(match[1]) * UNITS[match[2]!]!;
};

/** wrk -t1 on core 1: POSTs the chat request at `connections` for `seconds`. */
function wrk(target: Target, connections: number, seconds: number): WrkResult {
  const script = wrkPostScript(target.name, { ...REQUEST, stream: false }, { authorization: target.authorization });
  const out = execFileSync('taskset', ['-c', LOAD_CORE, 'wrk', '-t1', `-c${connections}`, `-d${seconds}s`, '--latency', '-s', script, target.url], { encoding: 'utf8' });
  fs.rmSync(script);
  const percentile = (p: string) => millis(new RegExp(`^\\s+${p}%\\s+(\\S+)`, 'm').exec(out)![1]!);
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const { requests, non2xx } = wrkCounts(out);
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)![1]),
    requests,
    p50: percentile('50'),
    p99: percentile('99'),
    errors: non2xx + (socketErrors ? socketErrors.slice(1).reduce((a, b) => a + Number(b), 0) : 0),
  };
}

interface Figures { p50At1: number; p99At1: number; sustained: number; sustainedAt: number; cpuUsPerCall?: number; steps: string[] }

/** prom-client's default sampling interval of the event loop (its eventLoopMonitoringPrecision). */
const EVENT_LOOP_SAMPLE_MS = 10;

/**
 * Gengate's event-loop delay since the last read, from its /metrics (prom-client samples it with
 * perf_hooks.monitorEventLoopDelay and starts over at each scrape): p99 and max in ms. The
 * histogram holds the time between samples, so an idle loop reads 10 ms: the delay is what exceeds it.
 */
async function eventLoopDelay(metricsUrl: string): Promise<string> {
  const text = await (await fetch(metricsUrl)).text();
  const delay = (name: string) => Number(new RegExp(`^gengate_nodejs_eventloop_lag_${name}_seconds (\\S+)$`, 'm').exec(text)?.[1] ?? NaN) * 1000 - EVENT_LOOP_SAMPLE_MS;
  return `event-loop delay p99 ${delay('p99').toFixed(1)} ms, max ${delay('max').toFixed(1)} ms`;
}

/**
 * Per call, in µs: the event loop's CPU, its wait for the core (runnable, another thread on it) and
 * the CPU of the process's other threads (a writer thread, V8's collector and compiler helpers,
 * libuv's pool), which on one core is what that wait is made of.
 */
function threadsPerCall(before: ThreadTimes, after: ThreadTimes, calls: number): string {
  const perCall = (ns: number) => (ns / calls / 1000).toFixed(0);
  return `per call: event loop ${perCall(after.mainCpu - before.mainCpu)} µs on the core and ${perCall(after.mainWaiting - before.mainWaiting)} µs waiting for it, other threads ${perCall(after.othersCpu - before.othersCpu)} µs`;
}

/**
 * The figures of every target, a step at a time: each connection step runs on each target in turn,
 * so the ratios compare loads seconds apart rather than minutes (this machine's own speed drifts
 * by a fifth over minutes, the bare proxy's CPU per call with it).
 */
async function measure(targets: Target[]): Promise<Map<string, Figures>> {
  for (const target of targets) {
    wrk(target, 8, WARM_UP_S);
    for (const connections of CONNECTION_STEPS) {
      if (target.metricsUrl) await eventLoopDelay(target.metricsUrl);
      wrk(target, connections, WALK_S);
    }
  }
  const figures = new Map<string, Figures & { cpu: number; cpuCalls: number }>(targets.map((t) => [t.name, { p50At1: 0, p99At1: 0, sustained: 0, sustainedAt: 0, steps: [], cpu: 0, cpuCalls: 0 }]));
  for (const connections of CONNECTION_STEPS) {
    const rounds = new Map<string, { result: WrkResult; text: string }[]>(targets.map((t) => [t.name, []]));
    for (let round = 0; round < (connections === 1 ? ROUNDS_AT_ONE : 1); round++) {
      for (const target of targets) {
        const f = figures.get(target.name)!;
        if (target.metricsUrl) await eventLoopDelay(target.metricsUrl);
        wrk(target, connections, SETTLE_S);
        const before = target.pid ? cpuSeconds(target.pid) : 0;
        const threadsBefore = target.pid ? threadTimes(target.pid) : undefined;
        const result = wrk(target, connections, DURATION_S);
        const delay = target.metricsUrl ? `, ${await eventLoopDelay(target.metricsUrl)}` : '';
        const threads = threadsBefore ? `, ${threadsPerCall(threadsBefore, threadTimes(target.pid!), result.requests)}` : '';
        if (target.pid && CPU_STEPS.includes(connections)) {
          f.cpu += cpuSeconds(target.pid) - before;
          f.cpuCalls += result.requests;
        }
        rounds.get(target.name)!.push({ result, text: `${Math.round(result.rps)}/s p99 ${result.p99.toFixed(2)} ms${result.errors ? ` ${result.errors} errors` : ''}${delay}${threads}` });
      }
    }
    for (const target of targets) {
      const f = figures.get(target.name)!;
      const taken = rounds.get(target.name)!;
      const { result, text } = [...taken].sort((a, b) => a.result.p99 - b.result.p99)[(taken.length - 1) >> 1]!;
      if (connections === 1) [f.p50At1, f.p99At1] = [result.p50, result.p99];
      if (result.p99 < P99_BOUND_MS && result.errors === 0 && result.rps > f.sustained) [f.sustained, f.sustainedAt] = [result.rps, connections];
      const each = taken.length > 1 ? ` (the median of ${taken.length} rounds; p99 ${taken.map((r) => r.result.p99.toFixed(2)).join(', ')} ms)` : '';
      f.steps.push(`${connections}: ${text}${each}`);
    }
  }
  return new Map([...figures].map(([name, { cpu, cpuCalls, ...f }]) => [name, { ...f, ...(cpuCalls ? { cpuUsPerCall: (cpu / cpuCalls) * 1e6 } : {}) }]));
}

async function streamCapacity(target: Target, count: number): Promise<StreamsResult> {
  const child = spawnPinned(LOAD_CORE, 'streams', target.url, target.authorization, String(count));
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  await new Promise((resolve) => child.on('exit', resolve));
  return JSON.parse(out.trim().split('\n').pop()!) as StreamsResult;
}

async function main(): Promise<void> {
  requireWrk();
  execFileSync('npm', ['run', 'build', '--silent'], { stdio: 'inherit' });
  const upstream = await startPinned(LOAD_CORE, 'upstream');
  const bare = await startPinned(GATEWAY_CORE, 'bare-proxy', upstream.url);
  const gengate = await startBenchServer({
    GENGATE_CONFIG: JSON.stringify({ providers: { openai: { base_url: `${upstream.url}/v1`, api_key_env: 'BENCH_UPSTREAM_KEY', concurrency: 100_000 } } }),
    BENCH_UPSTREAM_KEY: UPSTREAM_KEY,
  }, { built: true, core: GATEWAY_CORE });
  let peakRss = { bare: 0, gengate: 0 };
  /** The peak RSS of the proxy under test in the current stream step. */
  let stepPeak = { pid: 0, mb: 0 };
  const sampler = setInterval(() => {
    peakRss = { bare: Math.max(peakRss.bare, rssMb(bare.child.pid!)), gengate: Math.max(peakRss.gengate, rssMb(gengate.pid)) };
    if (stepPeak.pid) stepPeak.mb = Math.max(stepPeak.mb, rssMb(stepPeak.pid));
  }, 250);
  try {
    const token = await createToken(gengate, 'bench');
    const targets: Target[] = [
      { name: 'direct', url: `${upstream.url}/v1/chat/completions`, authorization: `Bearer ${UPSTREAM_KEY}` },
      { name: 'bare proxy', url: `${bare.url}/v1/chat/completions`, authorization: `Bearer ${UPSTREAM_KEY}`, pid: bare.child.pid! },
      { name: 'gengate', url: `${gengate.url}/v1/chat/completions`, authorization: `Bearer ${token}`, pid: gengate.pid, metricsUrl: `${gengate.url}/metrics` },
    ];
    const idleRss = { bare: rssMb(bare.child.pid!), gengate: rssMb(gengate.pid) };
    const figures = await measure(targets);
    const chatPeakRss = { ...peakRss };
    const lines = [`non-streaming chat, ${DURATION_S} s per step, gateway on core ${GATEWAY_CORE}, upstream and wrk -t1 on core ${LOAD_CORE}:`];
    const direct = figures.get('direct')!;
    for (const [name, f] of figures) {
      lines.push(`  ${name}:`, ...f.steps.map((step) => `    ${step}`));
      lines.push(`    sustained ${Math.round(f.sustained)}/s (at ${f.sustainedAt} connections, p99 < ${P99_BOUND_MS} ms)` +
        (name === 'direct' ? `, p50 ${f.p50At1.toFixed(3)} ms and p99 ${f.p99At1.toFixed(3)} ms at 1 connection` : `, added at 1 connection: p50 +${(f.p50At1 - direct.p50At1).toFixed(3)} ms, p99 +${(f.p99At1 - direct.p99At1).toFixed(3)} ms`) +
        (f.cpuUsPerCall !== undefined ? `, CPU ${Math.round(f.cpuUsPerCall)} µs per call (${CPU_STEPS.join(', ')} connections)` : ''));
    }
    const streams: Record<string, string[]> = { 'bare proxy': [], gengate: [] };
    /** The largest step up to which every step arrived clean: a burst of 4,096 clean after one of 2,048 that was not says nothing of 2,048. */
    const held: Record<string, number> = { 'bare proxy': 0, gengate: 0 };
    for (const target of targets.slice(1)) {
      await streamCapacity(target, 64); // warm-up
      let cleanSoFar = true;
      for (const count of STREAM_STEPS) {
        stepPeak = { pid: target.pid!, mb: 0 };
        const result = await streamCapacity(target, count);
        streams[target.name]!.push(`${count}: ${result.clean} clean (worst gap ${result.worstGapMs} ms, slowest first chunk ${result.worstFirstMs} ms, RSS peak ${stepPeak.mb.toFixed(0)} MB)`);
        cleanSoFar &&= result.clean === count;
        if (cleanSoFar) held[target.name] = count;
      }
    }
    lines.push(`streams of ${STREAM_CHUNKS} chunks ${STREAM_GAP_MS} ms apart, clean = every chunk and [DONE], no gap over ${CLEAN_GAP_MS} ms:`);
    for (const [name, steps] of Object.entries(streams)) lines.push(`  ${name}: ${steps.join(' | ')}`);
    clearInterval(sampler);
    lines.push(`RSS: bare proxy ${idleRss.bare.toFixed(0)} MB idle, ${chatPeakRss.bare.toFixed(0)} MB peak under non-streaming load, ${peakRss.bare.toFixed(0)} MB peak in all; ` +
      `gengate ${idleRss.gengate.toFixed(0)} MB idle, ${chatPeakRss.gengate.toFixed(0)} MB peak under non-streaming load, ${peakRss.gengate.toFixed(0)} MB peak in all`);
    const g = figures.get('gengate')!;
    const b = figures.get('bare proxy')!;
    const verdict = (ok: boolean) => (ok ? 'met' : 'MISSED');
    lines.push('figures beside their targets (ratios against the bare proxy of this run):');
    lines.push(`  CPU per call: ${(g.cpuUsPerCall! / b.cpuUsPerCall!).toFixed(2)}x the bare proxy's (${Math.round(g.cpuUsPerCall!)} vs ${Math.round(b.cpuUsPerCall!)} µs; target 2.0x or less): ${verdict(g.cpuUsPerCall! <= 2 * b.cpuUsPerCall!)}`);
    lines.push(`  sustained rate: ${(g.sustained / b.sustained).toFixed(2)} of the bare proxy's (${Math.round(g.sustained)} vs ${Math.round(b.sustained)}/s; target 0.5 or more): ${verdict(g.sustained >= 0.5 * b.sustained)}`);
    lines.push(`  added p99 at 1 connection: ${(g.p99At1 - direct.p99At1).toFixed(3)} ms vs the bare proxy's ${(b.p99At1 - direct.p99At1).toFixed(3)} ms (target its + 1 ms or less): ${verdict(g.p99At1 - b.p99At1 <= 1)}`);
    lines.push(`  concurrent streams held clean on one core (every step up to it clean): ${held.gengate} (the bare proxy ${held['bare proxy']}; target 2048): ${verdict(held.gengate >= 2048)}`);
    lines.push(`  RSS peak: ${peakRss.gengate.toFixed(0)} MB (target 300 MB or less): ${verdict(peakRss.gengate <= 300)}`);
    process.stdout.write(lines.join('\n') + '\n');
  } finally {
    clearInterval(sampler);
    await gengate.stop();
    bare.child.kill('SIGTERM');
    upstream.child.kill('SIGTERM');
  }
}

const [mode, ...args] = process.argv.slice(2);
if (mode === 'upstream') serveUpstream();
else if (mode === 'bare-proxy') serveBareProxy(args[0]!);
else if (mode === 'streams') await runStreams(args[0]!, args[1]!, Number(args[2]));
else await main();
