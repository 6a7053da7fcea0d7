import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';

/** A file part of a multipart/form-data request. */
export interface FilePart {
  field: string;
  fileName: string;
  type: string;
  data: Buffer;
}

/** One request a fake upstream received, as it arrived. */
export interface RecordedRequest {
  method: string;
  /** Path without the query string. */
  path: string;
  query: Record<string, string>;
  /** The raw request target (path and query as sent), for signature checks. */
  target: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** The body parsed as JSON when it is JSON. */
  json?: unknown;
  /** The text fields of a multipart/form-data body, as name and value in order. */
  fields?: [string, string][];
  /** The file parts of a multipart/form-data body, in order. */
  files?: FilePart[];
}

/** An answer as a value: a JSON body (a string goes as it is) with its status and headers. */
export interface Reply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/**
 * The base of every fake upstream: an HTTP server on 127.0.0.1 (random port) that records each
 * request before `handle` answers it. Failures injected with `inject` are answered first.
 */
export abstract class RecordingUpstream {
  /** Every request received, in arrival order. */
  readonly requests: RecordedRequest[] = [];
  url = '';
  private server?: http.Server;
  private readonly injected: { method: string; path: string; reply: Reply }[] = [];
  private readonly waiters: { check: () => boolean; resolve: () => void }[] = [];

  /** Answers one recorded request. */
  protected abstract handle(req: RecordedRequest, res: http.ServerResponse): void | Promise<void>;

  /** Takes over a connection upgrade (a WebSocket); without it upgrades are not answered. */
  protected upgrade?(req: http.IncomingMessage, socket: Duplex, head: Buffer): void;

  /** Starts the server; resolves with the fake once it listens. */
  async listen(): Promise<this> {
    const server = http.createServer((req, res) => {
      this.receive(req).then((recorded) => {
        const i = this.injected.findIndex((f) => f.method === recorded.method && recorded.path.startsWith(f.path));
        return i >= 0 ? sendReply(res, this.injected.splice(i, 1)[0]!.reply) : this.handle(recorded, res);
      }).catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(String(err));
      });
    });
    if (this.upgrade) server.on('upgrade', (req, socket, head) => this.upgrade!(req, socket, head));
    this.server = server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return this;
  }

  /** Requests to one path (of one method when given), in order. */
  requestsTo(path: string, method?: string): RecordedRequest[] {
    return this.requests.filter((r) => r.path === path && (method === undefined || r.method === method));
  }

  /** Answers the next request of `method` under the path prefix `path` with `reply` instead (a 429, a 503). */
  inject(method: string, path: string, reply: Reply): void {
    this.injected.push({ method, path, reply });
  }

  /** Resolves once `check` holds; checked after every request and whenever the fake calls notify(). */
  until(check: () => boolean): Promise<void> {
    if (check()) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ check, resolve }));
  }

  close(): Promise<void> {
    const server = this.server;
    if (!server) return Promise.resolve();
    server.closeAllConnections();
    return new Promise((resolve) => server.close(() => resolve()));
  }

  /** Wakes the until() callers whose check now holds. */
  protected notify(): void {
    for (const waiter of [...this.waiters]) {
      if (waiter.check()) {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    }
  }

  /** Reads and records a request: its body, parsed when it is JSON or a form. */
  private async receive(req: http.IncomingMessage): Promise<RecordedRequest> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url!, 'http://fake');
    const body = Buffer.concat(chunks);
    const contentType = req.headers['content-type'] ?? '';
    const recorded: RecordedRequest = { method: req.method!, path: url.pathname, query: Object.fromEntries(url.searchParams), target: req.url!, headers: req.headers, body };
    if (contentType.includes('json') && body.length > 0) {
      try {
        recorded.json = JSON.parse(body.toString('utf8'));
      } catch {
        // Kept as bytes: the fake answers a malformed body as its upstream does.
      }
    }
    if (contentType.startsWith('multipart/form-data')) {
      const form = await new Request('http://fake/', { method: 'POST', headers: { 'content-type': contentType }, body: new Uint8Array(body) }).formData();
      recorded.fields = [];
      recorded.files = [];
      for (const [field, value] of form.entries()) {
        if (typeof value === 'string') recorded.fields.push([field, value]);
        else recorded.files.push({ field, fileName: value.name, type: value.type, data: Buffer.from(await value.arrayBuffer()) });
      }
    }
    this.requests.push(recorded);
    this.notify();
    return recorded;
  }
}

/** A fake upstream whose answers are values: `route` gives a Reply or the bytes for each request. */
export abstract class ReplyingUpstream extends RecordingUpstream {
  protected abstract route(req: RecordedRequest): Promise<Reply | Buffer> | Reply | Buffer;

  protected async handle(req: RecordedRequest, res: http.ServerResponse): Promise<void> {
    sendReply(res, await this.route(req));
  }
}

/** Answers with a JSON body. */
export function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}

/** Answers with bytes. */
export function sendBytes(res: http.ServerResponse, data: Buffer, contentType: string): void {
  res.writeHead(200, { 'content-type': contentType, 'content-length': String(data.length) }).end(data);
}

/** Answers with a Reply or with bytes. */
function sendReply(res: http.ServerResponse, reply: Reply | Buffer): void {
  if (Buffer.isBuffer(reply)) return sendBytes(res, reply, 'application/octet-stream');
  res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers }).end(typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body));
}
