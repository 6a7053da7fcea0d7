/**
 * Upstream MCP servers (Streamable HTTP): the registry that names them and the client side that
 * lists and calls their tools. The registry is an interface so the servers can come from
 * GENGATE_CONFIG (ConfiguredMcpServers) or from any other source of settings.
 */
import type { Logger } from 'pino';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult, Progress, Tool } from '@modelcontextprotocol/sdk/types.js';
import { SettingsError, type McpServer } from '../config/settings.ts';
import { ApiError } from '../core/errors.ts';
import { loadClientSdk } from './sdk.ts';
import type { OutboundUrlPolicy } from '../core/outbound-urls.ts';

/** The upstream servers the gateway offers, by name. */
export interface McpServerRegistry {
  list(): readonly McpServer[];
  find(name: string): McpServer | undefined;
}

/** The servers of GENGATE_CONFIG.mcp_servers. */
export class ConfiguredMcpServers implements McpServerRegistry {
  private readonly servers: readonly McpServer[];

  constructor(servers: readonly McpServer[]) {
    this.servers = servers;
  }

  list(): readonly McpServer[] {
    return this.servers;
  }

  find(name: string): McpServer | undefined {
    return this.servers.find((s) => s.name === name);
  }
}

/** Stops the start when a configured server's URL is one the outbound URL policy refuses (docs/security.md). */
export function checkServerUrls(servers: readonly McpServer[], policy: OutboundUrlPolicy): void {
  servers.forEach((server, i) => {
    try {
      policy.checkCallerUrl(server.url, `GENGATE_CONFIG.mcp_servers[${i}].url`);
    } catch (err) {
      throw new SettingsError(`${(err as Error).message} (FETCH_ALLOW_HOSTS lists trusted hosts)`);
    }
  });
}

/** A fetch whose connections obey the outbound URL policy (tasks/outbound-fetch.ts). */
export type CheckedFetch = (url: string | URL, init?: RequestInit) => Promise<Response>;

export interface CallOptions {
  signal: AbortSignal;
  /** Each progress notification of the upstream. */
  onprogress?: (progress: Progress) => void;
}

/** One client connection to an upstream server; connected on first use. */
export class UpstreamConnection {
  private client: Promise<Client> | undefined;

  readonly server: McpServer;
  private readonly deps: { fetch: CheckedFetch; timeoutMs: number; logger: Logger };

  constructor(
    server: McpServer,
    deps: { fetch: CheckedFetch; timeoutMs: number; logger: Logger },
  ) {
    this.server = server;
    this.deps = deps;
  }

  private connected(): Promise<Client> {
    this.client ??= (async () => {
      const { Client, StreamableHTTPClientTransport } = await loadClientSdk();
      const client = new Client({ name: 'gengate', version: '1' });
      const transport = new StreamableHTTPClientTransport(new URL(this.server.url), { requestInit: { headers: this.server.headers }, fetch: this.deps.fetch });
      client.onclose = () => {
        this.client = undefined;
      };
      await client.connect(transport);
      return client;
    })().catch((err: unknown) => {
      this.client = undefined;
      throw err;
    });
    return this.client;
  }

  /** Drops a connection that failed, so the next use connects again (the upstream may have ended its session). */
  private forget(client: Promise<Client>): void {
    if (this.client !== client) return;
    this.client = undefined;
    void client.then((c) => c.close()).catch(() => undefined);
  }

  private async withClient<T>(use: (client: Client) => Promise<T>, signal?: AbortSignal): Promise<T> {
    const pending = this.connected();
    try {
      return await use(await pending);
    } catch (err) {
      // A cancelled call or the server's own JSON-RPC error leaves the connection as it is (it
      // still has to carry the cancellation upstream); anything else may be a dead session.
      if (!signal?.aborted && !(err instanceof (await loadClientSdk()).McpError)) {
        this.deps.logger.warn({ err, server: this.server.name }, 'an MCP upstream call failed');
        this.forget(pending);
      }
      throw new ApiError('upstream_error', `MCP server ${this.server.name}: ${(err as Error).message}`);
    }
  }

  /** The server's tools that its `tools` list allows (all of them without one). */
  async tools(): Promise<Tool[]> {
    const allowed = this.server.tools;
    return this.withClient(async (client) => {
      const tools: Tool[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor ? { cursor } : undefined);
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor);
      return allowed ? tools.filter((t) => allowed.includes(t.name)) : tools;
    });
  }

  /** Calls a tool; progress passes to `onprogress`, and an abort of `signal` is sent upstream as a cancellation. */
  async call(name: string, args: Record<string, unknown> | undefined, options: CallOptions): Promise<CallToolResult> {
    return this.withClient(async (client) => (await client.callTool({ name, ...(args ? { arguments: args } : {}) }, undefined, {
      signal: options.signal,
      timeout: this.deps.timeoutMs,
      resetTimeoutOnProgress: true,
      ...(options.onprogress ? { onprogress: options.onprogress } : {}),
    })) as CallToolResult, options.signal);
  }

  async close(): Promise<void> {
    const pending = this.client;
    this.client = undefined;
    await pending?.then((c) => c.close()).catch(() => undefined);
  }
}

/** The connections to the registry's servers, one per server for the whole instance. */
export class UpstreamServers {
  private readonly connections = new Map<string, UpstreamConnection>();

  readonly registry: McpServerRegistry;
  private readonly deps: { fetch: CheckedFetch; timeoutMs: number; logger: Logger };

  constructor(
    registry: McpServerRegistry,
    deps: { fetch: CheckedFetch; timeoutMs: number; logger: Logger },
  ) {
    this.registry = registry;
    this.deps = deps;
  }

  /** The connection to a server of the registry; undefined for a name it lacks. */
  connection(name: string): UpstreamConnection | undefined {
    const server = this.registry.find(name);
    if (!server) return undefined;
    let connection = this.connections.get(name);
    // A server whose settings changed gets a new connection.
    if (!connection || connection.server !== server) {
      void connection?.close();
      connection = new UpstreamConnection(server, this.deps);
      this.connections.set(name, connection);
    }
    return connection;
  }

  /** A connection of its own to a server named by URL (a Responses request's `server_url`); the caller closes it. */
  adHoc(label: string, url: string, headers: Record<string, string>): UpstreamConnection {
    return new UpstreamConnection({ name: label, url, headers, tools: undefined }, this.deps);
  }

  async close(): Promise<void> {
    await Promise.all([...this.connections.values()].map((c) => c.close()));
    this.connections.clear();
  }
}
