/**
 * An upstream MCP server for tests, made with the SDK's McpServer over its Streamable HTTP
 * transport on 127.0.0.1: `echo` (with annotations), `slow` (reports progress, then waits for
 * `release()` or its cancellation) and `hidden`. It keeps the headers of each request and the
 * cancellations it saw.
 */
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';

export interface FakeMcpUpstream {
  url: string;
  /** The headers of every request received. */
  headers: http.IncomingHttpHeaders[];
  /** How many `slow` calls were cancelled by their client. */
  cancelled: number;
  /** Lets the running `slow` calls answer. */
  release(): void;
  close(): Promise<void>;
}

function upstreamServer(fake: FakeMcpUpstream, released: { wait: Promise<void> }): McpServer {
  const server = new McpServer({ name: 'fake-upstream', version: '1' });
  server.registerTool('echo', {
    description: 'Echoes its text back.',
    inputSchema: { text: z.string() },
    annotations: { readOnlyHint: true, title: 'Echo' },
  }, async ({ text }) => ({ content: [{ type: 'text', text: `echo: ${text}` }] }));
  server.registerTool('slow', { description: 'Reports progress, then answers once released.', inputSchema: { steps: z.number().int() } }, async ({ steps }, extra) => {
    const token = extra._meta?.progressToken;
    for (let i = 1; i <= steps; i++) {
      if (token !== undefined) await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: steps, message: `step ${i}` } });
    }
    await new Promise<void>((resolve) => {
      extra.signal.addEventListener('abort', () => {
        fake.cancelled++;
        resolve();
      }, { once: true });
      void released.wait.then(resolve);
    });
    return { content: [{ type: 'text', text: 'slow done' }] };
  });
  server.registerTool('hidden', { description: 'Not in the allowed list.' }, async () => ({ content: [{ type: 'text', text: 'hidden' }] }));
  return server;
}

/** An MCP server on 127.0.0.1 over Streamable HTTP: a server from `make` per session; the headers of each request kept. */
export async function serveMcp(make: () => { connect(transport: StreamableHTTPServerTransport): Promise<void> }): Promise<{ url: string; headers: http.IncomingHttpHeaders[]; close(): Promise<void> }> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const headers: http.IncomingHttpHeaders[] = [];
  const server = http.createServer(async (req, res) => {
    headers.push(req.headers);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    const id = req.headers['mcp-session-id'];
    let transport = typeof id === 'string' ? transports.get(id) : undefined;
    if (!transport && req.method === 'POST' && isInitializeRequest(body)) {
      const created = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (sid) => void transports.set(sid, created) });
      await make().connect(created);
      transport = created;
    }
    if (!transport) {
      res.writeHead(404).end();
      return;
    }
    await transport.handleRequest(req, res, body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    headers,
    close: async () => {
      for (const t of transports.values()) await t.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export async function startFakeMcpUpstream(): Promise<FakeMcpUpstream> {
  let release: () => void = () => undefined;
  const released = { wait: new Promise<void>((resolve) => (release = resolve)) };
  const fake: FakeMcpUpstream = { url: '', headers: [], cancelled: 0, release: () => release(), close: async () => undefined };
  const served = await serveMcp(() => upstreamServer(fake, released));
  Object.assign(fake, {
    url: served.url,
    headers: served.headers,
    close: async () => {
      release();
      await served.close();
    },
  });
  return fake;
}
