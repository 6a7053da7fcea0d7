import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { eventually } from './wait.ts';
import { freePort } from './free-port.ts';

/**
 * A `redis-server` of the test's own on a free port, without persistence (a restart comes back
 * empty), that the test may kill, restart on the same port, stop and continue. Never the machine's.
 */
export class RedisServer {
  private child: ChildProcess | undefined;

  readonly port: number;

  private constructor(port: number) {
    this.port = port;
  }

  /** The server, or why it cannot run here (no redis-server); with REQUIRE_SERVICES=1 that is an error. */
  static async start(): Promise<RedisServer | { skip: string }> {
    const probe = spawnSync('redis-server', ['--version']);
    if (probe.error) {
      const reason = `redis-server not found (${probe.error.message}); skipping the Redis outage run`;
      if (process.env.REQUIRE_SERVICES === '1') throw new Error(reason);
      return { skip: reason };
    }
    const server = new RedisServer(await freePort());
    await server.restart();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts it (again) on its port and resolves once it answers PING. */
  async restart(): Promise<void> {
    const child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    this.child = child;
    await eventually(`redis-server on port ${this.port}`, () => this.answers(), 10_000);
  }

  /** Whether it answers PING now. */
  async answers(): Promise<boolean> {
    const client = new Redis(this.url, { lazyConnect: true, connectTimeout: 500, commandTimeout: 500, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on('error', () => undefined);
    try {
      await client.connect();
      return (await client.ping()) === 'PONG';
    } catch {
      return false;
    } finally {
      client.disconnect();
    }
  }

  /** Sends a signal: SIGKILL (then wait for the exit), SIGSTOP, SIGCONT. */
  async signal(signal: 'SIGKILL' | 'SIGSTOP' | 'SIGCONT'): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = signal === 'SIGKILL' ? once(child, 'exit') : undefined;
    child.kill(signal);
    await exited;
  }

  /** Kills it for good (continuing it first if it was stopped). */
  async close(): Promise<void> {
    await this.signal('SIGCONT');
    await this.signal('SIGKILL');
  }
}
