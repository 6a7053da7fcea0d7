import { setFlagsFromString } from 'node:v8';
import { Worker } from 'node:worker_threads';
import { SQLITE_DRIVER_PATH } from './sqlite-driver.ts';

/** One statement run once per row of parameters. */
export interface RepeatedStatement {
  sql: string;
  rows: readonly (readonly unknown[])[];
}

/**
 * Writes that no caller waits on (the usage ledger's call rows), run in one transaction each on a
 * connection of their own in a worker thread: better-sqlite3 works synchronously, and a batch's
 * insert and commit would otherwise stop the event loop for a millisecond or more. SQLite lets one
 * writer in at a time; the other waits (busy_timeout) for a transaction this short.
 */
export interface BackgroundWriter {
  /** Runs the statements, each for each of its rows, in one transaction; resolves once it committed. */
  write(statements: readonly RepeatedStatement[]): Promise<void>;
  /** Waits for the writes under way and ends the thread; later writes fail. */
  close(): Promise<void>;
}

/**
 * How far below the event loop's priority the writer thread runs (nice steps): it then gets about a
 * tenth of a core the event loop also wants.
 */
export const WRITER_NICE_STEPS = 10;

/**
 * The longest the writer runs a transaction before it gives the core back for WRITER_PAUSE_MS.
 * Linux's scheduler (EEVDF, from 6.6) lets a thread that got the core keep it for a whole slice
 * (0.75 ms times 1 + log2 of the cores, up to 3 ms) whatever its nice value, and an event loop woken
 * meanwhile waits for it: a sleep is what hands the core over at once.
 */
export const WRITER_RUN_MS = 0.2;
/** The writer's sleep between runs: long enough for the event loop to be scheduled, no CPU spent. */
export const WRITER_PAUSE_MS = 0.02;
/**
 * WAL pages after which the writer's commit copies them into the database (SQLite's default is
 * 1,000). A checkpoint runs in one go: at the default the writer's runs that held it were 1 to 2.4
 * ms long, at this size 0.6 ms at most, for the same CPU per row.
 */
export const WRITER_AUTOCHECKPOINT_PAGES = 100;

