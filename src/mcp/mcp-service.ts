/**
 * The gateway as an MCP server (Streamable HTTP, the SDK's transport and low-level server): the
 * sessions of /mcp and /mcp/<server>, the tools each caller may see (the gateway's own and the
 * upstream servers'), their calls, each a ledger row and a trace span.
 *
 * A session belongs to the token that opened it; the store keeps which token and which server
 * (none for /mcp) and whether it ended, and is read on each request, so every instance answers
 * 404 to another token or an ended session. A live session this instance does not hold (opened
 * on another instance, or dropped here after idling) is taken up here for its token: its
 * transport is set up anew under the same id.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Principal } from '../auth/tokens.ts';
import { GATEWAY_MCP_SERVER } from '../config/settings.ts';
import { ApiError } from '../core/errors.ts';
import { newId } from '../core/ids.ts';
import type { LimitsService } from '../limits/limits-service.ts';
import type { OutboundUrlPolicy } from '../core/outbound-urls.ts';
import type { McpRepo } from '../storage/repos/mcp-repo.ts';
import type { McpSessionRow } from '../storage/schema.ts';
import { inSpan } from '../telemetry/tracing.ts';
import { errorResult, type CallOutcome, type GatewayTools } from './gateway-tools.ts';
import { loadServerSdk, type ServerSdk } from './sdk.ts';
import { allowedBy, storedPatterns } from './tool-patterns.ts';
import type { UpstreamConnection, UpstreamServers } from './upstream-servers.ts';

/** `<server>__<tool>`: an upstream tool on /mcp, and any tool in permission patterns. */
const SEPARATOR = '__';
/** A session unused this long is let go here; its store row keeps it alive for its token. */
const IDLE_MS = 30 * 60_000;

export interface McpServiceDeps {
  gateway: GatewayTools;
  upstream: UpstreamServers;
  repo: McpRepo;
  limits: LimitsService;
  /** What a Responses request's `server_url` must obey (docs/security.md). */
  urls: OutboundUrlPolicy;
  logger: Logger;
}

/** A session this instance serves. */
interface LocalSession {
  transport: WebStandardStreamableHTTPServerTransport;
  tokenId: string;
  scope: string;
  usedAt: number;
}

/** A tool a call names: the gateway's, an upstream server's (through its connection), or none. */
export type ToolTarget =
  | { kind: 'gateway' }
  | { kind: 'upstream'; server: string; tool: string; connection: UpstreamConnection }
  | { kind: 'unknown' };

export interface CallOptions {
  signal: AbortSignal;
  /** Passes progress on to the caller (a progressToken was sent). */
  progress?: (progress: number, total?: number, message?: string) => Promise<void>;
}

/** What a caller may use: its token's and its user's patterns. */
export interface Permissions {
  token: readonly string[];
  user: readonly string[];
}

/** The name a permission pattern matches: `<server>__<tool>`, `gengate__<tool>` for the gateway's own. */
export function permissionName(server: string, tool: string): string {
  return `${server}${SEPARATOR}${tool}`;
}

function jsonRpcError(status: number, code: number, message: string): Response {
  return new Response(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }), { status, headers: { 'content-type': 'application/json' } });
}

const sessionNotFound = () => jsonRpcError(404, -32001, 'Session not found');

export class McpService {
  private readonly sessions = new Map<string, LocalSession>();
  private readonly idleSweep: NodeJS.Timeout;

  readonly deps: McpServiceDeps;

  constructor(deps: McpServiceDeps) {
    this.deps = deps;
    this.idleSweep = setInterval(() => this.dropIdle(), IDLE_MS / 4);
    this.idleSweep.unref();
  }

  /** Whether `/mcp/<name>` serves an upstream server. */
  hasServer(name: string): boolean {
    return this.deps.upstream.registry.find(name) !== undefined;
  }

  /**
   * Answers one HTTP request of /mcp (scope '') or /mcp/<server> (scope: the server): an
   * initialize opens a session for the caller's token; anything else goes to the caller's session.
   */
  async handle(request: Request, principal: Principal, scope: string, body: unknown): Promise<Response> {
    const sdk = await loadServerSdk();
    const id = request.headers.get('mcp-session-id');
    if (id === null) {
      if (request.method === 'POST' && sdk.isInitializeRequest(body)) return this.open(sdk, request, principal, scope, body);
      return jsonRpcError(400, -32000, 'Bad Request: Mcp-Session-Id header is required');
    }
    // The store decides, also for a session held here: another instance may have ended it.
    const row = await this.deps.repo.findSession(id);
    let session = this.sessions.get(id);
    if (!row || row.token_id !== principal.tokenId || row.scope !== scope) return sessionNotFound();
    if (row.ended_at !== null) {
      if (session) this.drop(id, session);
      return sessionNotFound();
    }
    session ??= await this.takeUp(sdk, row, principal);
    session.usedAt = Date.now();
    return session.transport.handleRequest(request, { parsedBody: body });
  }

