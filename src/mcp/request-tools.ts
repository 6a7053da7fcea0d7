/**
 * The MCP tools a Responses request names (`{type: "mcp", server_label, server_url?,
 * allowed_tools?, require_approval: "never"}`): checked before anything runs, listed once
 * (`mcp_list_tools` items), offered to the model as function tools under their own names
 * (`<server_label>__<tool>` only when two names collide), and called in the tool loop
 * (`mcp_call` items), each call through McpService.callTarget (permissions, ledger, span).
 */
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Principal } from '../auth/tokens.ts';
import { GATEWAY_MCP_SERVER } from '../config/settings.ts';
import type { ChatTool } from '../core/chat-messages.ts';
import { ApiError } from '../core/errors.ts';
import { newId } from '../core/ids.ts';
import { McpService, permissionName, type ToolTarget } from './mcp-service.ts';
import type { UpstreamConnection } from './upstream-servers.ts';

/** A request's `mcp` tool as it was sent. */
export interface McpRequestTool {
  type: 'mcp';
  server_label?: unknown;
  server_url?: unknown;
  allowed_tools?: unknown;
  require_approval?: unknown;
  headers?: unknown;
  authorization?: unknown;
}

/** OpenAI's `mcp_list_tools` output item. */
export interface McpListToolsItem {
  type: 'mcp_list_tools';
  id: string;
  server_label: string;
  tools: { name: string; description: string | null; input_schema: unknown; annotations: unknown }[];
  error: string | null;
}

/** OpenAI's `mcp_call` output item. */
export interface McpCallItem {
  type: 'mcp_call';
  id: string;
  server_label: string;
  name: string;
  /** The arguments as the model wrote them (JSON text). */
  arguments: string;
  output: string | null;
  error: string | null;
}

interface OfferedTool {
  label: string;
  tool: Tool;
  target: ToolTarget;
}

/** The tools of one request's `mcp` entries; close() ends the connections made for `server_url`s. */
export class McpToolset {
  private readonly byName = new Map<string, OfferedTool>();

  private readonly service: McpService;
  private readonly principal: Principal;
  readonly listItems: McpListToolsItem[];
  private readonly adHoc: UpstreamConnection[];

  private constructor(
    service: McpService,
    principal: Principal,
    offered: OfferedTool[],
    listItems: McpListToolsItem[],
    adHoc: UpstreamConnection[],
  ) {
    this.service = service;
    this.principal = principal;
    this.listItems = listItems;
    this.adHoc = adHoc;
    const count = new Map<string, number>();
    for (const o of offered) count.set(o.tool.name, (count.get(o.tool.name) ?? 0) + 1);
    for (const o of offered) this.byName.set(count.get(o.tool.name)! > 1 ? permissionName(o.label, o.tool.name) : o.tool.name, o);
  }

  /** Whether the request names any `mcp` tool. */
  static named(tools: readonly { type?: unknown }[] | undefined): boolean {
    return (tools ?? []).some((t) => t.type === 'mcp');
  }

  /**
   * Checks the request's `mcp` tools (400 naming `tools[i]….` before anything runs) and lists
   * each server's allowed tools. `tools` is the request's whole list; only its `mcp` entries are read.
   */
  static async open(service: McpService, principal: Principal, tools: readonly { type?: unknown }[]): Promise<McpToolset> {
    const entries = tools.map((t, i) => ({ spec: t as McpRequestTool, i })).filter(({ spec }) => spec.type === 'mcp');
    const servers: { label: string; allowed: string[] | undefined; connection: UpstreamConnection | undefined; adHoc: boolean }[] = [];
    for (const { spec, i } of entries) {
      const at = `tools[${i}]`;
      if (spec.require_approval !== undefined && spec.require_approval !== 'never') {
        throw new ApiError('unsupported_parameter', `${at}.require_approval: only "never" is supported; the gateway runs the calls itself`, `${at}.require_approval`);
      }
      if (typeof spec.server_label !== 'string' || spec.server_label === '') throw new ApiError('missing_parameter', `${at}.server_label is required`, `${at}.server_label`);
      const label = spec.server_label;
      const allowed = allowedTools(spec.allowed_tools, `${at}.allowed_tools`);
      if (spec.server_url !== undefined) {
        if (typeof spec.server_url !== 'string') throw new ApiError('invalid_parameter', `${at}.server_url must be a URL`, `${at}.server_url`);
        service.deps.urls.checkCallerUrl(spec.server_url, `${at}.server_url`);
        servers.push({ label, allowed, connection: service.deps.upstream.adHoc(label, spec.server_url, headersOf(spec, at)), adHoc: true });
        continue;
      }
      if (label === GATEWAY_MCP_SERVER) {
        servers.push({ label, allowed, connection: undefined, adHoc: false });
        continue;
      }
      const connection = service.deps.upstream.connection(label);
      if (!connection) throw new ApiError('invalid_parameter', `${at}.server_label: no MCP server ${label} is configured (give a server_url, or name one of the gateway's)`, `${at}.server_label`);
      servers.push({ label, allowed, connection, adHoc: false });
    }

    const permissions = await service.permissions(principal);
    const offered: OfferedTool[] = [];
    const listItems: McpListToolsItem[] = [];
    for (const server of servers) {
      let tools: Tool[] = [];
      let error: string | null = null;
      try {
        tools = server.connection ? await server.connection.tools() : service.deps.gateway.list();
      } catch (err) {
        error = (err as Error).message;
      }
      tools = tools.filter((t) => (!server.allowed || server.allowed.includes(t.name)) && McpService.allows(permissions, permissionName(server.label, t.name)));
      for (const tool of tools) {
        const target: ToolTarget = server.connection ? { kind: 'upstream', server: server.label, tool: tool.name, connection: server.connection } : { kind: 'gateway' };
        offered.push({ label: server.label, tool, target });
      }
      listItems.push({
        type: 'mcp_list_tools',
        id: newId('mcpl'),
        server_label: server.label,
        tools: tools.map((t) => ({ name: t.name, description: t.description ?? null, input_schema: t.inputSchema, annotations: t.annotations ?? null })),
        error,
      });
    }
    return new McpToolset(service, principal, offered, listItems, servers.filter((s) => s.adHoc).map((s) => s.connection!));
  }

