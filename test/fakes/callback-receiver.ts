import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One POST the receiver got. */
export interface ReceivedCallback {
  /** 1 for the first request this receiver got. */
  n: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** The body parsed as JSON. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
  /** The webhook-id header. */
  id: string;
  receivedAt: number;
  /** How the receiver answered it. */
  answer: ReceiverAnswer;
}

/**
 * How to answer a request: a status (default 200) after an optional delay, or `hang-up`
 * (the connection is destroyed without an answer).
 */
export type ReceiverAnswer = { status?: number; delayMs?: number } | 'hang-up';

/** Picks the answer of each request; answers 200 when it returns undefined. */
export type ReceiverScript = (request: ReceivedCallback) => ReceiverAnswer | undefined;

interface Waiter {
  n: number;
  resolve: (request: ReceivedCallback) => void;
}

/**
 * A callback receiver on 127.0.0.1: records every request, answers as the test scripts, can
 * refuse connections (stop listening) and accept them again on the same port, and lets a
 * test await its n-th request.
 */
export class CallbackReceiver {
  readonly requests: ReceivedCallback[] = [];
  private script: ReceiverScript = () => undefined;
  private readonly queued: ReceiverAnswer[] = [];
  private waiters: Waiter[] = [];
  private readonly delayTimers = new Set<NodeJS.Timeout>();
  private port = 0;

  private readonly server: http.Server;

  private constructor(server: http.Server) {
    this.server = server;
  }

  static async start(): Promise<CallbackReceiver> {
    const server = http.createServer();
    const receiver = new CallbackReceiver(server);
    server.on('request', (req, res) => receiver.onRequest(req, res));
    await receiver.listen();
    return receiver;
  }

  /** The receiver's address, e.g. http://127.0.0.1:40123/hook. */
  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  /** Answers the next requests with these, in order, before the script takes over again. */
  answerNext(...answers: ReceiverAnswer[]): void {
    this.queued.push(...answers);
  }

  /** Answers every later request (once the queued answers are used) through `script`. */
  answerWith(script: ReceiverScript): void {
    this.script = script;
  }

  /** Resolves with the n-th request (1-based) once it has arrived; rejects after `timeoutMs`. */
  nth(n: number, timeoutMs = 10_000): Promise<ReceivedCallback> {
    const got = this.requests[n - 1];
    if (got) return Promise.resolve(got);
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        n,
        resolve: (request) => {
          clearTimeout(timer);
          resolve(request);
        },
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new Error(`request #${n} did not arrive within ${timeoutMs} ms (got ${this.requests.length})`));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  /** Resolves with the first request (already received or later) for which `match` holds. */
  async first(match: (request: ReceivedCallback) => boolean, timeoutMs = 10_000): Promise<ReceivedCallback> {
    const deadline = Date.now() + timeoutMs;
    for (let n = 1; ; n++) {
      const request = await this.nth(n, Math.max(1, deadline - Date.now()));
      if (match(request)) return request;
    }
  }

  /** Stops listening: connections are refused (and kept-alive ones closed) until accept(). */
  async refuse(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  /** Listens again on the same port. */
  async accept(): Promise<void> {
    await this.listen();
  }

  async close(): Promise<void> {
    for (const timer of this.delayTimers) clearTimeout(timer);
    if (this.server.listening) await this.refuse();
  }

  private async listen(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.port, '127.0.0.1', () => {
        this.server.off('error', reject);
        this.port = (this.server.address() as AddressInfo).port;
        resolve();
      });
    });
  }

  private onRequest(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      const request: ReceivedCallback = {
        n: this.requests.length + 1,
        headers: req.headers,
        body,
        json,
        id: String(req.headers['webhook-id'] ?? ''),
        receivedAt: Date.now(),
        answer: {},
      };
      const answer = this.queued.shift() ?? this.script(request) ?? {};
      request.answer = answer;
      this.requests.push(request);
      if (answer === 'hang-up') req.socket.destroy();
      else {
        const respond = () => {
          if (!res.destroyed) res.writeHead(answer.status ?? 200, { 'content-type': 'text/plain' }).end('ok');
        };
        if (answer.delayMs) {
          const timer = setTimeout(() => {
            this.delayTimers.delete(timer);
            respond();
          }, answer.delayMs);
          this.delayTimers.add(timer);
        } else respond();
      }
      // Waiters are told after the answer is chosen, so a test that then scripts the next
      // answers cannot change this one.
      const due = this.waiters.filter((w) => w.n <= this.requests.length);
      this.waiters = this.waiters.filter((w) => w.n > this.requests.length);
      for (const waiter of due) waiter.resolve(this.requests[waiter.n - 1]!);
    });
  }
}