/** The worker's code: plain JavaScript, so it runs whatever loads the server's TypeScript. */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
// On a core the calls keep busy, rows no caller waits on take a tenth of it, not half (the pauses
// of giveWay, below, keep a transaction from holding a call back). Only on Linux, where each
// thread has a nice value of its own (elsewhere this would lower the whole process). A lowering
// needs no privilege; where a sandbox refuses it all the same, the writer writes at the event
// loop's priority.
if (process.platform === 'linux') {
  const os = require('node:os');
  try {
    os.setPriority(Math.min(19, os.getPriority() + ${WRITER_NICE_STEPS}));
  } catch {}
}
const SQLite = require(workerData.driver);
const db = new SQLite(workerData.file);
db.pragma('busy_timeout = 5000');
db.pragma('synchronous = NORMAL');
db.pragma('foreign_keys = ON');
db.pragma('wal_autocheckpoint = ${WRITER_AUTOCHECKPOINT_PAGES}');
const statements = new Map();
const statement = (sql) => {
  let prepared = statements.get(sql);
  if (!prepared) statements.set(sql, (prepared = db.prepare(sql)));
  return prepared;
};
const pause = new Int32Array(new SharedArrayBuffer(4));
let runSince = 0;
const giveWay = () => {
  if (performance.now() - runSince < ${WRITER_RUN_MS}) return;
  Atomics.wait(pause, 0, 0, ${WRITER_PAUSE_MS});
  runSince = performance.now();
};
const write = db.transaction((statements) => {
  for (const { sql, rows } of statements) {
    const prepared = statement(sql);
    for (const row of rows) {
      prepared.run(row);
      giveWay();
    }
  }
});
parentPort.on('message', (message) => {
  if (message.close) {
    db.close();
    parentPort.close();
    return;
  }
  try {
    runSince = performance.now();
    write.immediate(JSON.parse(message.statements));
    parentPort.postMessage({ id: message.id });
  } catch (err) {
    parentPort.postMessage({ id: message.id, error: String(err && err.message || err) });
  }
});
`;

/** MB per semi-space of the writer thread's young generation: a batch's rows die young in far less. */
export const WRITER_SEMI_SPACE_MB = 1;

/**
 * What this process was started with for one of V8's semi-space flags (`--max-semi-space-size`,
 * `--min-semi-space-size`), on its command line or in NODE_OPTIONS (the command line wins); 0,
 * V8's default, when neither names it.
 */
function semiSpaceFlagMb(bound: 'max' | 'min'): number {
  const pattern = new RegExp(`--${bound}[-_]semi[-_]space[-_]size[= ](\\d+)`, 'g');
  const given = [...`${process.env.NODE_OPTIONS ?? ''} ${process.execArgv.join(' ')}`.matchAll(pattern)];
  return given.length > 0 ? Number(given.at(-1)![1]) : 0;
}

function setSemiSpaceMb(max: number, min: number): void {
  setFlagsFromString(`--max-semi-space-size=${max}`);
  setFlagsFromString(`--min-semi-space-size=${min}`);
}

/**
 * Starts a thread whose isolate has a young generation of WRITER_SEMI_SPACE_MB. V8's flags are the
 * process's and a worker's resourceLimits give way to them, so the young generation `npm start`
 * sets for the event loop's calls (16 MB a semi-space) would be the writer's too: some 25 MB
 * resident it never needs. An isolate reads the flags once, when it is made on its thread: they
 * are lowered until then and set back to the process's own.
 */
export function startWithSmallYoungGeneration(source: string, workerData: unknown): Worker {
  const own = { max: semiSpaceFlagMb('max'), min: semiSpaceFlagMb('min') };
  let restored = false;
  const restore = () => {
    if (restored) return;
    restored = true;
    setSemiSpaceMb(own.max, own.min);
  };
  setSemiSpaceMb(WRITER_SEMI_SPACE_MB, WRITER_SEMI_SPACE_MB);
  let thread: Worker;
  try {
    thread = new Worker(source, { eval: true, workerData });
  } catch (err) {
    restore();
    throw err;
  }
  // 'online' once its isolate runs; 'error' or 'exit' when it never got there.
  thread.once('online', restore).once('error', restore).once('exit', restore);
  return thread;
}

/** A write sent to the thread and not yet answered: close() waits on `written`. */
interface Pending {
  written: Promise<void>;
  resolve: () => void;
  reject: (err: Error) => void;
}

/** A BackgroundWriter on the SQLite file `file`; its thread starts with the first write. */
export function sqliteBackgroundWriter(file: string): BackgroundWriter {
  let worker: Worker | undefined;
  let nextId = 0;
  const pending = new Map<number, Pending>();

  const failAll = (err: Error) => {
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  };
  const started = (): Worker => {
    if (worker) return worker;
    const thread = startWithSmallYoungGeneration(WORKER_SOURCE, { driver: SQLITE_DRIVER_PATH, file });
    thread.on('message', (message: { id: number; error?: string }) => {
      const p = pending.get(message.id);
      pending.delete(message.id);
      // The thread keeps the process alive only while it has writes to answer.
      if (pending.size === 0) thread.unref();
      if (message.error === undefined) p?.resolve();
      else p?.reject(new Error(message.error));
    });
    thread.on('error', (err) => failAll(err));
    thread.on('exit', (code) => {
      // A thread that ended (closed, or crashed) is started again by the next write.
      if (worker === thread) worker = undefined;
      failAll(new Error(`the background SQLite writer ended (exit ${code})`));
    });
    return (worker = thread);
  };

  let closed = false;
  return {
    write(statements) {
      // After close the store is going away (its directory may be deleted next): no thread starts again.
      if (closed) return Promise.reject(new Error('the background SQLite writer is closed'));
      const id = nextId++;
      let settle!: Omit<Pending, 'written'>;
      const written = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
      pending.set(id, { ...settle, written });
      try {
        const thread = started();
        thread.ref();
        // As JSON text: a string crosses to the thread at the cost of a copy, objects at the cost of a structured clone.
        thread.postMessage({ id, statements: JSON.stringify(statements) });
      } catch (err) {
        pending.delete(id);
        settle.reject(err as Error);
      }
      return written;
    },
    async close() {
      closed = true;
      await Promise.allSettled([...pending.values()].map((p) => p.written));
      const thread = worker;
      if (!thread) return;
      worker = undefined;
      const exited = new Promise((resolve) => thread.once('exit', resolve));
      thread.ref();
      thread.postMessage({ close: true });
      await exited;
    },
  };
}
