// The usage ledger at size: fills an embedded store with 1,000,000 ledger rows (with their daily
// sums) and 100,000 tasks over 90 days and 1,000 users, then times GET /admin/usage, /v1/usage,
// /admin/requests, /v1/tasks and /admin/tasks (median of 5 calls each, first page or 30 days).
// BENCH_LEDGER_ROWS and BENCH_LEDGER_TASKS change the sizes.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import SQLite from 'better-sqlite3';
import pino from 'pino';
import { loadSettings } from '../src/config/settings.ts';
import { startServer } from '../src/main.ts';
import { openDb } from '../src/storage/db.ts';

const ROWS = Number(process.env.BENCH_LEDGER_ROWS ?? 1_000_000);
const TASKS = Number(process.env.BENCH_LEDGER_TASKS ?? 100_000);
const USERS = 1000;
const DAYS = 90;
const DAY_MS = 86_400_000;
const MODELS = ['gpt-4.1', 'gpt-4.1-mini', 'seedream-4.0', 'gpt-image-1', 'kling-v2'];
const ADMIN = 'bench-ledger-admin';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gengate-ledger-'));
const now = Date.now();
const started = performance.now();

// The schema comes from the migrations; the rows go in through one prepared statement per table.
await (await openDb({ dataDir })).close();
const sqlite = new SQLite(path.join(dataDir, 'gengate.db'));
sqlite.pragma('journal_mode = WAL');
sqlite.pragma('synchronous = OFF');
const insertRow = sqlite.prepare(`insert into usage_ledger (id, kind, created_at, finished_at, user_id, token_id, endpoint, model, provider, channel, status,
  http_status, input_tokens, output_tokens, outputs, cost, reserved, latency_ms, request_id, task_id, counters_applied)
  values (?, ?, ?, ?, ?, ?, ?, ?, ?, null, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, 1)`);
const insertTask = sqlite.prepare(`insert into tasks (id, request_id, owner_id, client_id, endpoint, model, provider, output_type, cancellable, status, progress,
  version, message, error_message, input, result, callback_url, server, attempts, lease_owner, lease_until, created_at, updated_at, started_at, finished_at, token_id, reserved_credits)
  values (?, ?, ?, null, 'images.generations', ?, 'local', 'image', 1, ?, 100, 4, null, null, '{"prompt":"bench"}', null, null, null, 1, null, null, ?, ?, ?, ?, ?, 0)`);
const insertDaily = sqlite.prepare(`insert into usage_daily (day, user_id, token_id, model, provider, requests, tasks, input_tokens, output_tokens, cost, errors)
  values (?, ?, ?, ?, 'local', ?, ?, ?, ?, ?, ?)`);
const daily = new Map<string, number[]>();
sqlite.transaction(() => {
  for (let i = 0; i < ROWS; i++) {
    const at = now - Math.floor((i / ROWS) * DAYS * DAY_MS);
    const user = `user-${i % USERS}`;
    const model = MODELS[i % MODELS.length]!;
    const isTask = i % 10 === 0;
    const status = i % 50 === 0 ? 'error' : 'success';
    const [input, output, cost] = [40 + (i % 300), 200 + (i % 500), 1000 + (i % 9000)];
    const id = `row-${i}`;
    insertRow.run(id, isTask ? 'task' : 'request', at, at + 800, user, `tok-${i % USERS}`, isTask ? 'images.generations' : '/v1/chat/completions', model, 'local', status, isTask ? null : 200, input, output, isTask ? 1 : 0, cost, 800, id, isTask ? id : null);
    const key = `${new Date(at).toISOString().slice(0, 10)}|${user}|tok-${i % USERS}|${model}`;
    const sums = daily.get(key) ?? [0, 0, 0, 0, 0, 0];
    sums[0]! += 1;
    sums[1]! += isTask ? 1 : 0;
    sums[2]! += input;
    sums[3]! += output;
    sums[4]! += cost;
    sums[5]! += status === 'error' ? 1 : 0;
    daily.set(key, sums);
  }
  for (const [key, s] of daily) {
    const [day, user, token, model] = key.split('|');
    insertDaily.run(day, user, token, model, ...s);
  }
  for (let i = 0; i < TASKS; i++) {
    const at = now - Math.floor((i / TASKS) * DAYS * DAY_MS);
    insertTask.run(`task-${i}`, `req-${i}`, `user-${i % USERS}`, MODELS[i % MODELS.length], i % 20 === 0 ? 'failed' : 'success', at, at + 900, at + 10, at + 900, `tok-${i % USERS}`);
  }
})();
sqlite.close();
const filled = performance.now() - started;

const settings = loadSettings({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, ADMIN_TOKEN: ADMIN, LOG_LEVEL: 'silent', USAGE_RETENTION_DAYS: '0' });
const server = await startServer(settings, pino({ level: 'silent' }));
try {
  const created = await fetch(`${server.url}/admin/tokens`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, body: JSON.stringify({ user_id: 'user-7' }) });
  const token = ((await created.json()) as { token: string }).token;
  const since = new Date(now - 30 * DAY_MS).toISOString();
  const probes: [string, string, string][] = [
    ['GET /admin/usage (30 days by day)', `/admin/usage?from=${since}&group_by=day`, ADMIN],
    ['GET /admin/usage (30 days by user)', `/admin/usage?from=${since}&group_by=user`, ADMIN],
    ['GET /v1/usage (30 days by model)', `/v1/usage?from=${since}&group_by=model`, token],
    ['GET /admin/requests (first page)', '/admin/requests', ADMIN],
    ['GET /admin/requests (one user, page of 200)', '/admin/requests?user_id=user-7&limit=200', ADMIN],
    ['GET /v1/tasks (first page)', '/v1/tasks', token],
    ['GET /admin/tasks (failed, first page)', '/admin/tasks?status=failed', ADMIN],
  ];
  const lines = [`ledger: ${ROWS} rows, ${daily.size} daily sums and ${TASKS} tasks filled in ${(filled / 1000).toFixed(1)} s`];
  for (const [name, url, bearer] of probes) {
    const times: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t = performance.now();
      const res = await fetch(server.url + url, { headers: { authorization: `Bearer ${bearer}` } });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`${name}: ${res.status}`);
      times.push(performance.now() - t);
    }
    times.sort((a, b) => a - b);
    lines.push(`ledger ${name}: ${times[2]!.toFixed(1)} ms median of 5`);
  }
  process.stdout.write(lines.join('\n') + '\n');
} finally {
  await server.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
