import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { eventually } from './wait.ts';
import { freePort } from './free-port.ts';

const BIN_ROOT = '/usr/lib/postgresql';

/** The bin directory of the newest PostgreSQL installed under /usr/lib/postgresql (Debian's layout), if any. */
function postgresBinDir(): string | undefined {
  if (!fs.existsSync(BIN_ROOT)) return undefined;
  const versions = fs.readdirSync(BIN_ROOT).filter((v) => fs.existsSync(path.join(BIN_ROOT, v, 'bin', 'postgres'))).sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : path.join(BIN_ROOT, versions[0], 'bin');
}

/** PostgreSQL refuses to run as root: as root, the server runs as the `postgres` user. */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

/**
 * A PostgreSQL server of the test's own (initdb in a temporary directory, a free port, its socket
 * in that directory), which the test may kill and start again on the same data: never the
 * machine's service. `create` answers why it cannot run when the binaries are missing; with
 * REQUIRE_SERVICES=1 (CI) that is an error, never a skip.
 */
export class PrivatePostgres {
  private server: ChildProcess | undefined;
  private log = '';

  private readonly binDir: string;
  private readonly dir: string;
  readonly port: number;
  private readonly user: { uid: number; gid: number } | undefined;

  private constructor(
    binDir: string,
    dir: string,
    port: number,
    user: { uid: number; gid: number } | undefined,
  ) {
    this.binDir = binDir;
    this.dir = dir;
    this.port = port;
    this.user = user;
  }

  /** postgres://… of the server's `postgres` database. */
  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  static async create(): Promise<PrivatePostgres | { skip: string }> {
    const binDir = postgresBinDir();
    if (!binDir) {
      const reason = `no PostgreSQL binaries under ${BIN_ROOT}/*/bin (apt-get install postgresql); skipping the PostgreSQL outage tests`;
      if (process.env.REQUIRE_SERVICES === '1') throw new Error(reason);
      return { skip: reason };
    }
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gengate-pg-'));
    const user = serverUser();
    if (user) fs.chownSync(dir, user.uid, user.gid);
    execFileSync(path.join(binDir, 'initdb'), ['-D', path.join(dir, 'data'), '-U', 'postgres', '--auth=trust', '--no-sync', '--no-instructions'], {
      stdio: 'pipe',
      ...(user ?? {}),
    });
    return new PrivatePostgres(binDir, dir, await freePort(), user);
  }

  /** Everything the server wrote, for failure messages. */
  output(): string {
    return this.log;
  }

  /**
   * Starts the server unless it runs, and resolves once it accepts connections. Backends of a killed server
   * outlive it for a moment and hold its shared memory, which a new server refuses: it is
   * started again until it stays up.
   */
  async start(): Promise<void> {
    if (this.server) return;
    await eventually(`PostgreSQL to start on port ${this.port}`, () => this.startOnce(), 15_000);
    await eventually(`PostgreSQL to accept connections on port ${this.port}`, () => this.accepts(), 15_000);
  }

  private async startOnce(): Promise<boolean> {
    const server = spawn(path.join(this.binDir, 'postgres'), [
      '-D', path.join(this.dir, 'data'), '-p', String(this.port), '-k', this.dir,
      // Without fsync: a killed server's writes are still in the operating system's cache. Commits
      // stay synchronous: an asynchronous one could be lost with the server, as with no real one.
      '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off',
    ], { stdio: ['ignore', 'pipe', 'pipe'], ...(this.user ?? {}) });
    const start = this.log.length;
    server.stdout!.on('data', (d) => (this.log += d));
    server.stderr!.on('data', (d) => (this.log += d));
    const exited = once(server, 'exit').then(() => false);
    const ready = new Promise<boolean>((resolve) => {
      const onData = () => {
        if (/database system is ready to accept connections/.test(this.log.slice(start))) resolve(true);
      };
      server.stderr!.on('data', onData);
      server.stdout!.on('data', onData);
    });
    if (!(await Promise.race([ready, exited]))) return false;
    this.server = server;
    return true;
  }

  private async accepts(): Promise<boolean> {
    const client = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: 1000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('select 1');
      return true;
    } catch {
      return false;
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  /** Sends the signal to the server (SIGKILL: a crash; SIGINT: a fast shutdown) and waits for it to exit. */
  async stop(signal: NodeJS.Signals): Promise<void> {
    const server = this.server;
    if (!server || server.exitCode !== null || server.signalCode !== null) return;
    this.server = undefined;
    const exited = once(server, 'exit');
    server.kill(signal);
    await exited;
  }

  /** Stops the server and deletes its data. */
  async remove(): Promise<void> {
    await this.stop('SIGINT');
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
