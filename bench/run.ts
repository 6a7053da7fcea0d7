// Runs the benchmark scripts in bench/ one after another, each in its own process, and prints
// what each measures and how long it took. By default a quick run: shorter loads and smaller
// counts, SQLite only; `npm run bench -- --full` runs every script at full size and adds the
// PostgreSQL runs. Names after the options pick scripts by prefix: `npm run bench -- chat`.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';

const args = process.argv.slice(2);
const full = args.includes('--full');
const only = args.filter((a) => !a.startsWith('--'));

/** The quick run's sizes; a variable already set in the environment wins. */
const QUICK_SIZES: Record<string, string> = {
  BENCH_QUICK: '1',
  BENCH_DURATION_S: '3',
  BENCH_PROBE_CALLS: '500',
  BENCH_ASSET_MB: '50',
  BENCH_CALLBACK_STREAM_TASKS: '300',
  BENCH_CALLBACK_BACKLOG_TASKS: '500',
  BENCH_REALTIME_SESSIONS: '1000',
  BENCH_REALTIME_USERS: '20',
  BENCH_REALTIME_TASKS: '50',
  BENCH_LEDGER_ROWS: '100000',
  BENCH_TASKS: '10000',
};

/** A script's leading comment, the description of what it measures. */
function descriptionOf(script: string): string {
  const lines = fs.readFileSync(`bench/${script}`, 'utf8').split('\n');
  const comment = lines.slice(0, lines.findIndex((l) => !l.startsWith('//'))).map((l) => l.replace(/^\/\/ ?/, ''));
  return comment.join(' ').replace(/\s+/g, ' ').trim() || '(no description)';
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(0)} s`;

const scripts = fs.readdirSync('bench')
  .filter((f) => f.endsWith('.ts') && f !== 'run.ts' && f !== 'support.ts')
  .filter((f) => only.length === 0 || only.some((name) => f.startsWith(name)))
  .sort();
process.stdout.write(full
  ? `bench: full run of ${scripts.length} scripts, with PostgreSQL where it answers (10 minutes or more)\n`
  : `bench: quick run of ${scripts.length} scripts, shorter loads, SQLite only (about 4 minutes on 2 cores); \`npm run bench -- --full\` runs everything at full size\n`);
const env = full ? process.env : { ...QUICK_SIZES, ...process.env };
const started = Date.now();
const failed: string[] = [];
for (const script of scripts) {
  process.stdout.write(`\n== bench/${script}: ${descriptionOf(script)}\n`);
  const scriptStarted = Date.now();
  const result = spawnSync(process.execPath, ['--import', 'tsx', `bench/${script}`], { stdio: 'inherit', env });
  process.stdout.write(`== bench/${script} took ${seconds(Date.now() - scriptStarted)}${result.status === 0 ? '' : `, and failed (exit ${result.status})`}\n`);
  if (result.status !== 0) failed.push(script);
}
process.stdout.write(`\nbench: ${scripts.length} scripts in ${seconds(Date.now() - started)}${failed.length ? `; failed: ${failed.join(', ')}` : ''}\n`);
process.exitCode = failed.length ? 1 : 0;
