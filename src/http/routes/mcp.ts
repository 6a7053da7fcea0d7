import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ApiError } from '../../core/errors.ts';
import type { AppServices } from '../services.ts';

const security = [{ bearer: [] }];
const ServerParams = Type.Object({ server: Type.String({ minLength: 1, maxLength: 64 }) });

/** The request as the MCP transport reads it (a Web Request); its body was parsed by the app. */
function webRequest(request: FastifyRequest): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  return new Request(`http://gateway${request.url}`, { method: request.method, headers });
}

/** Writes the transport's answer (JSON, or an event stream that lasts) to the socket, ending it when the client goes. */
async function sendWebResponse(reply: FastifyReply, response: Response): Promise<void> {
  reply.hijack();
  const raw = reply.raw;
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) headers[name] = typeof value === 'number' ? String(value) : value;
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  raw.writeHead(response.status, headers);
  if (!response.body) {
    raw.end();
    return;
  }
  const reader = response.body.getReader();
  raw.once('close', () => void reader.cancel().catch(() => undefined));
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      raw.write(value);
    }
  } catch {
    // The client went away, or the transport closed the stream.
  } finally {
    raw.end();
  }
}

/**
 * /mcp (the gateway's tools and every upstream server's) and /mcp/<server> (one upstream's), MCP
 * Streamable HTTP: POST JSON-RPC, GET the server's event stream, DELETE ends the session.
 */
export const mcpRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  const serve = async (request: FastifyRequest, reply: FastifyReply, scope: string) => {
    const response = await services.mcp.handle(webRequest(request), request.ctx.principal, scope, request.body);
    await sendWebResponse(reply, response);
  };
  const known = (server: string): string => {
    if (!services.mcp.hasServer(server)) throw new ApiError('route_not_found', `no MCP server ${server}`, 'server');
    return server;
  };
  const summary = 'MCP Streamable HTTP: POST a JSON-RPC message, GET the event stream, DELETE the session';
  for (const method of ['POST', 'GET', 'DELETE'] as const) {
    app.route({ method, url: '/mcp', schema: { tags: ['mcp'], summary, security }, handler: (request, reply) => serve(request, reply, '') });
    app.route({
      method,
      url: '/mcp/:server',
      schema: { tags: ['mcp'], summary: `${summary}, of one upstream server`, security, params: ServerParams },
      handler: (request, reply) => serve(request, reply, known((request.params as { server: string }).server)),
    });
  }
};
