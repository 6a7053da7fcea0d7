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

export interface RecordingUpstream {
  url: string;
  /** Every request received, in arrival order. */
  requests: RecordedRequest[];
  close(): Promise<void>;
}

export type UpstreamHandler = (req: RecordedRequest, res: http.ServerResponse) => void | Promise<void>;

/** An HTTP server on 127.0.0.1 (random port) that records each request before `handle` answers it. */
export async function startRecordingUpstream(handle: UpstreamHandler): Promise<RecordingUpstream> {
  const requests: RecordedRequest[] = [];
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
      requests.push(recorded);
      Promise.resolve(handle(recorded, res)).catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(String(err));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/** Answers with a JSON body. */
export function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}

/** Answers with bytes. */
export function sendBytes(res: http.ServerResponse, data: Buffer, contentType: string): void {
  res.writeHead(200, { 'content-type': contentType, 'content-length': String(data.length) }).end(data);
}
