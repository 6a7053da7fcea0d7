// The console's requests on a large store: fills the SQLite store with 1,000,000 usage-ledger
// rows (and their daily aggregate) and 100,000 tasks spread over 30 days, then times every
// request the console's pages make (the median and the slowest of 5 after a warm-up), with the
// 300 ms target beside each. BENCH_LEDGER_ROWS and BENCH_TASKS change the sizes.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import { createToken, startBenchServer } from './support.ts';

const LEDGER_ROWS = Number(process.env.BENCH_LEDGER_ROWS ?? 1_000_000);
const TASKS = Number(process.env.BENCH_TASKS ?? 100_000);
const DAYS = 30;
const DAY_MS = 86_400_000;
const TARGET_MS = 300;
const USERS = 200;
const MODELS = ['gpt-4.1', 'seedream-4.0', 'kling-v2', 'tripo-v3.1', 'speech-02-hd', 'claude-sonnet-4', 'flux-pro', 'suno-v4'];
const PROVIDERS = ['openai', 'volcengine', 'kling', 'tripo', 'minimax', 'anthropic', 'fal', 'suno'];
const STATUSES = ['success', 'success', 'success', 'success', 'success', 'success', 'success', 'failed', 'error', 'success'];

/** A deterministic spread: the i-th of n rows, at a time within the last DAYS days. */
const timeOf = (i: number, n: number, now: number) => now - DAYS * DAY_MS + Math.floor((i / n) * DAYS * DAY_MS);

