import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';

export interface BenchServer {
  url: string;
  pid: number;
  adminToken: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** The node arguments of `npm start` (its flags, dist/cli.js serve), read from package.json. */
function startScriptArgs(): string[] {
  const start = (JSON.parse(fs.readFileSync('package.json', 'utf8')) as { scripts: { start: string } }).scripts.start;
  return start.split(/\s+/).slice(1);
}

/**
 * Starts `gengate serve` as its own process (as an operator would) on a free port with a fresh
 * DATA_DIR; with `built`, the compiled JavaScript of `npm run build` runs as `npm start` runs it;
 * with `core`, pinned to that CPU core (taskset).
 */
export async function startBenchServer(env: Record<string, string> = {}, opts: { built?: boolean; core?: string } = {}): Promise<BenchServer> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gengate-bench-'));
  const adminToken = 'bench-admin-token';
  const args = opts.built ? startScriptArgs() : ['--import', 'tsx', 'src/cli.ts', 'serve'];
  const [command, ...commandArgs] = opts.core === undefined ? [process.execPath, ...args] : ['taskset', '-c', opts.core, process.execPath, ...args];
  const child = spawn(command!, commandArgs, {
    env: { PATH: process.env.PATH!, PORT: '0', DATA_DIR: dataDir, ADMIN_TOKEN: adminToken, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await listeningUrl(child, 'server');
  return {
    url,
    pid: child.pid!,
    adminToken,
    child,
    stop: () => new Promise((resolve) => {
      child.on('exit', () => {
        fs.rmSync(dataDir, { recursive: true, force: true });
        resolve();
      });
      child.kill('SIGTERM');
    }),
  };
}

export async function createToken(server: BenchServer, userId: string): Promise<string> {
  const res = await fetch(`${server.url}/admin/tokens`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ user_id: userId }),
  });
  return ((await res.json()) as { token: string }).token;
}

/**
 * Seconds of a process's CPU counters from /proc/<pid>/stat (USER_HZ is 100 on Linux): utime and
 * stime (fields 14 and 15), and with `endedChildren` cutime and cstime (16 and 17) too.
 */
function statCpuSeconds(pid: number, endedChildren: boolean): number {
  // The fields after the command's name, which may hold spaces: utime is the 12th of them.
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return fields.slice(11, endedChildren ? 15 : 13).reduce((ticks, field) => ticks + Number(field), 0) / 100;
}

/** CPU time (user and system) a process has used so far, in seconds, from /proc. */
export function cpuSeconds(pid: number): number {
  return statCpuSeconds(pid, false);
}

/**
 * CPU time (user and system) in seconds of every process whose command is `command` (postgres,
 * redis-server), from /proc, with that of their children that have ended: a server's processes
 * come and go (PostgreSQL's autovacuum workers), and what an ended one used is in its parent's
 * cutime and cstime.
 */
export function commandCpuSeconds(command: string): number {
  let sum = 0;
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === command) sum += statCpuSeconds(Number(pid), true);
    } catch {
      // the process ended meanwhile
    }
  }
  return sum;
}

/** The machine's CPU time so far in seconds: busy (every state but idle and iowait) and in all, from /proc/stat. */
export function machineCpuSeconds(): { busy: number; total: number } {
  const [user, nice, system, idle, iowait, irq, softirq, steal] = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number) as number[];
  const busy = user! + nice! + system! + irq! + softirq! + steal!;
  return { busy: busy / 100, total: (busy + idle! + iowait!) / 100 };
}

/** Nanoseconds a process's threads spent, from /proc/<pid>/task/<tid>/schedstat (Linux). */
export interface ThreadTimes {
  /** The main thread (the event loop): on a CPU, and runnable but waiting for one. */
  mainCpu: number;
  mainWaiting: number;
  /** Every other thread on a CPU (a thread that ends between two readings takes its time with it). */
  othersCpu: number;
}

export function threadTimes(pid: number): ThreadTimes {
  const times: ThreadTimes = { mainCpu: 0, mainWaiting: 0, othersCpu: 0 };
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    let oncpu: number;
    let waiting: number;
    try {
      [oncpu, waiting] = fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ').map(Number) as [number, number];
    } catch {
      continue; // the thread ended meanwhile
    }
    if (tid === String(pid)) [times.mainCpu, times.mainWaiting] = [oncpu, waiting];
    else times.othersCpu += oncpu;
  }
  return times;
}

/** Resident set size of a process in MB, from /proc. */
export function rssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return kb / 1024;
}

const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/**
 * Runs `bench` with the env of a server on PostgreSQL in a schema of its own, dropped
 * afterwards; prints why and skips when PostgreSQL does not answer, or in a quick run (BENCH_QUICK=1)
 * unless `inQuickRun`.
 */
export async function onPostgres(name: string, bench: (env: Record<string, string>) => Promise<void>, opts: { inQuickRun?: boolean } = {}): Promise<void> {
  if (process.env.BENCH_QUICK === '1' && !opts.inQuickRun) {
    process.stdout.write(`${name} (PostgreSQL): skipped in the quick run (npm run bench -- --full includes it)\n`);
    return;
  }
  const schema = `bench_${process.pid}`;
  const admin = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 2000 });
  try {
    await admin.connect();
  } catch (err) {
    process.stdout.write(`${name} (PostgreSQL): skipped, ${PG_URL} not reachable (${(err as Error).message})\n`);
    return;
  }
  try {
    await bench({ DATABASE_URL: PG_URL, DATABASE_SCHEMA: schema });
  } finally {
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  }
}

/** The chat benchmarks' upstream: the test fake, in a process of its own (`bench/chat.ts upstream`) so it shares no event loop with the gateway. */
export async function startChatUpstream(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/chat.ts', 'upstream'], { stdio: ['ignore', 'pipe', 'inherit'] });
  return { url: await listeningUrl(child, 'upstream'), child };
}

/** The URL a started process prints (`… listening on <url>`) once it listens; rejects if it exits first. */
export function listeningUrl(child: ChildProcess, name: string): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const match = /listening on (\S+)/.exec(out);
      if (match) resolve(match[1]!);
    });
    child.on('exit', (code) => reject(new Error(`${name} exited with ${code}`)));
  });
}

// ---- wrk (Debian's package `wrk`), the load generator of the hot-path and task-pipeline benchmarks ----

/** Throws, saying how to install it, when wrk is not on the PATH. */
export function requireWrk(): void {
  if (spawnSync('wrk', ['-v']).error) throw new Error('wrk is missing: install it (Debian: apt-get install -y wrk)');
}

/** Writes a wrk script that POSTs `body` as JSON with `headers`; answers its path (the caller removes it). */
export function wrkPostScript(name: string, body: unknown, headers: Record<string, string>): string {
  const script = path.join(os.tmpdir(), `gengate-bench-${process.pid}-${name.replace(/\W/g, '-')}.lua`);
  const lines = [`wrk.method = "POST"`, `wrk.body = ${JSON.stringify(JSON.stringify(body))}`, `wrk.headers["content-type"] = "application/json"`];
  for (const [header, value] of Object.entries(headers)) lines.push(`wrk.headers[${JSON.stringify(header)}] = ${JSON.stringify(value)}`);
  fs.writeFileSync(script, `${lines.join('\n')}\n`);
  return script;
}

/** From wrk's output: the requests it completed and how many of them did not answer 2xx. */
export function wrkCounts(out: string): { requests: number; non2xx: number } {
  return { requests: Number(/(\d+) requests in/.exec(out)![1]), non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0) };
}
