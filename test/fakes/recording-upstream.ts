import http from 'node:http';
import type { AddressInfo } from 'node:net';

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

  /** Answers one recorded request. */
  protected abstract handle(req: RecordedRequest, res: http.ServerResponse): void | Promise<void>;

  /** Starts the server; resolves with the fake once it listens. */
  async listen(): Promise<this> {
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const url = new URL(req.url!, 'http://fake');
        const body = Buffer.concat(chunks);
        let json: unknown;
        if ((req.headers['content-type'] ?? '').includes('json') && body.length > 0) {
          try {
            json = JSON.parse(body.toString('utf8'));
          } catch {
            json = undefined;
          }
        }
        const recorded: RecordedRequest = { method: req.method!, path: url.pathname, query: Object.fromEntries(url.searchParams), target: req.url!, headers: req.headers, body, ...(json !== undefined ? { json } : {}) };
        this.requests.push(recorded);
        const i = this.injected.findIndex((f) => f.method === recorded.method && recorded.path.startsWith(f.path));
        const answered = i >= 0 ? Promise.resolve(sendReply(res, this.injected.splice(i, 1)[0]!.reply)) : Promise.resolve().then(() => this.handle(recorded, res));
        answered.catch((err: unknown) => {
          if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
          res.end(String(err));
        });
      });
    });
    this.server = server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return this;
  }

  /** Requests to one path, in order. */
  requestsTo(path: string): RecordedRequest[] {
    return this.requests.filter((r) => r.path === path);
  }

  /** Answers the next request of `method` under the path prefix `path` with `reply` instead (a 429, a 503). */
  inject(method: string, path: string, reply: Reply): void {
    this.injected.push({ method, path, reply });
  }

  close(): Promise<void> {
    const server = this.server;
    if (!server) return Promise.resolve();
    server.closeAllConnections();
    return new Promise((resolve) => server.close(() => resolve()));
  }
}

/** A fake upstream whose answers are values: `route` gives a Reply or the bytes for each request. */
export abstract class ReplyingUpstream extends RecordingUpstream {
  protected abstract route(req: RecordedRequest): Promise<Reply | Buffer> | Reply | Buffer;

  protected async handle(req: RecordedRequest, res: http.ServerResponse): Promise<void> {
    sendReply(res, await this.route(req));
  }
}

/** The fields and files of a multipart/form-data request. */
export function formData(req: RecordedRequest): Promise<FormData> {
  return new Request('http://fake/', { method: 'POST', headers: { 'content-type': String(req.headers['content-type']) }, body: new Uint8Array(req.body) }).formData();
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