  /** The tools as the model is offered them. */
  get definitions(): ChatTool[] {
    return [...this.byName].map(([name, { tool }]) => ({
      type: 'function',
      function: { name, ...(tool.description ? { description: tool.description } : {}), parameters: tool.inputSchema as Record<string, unknown> },
    }));
  }

  /** Whether the model's call names one of these tools. */
  has(name: string): boolean {
    return this.byName.has(name);
  }

  /** The item of a call of one of these tools before it ran (no output, no error yet). */
  pending(name: string, argumentsText: string): McpCallItem {
    const offered = this.byName.get(name)!;
    return { type: 'mcp_call', id: newId('mcp'), server_label: offered.label, name: offered.tool.name, arguments: argumentsText, output: null, error: null };
  }

  /** Runs the call `pending` describes; any failure is the item's `error`. */
  async call(pending: McpCallItem, name: string, signal: AbortSignal): Promise<McpCallItem> {
    const offered = this.byName.get(name)!;
    const item = pending;
    const argumentsText = pending.arguments;
    let args: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse(argumentsText || '{}');
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
      args = parsed as Record<string, unknown>;
    } catch {
      return { ...item, output: null, error: 'the arguments are not a JSON object' };
    }
    const result = await this.service.callTarget(this.principal, offered.target, offered.tool.name, args, { signal });
    const text = resultText(result);
    return result.isError ? { ...item, output: null, error: text } : { ...item, output: text, error: null };
  }

  async close(): Promise<void> {
    await Promise.all(this.adHoc.map((c) => c.close()));
  }
}

/** A result as text: its text items, else its structured content as JSON. */
function resultText(result: CallToolResult): string {
  const texts = result.content.flatMap((c) => (c.type === 'text' ? [c.text] : c.type === 'resource_link' ? [c.uri] : []));
  if (texts.length > 0) return texts.join('\n');
  return JSON.stringify(result.structuredContent ?? result.content);
}

/** `allowed_tools`: a list of names, or `{tool_names}`; absent, every tool. */
function allowedTools(value: unknown, param: string): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  const names = Array.isArray(value) ? value : typeof value === 'object' ? (value as { tool_names?: unknown }).tool_names : undefined;
  if (!Array.isArray(names) || names.some((n) => typeof n !== 'string')) throw new ApiError('invalid_parameter', `${param} must be a list of tool names`, param);
  return names as string[];
}

/** The headers sent to a `server_url`: `headers`, and `authorization` as a bearer token. */
function headersOf(spec: McpRequestTool, at: string): Record<string, string> {
  const headers: Record<string, string> = {};
  if (spec.headers !== undefined && spec.headers !== null) {
    if (typeof spec.headers !== 'object' || Object.values(spec.headers).some((v) => typeof v !== 'string')) throw new ApiError('invalid_parameter', `${at}.headers must map header names to strings`, `${at}.headers`);
    Object.assign(headers, spec.headers);
  }
  if (typeof spec.authorization === 'string') headers.Authorization = `Bearer ${spec.authorization}`;
  return headers;
}