/** Writes the rows straight into the store the server created (it is stopped meanwhile). */
function fill(dataDir: string, now: number): void {
  const db = new Database(path.join(dataDir, 'gengate.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = OFF');
  const ledger = db.prepare(`insert into usage_ledger (id, kind, created_at, finished_at, user_id, token_id, endpoint, model, provider, channel, status, http_status,
    input_tokens, output_tokens, outputs, cost, reserved, latency_ms, request_id, task_id, counters_applied) values
    (?, 'request', ?, ?, ?, ?, 'chat.completions', ?, ?, ?, ?, ?, ?, ?, 0, ?, 0, ?, ?, null, 1)`);
  const daily = new Map<string, { requests: number; errors: number; input: number; output: number; cost: number }>();
  const insertLedger = db.transaction((from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const at = timeOf(i, LEDGER_ROWS, now);
      const user = `u${i % USERS}`;
      const m = i % MODELS.length;
      const status = STATUSES[i % STATUSES.length]!;
      const input = 50 + (i % 400);
      const output = 20 + (i % 300);
      const cost = input * 2 + output * 8;
      ledger.run(`led${i}`, at, at + 800, user, `tok${i % USERS}`, MODELS[m], PROVIDERS[m], PROVIDERS[m], status, status === 'success' ? 200 : 502, input, output, cost, 200 + (i % 1500), `req${i}`);
      const key = [new Date(at).toISOString().slice(0, 10), user, `tok${i % USERS}`, MODELS[m], PROVIDERS[m]].join('\t');
      const sums = daily.get(key) ?? { requests: 0, errors: 0, input: 0, output: 0, cost: 0 };
      sums.requests++;
      if (status !== 'success') sums.errors++;
      sums.input += input;
      sums.output += output;
      sums.cost += cost;
      daily.set(key, sums);
    }
  });
  for (let i = 0; i < LEDGER_ROWS; i += 50_000) insertLedger(i, Math.min(LEDGER_ROWS, i + 50_000));
  const aggregate = db.prepare('insert into usage_daily (day, user_id, token_id, model, provider, requests, tasks, input_tokens, output_tokens, cost, errors) values (?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?)');
  db.transaction(() => {
    for (const [key, s] of daily) aggregate.run(...key.split('\t'), s.requests, s.input, s.output, s.cost, s.errors);
  })();

  const columns = db.prepare('pragma table_info(tasks)').all() as { name: string; type: string; notnull: number; dflt_value: unknown }[];
  const task = (i: number): Record<string, unknown> => {
    const at = timeOf(i, TASKS, now);
    const status = i % 20 === 0 ? 'failed' : 'success';
    return {
      id: `task${i}`, request_id: `treq${i}`, owner_id: `u${i % USERS}`, endpoint: 'images.generations', model: 'seedream-4.0', provider: 'local', output_type: 'image',
      cancellable: 1, status, progress: 100, version: 3, input: '{"prompt":"a bench"}', attempts: 1, created_at: at, updated_at: at + 900, started_at: at + 100, finished_at: at + 900,
      result: '{"output_content":[]}', token_id: `tok${i % USERS}`,
    };
  };
  const names = columns.map((c) => c.name);
  const insertTask = db.prepare(`insert into tasks (${names.join(', ')}) values (${names.map(() => '?').join(', ')})`);
  db.transaction(() => {
    for (let i = 0; i < TASKS; i++) {
      const row = task(i);
      // Columns this bench does not name take what a new task has: their default, or empty.
      insertTask.run(...columns.map((c) => (c.name in row ? row[c.name] : c.dflt_value !== null ? Number(c.dflt_value) || 0 : c.notnull ? (/int/i.test(c.type) ? 0 : '') : null)));
    }
  })();
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.exec('analyze');
  db.close();
}

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gengate-bench-console-'));
  try {
    // The server makes the store (its migrations) and stops; the rows are written without it.
    const first = await startBenchServer({ DATA_DIR: dataDir });
    await first.stop();
    const now = Date.now();
    const fillStarted = performance.now();
    fill(dataDir, now);
    process.stdout.write(`console: ${LEDGER_ROWS} ledger rows and ${TASKS} tasks over ${DAYS} days written in ${((performance.now() - fillStarted) / 1000).toFixed(0)} s\n`);

    const server = await startBenchServer({ DATA_DIR: dataDir });
    try {
      const userToken = await createToken(server, 'u7');
      const day = (offset: number) => new Date(now - offset * DAY_MS).toISOString();
      const pages: [string, string, string?][] = [
        ['overview', '/admin/overview'],
        ['overview (API token)', '/v1/overview', userToken],
        ['tasks', '/admin/tasks?limit=50'],
        ['tasks, failed only', '/admin/tasks?status=failed&limit=50'],
        ['tasks, one user', '/admin/tasks?user_id=u3&limit=50'],
        ['tasks (API token)', '/v1/tasks?limit=50', userToken],
        ['task detail', `/admin/tasks/task${Math.floor(TASKS / 2)}`],
        ['task detail: deliveries', `/admin/callbacks?task_id=task${Math.floor(TASKS / 2)}`],
        ['requests', '/admin/requests?limit=50'],
        ['requests, one user', '/admin/requests?user_id=u5&limit=50'],
        ['requests, one model', '/admin/requests?model=kling-v2&limit=50'],
        ['tokens', '/admin/tokens'],
        ['channels', '/admin/channels'],
        ['models', '/v1/models/list'],
        ['usage by day, 30 days', `/admin/usage?group_by=day&from=${day(30)}&to=${day(0)}`],
        ['usage by model, 30 days', `/admin/usage?group_by=model&from=${day(30)}&to=${day(0)}`],
        ['usage by user, 30 days', `/admin/usage?group_by=user&from=${day(30)}&to=${day(0)}`],
        ['usage (API token)', `/v1/usage?group_by=day&from=${day(30)}&to=${day(0)}`, userToken],
        ['settings', '/admin/config'],
      ];
      let over = 0;
      for (const [name, pathname, token] of pages) {
        const times: number[] = [];
        for (let i = 0; i < 6; i++) {
          const started = performance.now();
          const res = await fetch(server.url + pathname, { headers: { authorization: `Bearer ${token ?? server.adminToken}` } });
          await res.arrayBuffer();
          if (res.status !== 200) throw new Error(`${pathname} answered ${res.status}`);
          if (i > 0) times.push(performance.now() - started);
        }
        times.sort((a, b) => a - b);
        const median = times[Math.floor(times.length / 2)]!;
        const slowest = times[times.length - 1]!;
        if (slowest >= TARGET_MS) over++;
        process.stdout.write(`console ${name.padEnd(26)} ${pathname.split('?')[0]!.padEnd(24)} median ${median.toFixed(1).padStart(7)} ms, slowest ${slowest.toFixed(1).padStart(7)} ms (target < ${TARGET_MS} ms)\n`);
      }
      process.stdout.write(`console: ${pages.length - over} of ${pages.length} requests answered under ${TARGET_MS} ms every time\n`);
    } finally {
      await server.stop();
    }
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