  private async open(sdk: ServerSdk, request: Request, principal: Principal, scope: string, body: { params: { protocolVersion: string } }): Promise<Response> {
    const transport = this.transport(sdk, principal, scope, () => randomUUID());
    const server = this.server(sdk, principal, scope);
    await server.connect(transport);
    const response = await transport.handleRequest(request, { parsedBody: body });
    const id = transport.sessionId;
    if (id !== undefined) {
      await this.deps.repo.insertSession({ id, token_id: principal.tokenId, user_id: principal.userId, scope, protocol_version: body.params.protocolVersion, created_at: Date.now(), ended_at: null });
    }
    return response;
  }

  /** Sets up a live session of the store on this instance, as its initialize had left it. */
  private async takeUp(sdk: ServerSdk, row: McpSessionRow, principal: Principal): Promise<LocalSession> {
    const transport = this.transport(sdk, principal, row.scope, () => row.id);
    await this.server(sdk, principal, row.scope).connect(transport);
    const initialize = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: row.protocol_version, capabilities: {}, clientInfo: { name: 'resumed', version: '0' } } };
    const replayed = await transport.handleRequest(new Request('http://gateway/mcp', { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' } }), { parsedBody: initialize });
    await replayed.text();
    return this.sessions.get(row.id)!;
  }

  private transport(sdk: ServerSdk, principal: Principal, scope: string, sessionId: () => string): WebStandardStreamableHTTPServerTransport {
    const transport = new sdk.WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: sessionId,
      onsessioninitialized: (id) => {
        this.sessions.set(id, { transport, tokenId: principal.tokenId, scope, usedAt: Date.now() });
      },
      onsessionclosed: async (id) => {
        this.sessions.delete(id);
        await this.deps.repo.endSession(id, Date.now());
      },
    });
    transport.onclose = () => {
      const id = transport.sessionId;
      if (id !== undefined && this.sessions.get(id)?.transport === transport) this.sessions.delete(id);
    };
    return transport;
  }

  /** The MCP server of one session: its tools are read for the caller on each request. */
  private server(sdk: ServerSdk, principal: Principal, scope: string): Server {
    const server = new sdk.Server({ name: 'gengate', version: '1' }, { capabilities: { tools: {} } });
    server.setRequestHandler(sdk.ListToolsRequestSchema, async () => ({ tools: await this.listTools(principal, scope) }));
    server.setRequestHandler(sdk.CallToolRequestSchema, async (request, extra) => {
      const progressToken = request.params._meta?.progressToken;
      return this.callTool(principal, scope, request.params.name, request.params.arguments ?? {}, {
        signal: extra.signal,
        ...(progressToken !== undefined
          ? { progress: (progress: number, total?: number, message?: string) => extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress, ...(total !== undefined ? { total } : {}), ...(message !== undefined ? { message } : {}) } }) }
          : {}),
      });
    });
    return server;
  }

  /** The caller's patterns, read from the store on each use (an admin's change applies at once). */
  async permissions(principal: Principal): Promise<Permissions> {
    const [token, user] = await Promise.all([principal.isAdmin ? undefined : this.deps.repo.tokenTools(principal.tokenId), this.deps.repo.userTools(principal.userId)]);
    return { token: storedPatterns(token?.mcp_tools), user: storedPatterns(user) };
  }

  /** Whether both lists allow `<server>__<tool>`. */
  static allows(permissions: Permissions, name: string): boolean {
    return allowedBy(permissions.token, name) && allowedBy(permissions.user, name);
  }

  /** The tools of a scope the caller may use: on /mcp the gateway's and every upstream's as `<server>__<tool>`; on /mcp/<server> that server's. */
  async listTools(principal: Principal, scope: string): Promise<Tool[]> {
    const permissions = await this.permissions(principal);
    if (scope !== '') return this.upstreamTools(scope, permissions, false);
    const own = this.deps.gateway.list().filter((t) => McpService.allows(permissions, permissionName(GATEWAY_MCP_SERVER, t.name)));
    const upstream = await Promise.all(this.deps.upstream.registry.list().map((s) => this.upstreamTools(s.name, permissions, true)));
    return [...own, ...upstream.flat()];
  }

  /** A server's allowed tools; one that cannot be reached lists none on /mcp (logged), and fails its own /mcp/<server>. */
  private async upstreamTools(server: string, permissions: Permissions, prefixed: boolean): Promise<Tool[]> {
    const connection = this.deps.upstream.connection(server);
    if (!connection) return [];
    let tools: Tool[];
    try {
      tools = await connection.tools();
    } catch (err) {
      if (!prefixed) throw err;
      return [];
    }
    return tools
      .filter((t) => McpService.allows(permissions, permissionName(server, t.name)))
      .map((t) => (prefixed ? { ...t, name: permissionName(server, t.name) } : t));
  }

  /** One tools/call in a scope: the tool found (in the scope's names), then run as callTarget does. */
  async callTool(principal: Principal, scope: string, name: string, args: Record<string, unknown>, opts: CallOptions): Promise<CallToolResult> {
    return this.callTarget(principal, this.target(scope, name), name, args, opts);
  }

  /**
   * Runs a call of a tool that was found: refused unless the caller's patterns allow it, then
   * run (the gateway's through GatewayTools, an upstream's forwarded with its progress and
   * cancellation); errors are results. Each call is a ledger row and a span.
   */
  async callTarget(principal: Principal, target: ToolTarget, name: string, args: Record<string, unknown>, opts: CallOptions): Promise<CallToolResult> {
    const id = newId('mcp');
    const startedAt = Date.now();
    const listedName = target.kind === 'upstream' ? permissionName(target.server, target.tool) : name;
    return inSpan('gengate.mcp.tools_call', () => ({ attributes: { 'gengate.mcp.tool': listedName, 'enduser.id': principal.userId } }), async (span) => {
      let outcome: CallOutcome;
      try {
        const permissions = await this.permissions(principal);
        if (target.kind === 'unknown') throw new ApiError('tool_not_found', `there is no tool ${name}`, 'name');
        const permitted = target.kind === 'gateway' ? permissionName(GATEWAY_MCP_SERVER, name) : listedName;
        if (!McpService.allows(permissions, permitted)) throw new ApiError('tool_not_allowed', `this token may not call ${name}`, 'name');
        if (target.kind === 'gateway') {
          const { progress } = opts;
          outcome = await this.deps.gateway.call(name, args, { principal, requestId: id, signal: opts.signal, ...(progress ? { progress: (percent: number) => progress(percent, 100) } : {}) });
        } else {
          outcome = await this.forward(target.connection, target.tool, args, opts);
        }
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        outcome = { result: errorResult(err), status: err.status < 500 ? 'refused' : 'error', httpStatus: err.status };
      }
      span?.setAttribute('gengate.mcp.status', outcome.status);
      this.deps.limits.recordToolCall({ id, principal, tool: listedName, startedAt, status: outcome.status, httpStatus: outcome.httpStatus });
      return outcome.result;
    });
  }

  private target(scope: string, name: string): ToolTarget {
    if (scope !== '') {
      const connection = this.deps.upstream.connection(scope);
      return connection ? { kind: 'upstream', server: scope, tool: name, connection } : { kind: 'unknown' };
    }
    const at = name.indexOf(SEPARATOR);
    if (at > 0) {
      const server = name.slice(0, at);
      const connection = this.deps.upstream.connection(server);
      if (connection) return { kind: 'upstream', server, tool: name.slice(at + SEPARATOR.length), connection };
    }
    return this.deps.gateway.has(name) ? { kind: 'gateway' } : { kind: 'unknown' };
  }

  /** An upstream call: only tools the server's `tools` list allows; its progress passes on under the caller's token. */
  private async forward(connection: UpstreamConnection, tool: string, args: Record<string, unknown>, opts: CallOptions): Promise<CallOutcome> {
    const allowed = connection.server.tools;
    if (allowed && !allowed.includes(tool)) throw new ApiError('tool_not_found', `there is no tool ${tool} on ${connection.server.name}`, 'name');
    const { progress } = opts;
    const result = await connection.call(tool, args, {
      signal: opts.signal,
      ...(progress ? { onprogress: (p) => void progress(p.progress, p.total, p.message).catch(() => undefined) } : {}),
    });
    return { result, status: result.isError ? 'error' : 'success', httpStatus: 200 };
  }

  /** Sets a token's patterns (null: `*`); 404 token_not_found for an unknown token. */
  async setTokenTools(tokenId: string, patterns: readonly string[] | null): Promise<void> {
    if (!(await this.deps.repo.setTokenTools(tokenId, patterns === null ? null : JSON.stringify(patterns)))) throw new ApiError('token_not_found', `no token ${tokenId}`, 'id');
  }

  /** Sets a user's patterns (null: `*`). */
  async setUserTools(userId: string, patterns: readonly string[] | null): Promise<void> {
    await this.deps.repo.setUserTools(userId, patterns === null ? null : JSON.stringify(patterns), Date.now());
  }

  /** A token's patterns as the admin API shows them. */
  async tokenTools(tokenId: string): Promise<readonly string[]> {
    return storedPatterns((await this.deps.repo.tokenTools(tokenId))?.mcp_tools);
  }

  private dropIdle(): void {
    const before = Date.now() - IDLE_MS;
    for (const [id, session] of this.sessions) if (session.usedAt < before) this.drop(id, session);
  }

  /** Lets go of a session held here (its store row decides whether it lives on). */
  private drop(id: string, session: LocalSession): void {
    this.sessions.delete(id);
    void session.transport.close().catch(() => undefined);
  }

  /** Closes the sessions this instance holds (they stay live in the store for their tokens). */
  async close(): Promise<void> {
    clearInterval(this.idleSweep);
    const open = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.all(open.map((s) => s.transport.close().catch(() => undefined)));
  }
}
