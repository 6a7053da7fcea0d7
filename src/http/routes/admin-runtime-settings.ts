import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ChannelSettings, McpServerSettings } from '../../config/settings.ts';
import { ModelPatch, ProviderPatch } from '../../config/stored-config.ts';
import { ApiError } from '../../core/errors.ts';
import { auditContextOf } from '../plugins/audit.ts';
import type { AppServices } from '../services.ts';

const security = [{ bearer: [] }];

const channelFields = {
  base_url: Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })),
  /** Write-only: stored encrypted, answered as api_key_set and api_key_last4. */
  api_key: Type.Optional(Type.String({ minLength: 1, maxLength: 8192 })),
  weight: ChannelSettings.properties.weight,
  priority: ChannelSettings.properties.priority,
  models: ChannelSettings.properties.models,
  concurrency: ChannelSettings.properties.concurrency,
  options: ChannelSettings.properties.options,
};

const ChannelCreate = Type.Object({ name: ChannelSettings.properties.name, ...channelFields }, { additionalProperties: false });
const ChannelUpdate = Type.Object(channelFields, { additionalProperties: false });

const McpServerCreate = McpServerSettings;
const McpServerUpdate = Type.Object({
  url: Type.Optional(McpServerSettings.properties.url),
  headers: McpServerSettings.properties.headers,
  tools: McpServerSettings.properties.tools,
}, { additionalProperties: false });

const ProviderParams = Type.Object({ code: Type.String({ minLength: 1, maxLength: 100 }) });
const ChannelParams = Type.Object({ code: Type.String({ minLength: 1, maxLength: 100 }), name: Type.String({ minLength: 1, maxLength: 100 }) });
const AliasParams = Type.Object({ alias: Type.String({ minLength: 1, maxLength: 200 }) });
const McpParams = Type.Object({ name: Type.String({ minLength: 1, maxLength: 64 }) });

/** A time as ISO-8601 or milliseconds since the epoch; `param` names it when it is neither. */
function timeOf(value: string | undefined, param: string): number | undefined {
  if (value === undefined) return undefined;
  const ms = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
  if (!Number.isFinite(ms)) throw new ApiError('invalid_parameter', `${param} must be an ISO-8601 time or milliseconds since the epoch`, param);
  return ms;
}

/**
 * Admin API of the runtime settings (providers, channels, models, upstream MCP servers) and of
 * the audit log. Each change is written with its audit row by the service, in one transaction.
 */
export const adminRuntimeSettingsRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  const settings = services.runtimeSettings;
  // The service writes these routes' audit rows with their change.
  app.addHook('preHandler', async (request) => {
    request.ctx.auditDone = true;
  });

  app.get('/admin/providers', {
    schema: { tags: ['admin'], summary: 'Configured providers and their channels (API keys never shown: api_key_set and api_key_last4)', security },
  }, async () => ({ data: settings.providers() }));

  app.put('/admin/providers/:code', {
    schema: { tags: ['admin'], summary: 'Set fields of a provider (the others keep their file or default values); configures a catalog provider missing from the file', security, params: ProviderParams, body: ProviderPatch },
  }, async (request) => settings.putProvider(auditContextOf(request), request.params.code, request.body));

  app.post('/admin/providers/:code/channels', {
    schema: { tags: ['admin'], summary: 'Add a channel to a provider', security, params: ProviderParams, body: ChannelCreate },
  }, async (request, reply) => reply.code(201).send(await settings.createChannel(auditContextOf(request), request.params.code, request.body)));

  app.patch('/admin/providers/:code/channels/:name', {
    schema: { tags: ['admin'], summary: 'Change a channel (on a channel of the file: an override; its source stays file)', security, params: ChannelParams, body: ChannelUpdate },
  }, async (request) => settings.updateChannel(auditContextOf(request), request.params.code, request.params.name, request.body));

  app.delete('/admin/providers/:code/channels/:name', {
    schema: { tags: ['admin'], summary: 'Remove a channel', security, params: ChannelParams },
  }, async (request, reply) => {
    await settings.deleteChannel(auditContextOf(request), request.params.code, request.params.name);
    return reply.code(204).send();
  });

  app.post('/admin/providers/:code/channels/:name/test', {
    schema: { tags: ['admin'], summary: 'One cheap call on a channel (a one-token chat completion, else a GET of its base URL); changes nothing', security, params: ChannelParams },
  }, async (request) => settings.testChannel(request.params.code, request.params.name));

  app.get('/admin/models', {
    schema: { tags: ['admin'], summary: 'Every catalog model with its enabled state, prices, fallbacks and where they come from', security },
  }, async () => ({ data: settings.models() }));

  app.patch('/admin/models/:alias', {
    schema: { tags: ['admin'], summary: 'Enable or disable a model, set its prices, fallbacks, capability overrides or display name', security, params: AliasParams, body: ModelPatch },
  }, async (request) => settings.updateModel(auditContextOf(request), request.params.alias, request.body));

  app.post('/admin/models', {
    schema: { tags: ['admin'], summary: 'Add a model: a catalog baseModel object, checked against the catalog schema', security, body: Type.Record(Type.String(), Type.Unknown()) },
  }, async (request, reply) => reply.code(201).send(await settings.addModel(auditContextOf(request), request.body)));

  app.delete('/admin/models/:alias', {
    schema: { tags: ['admin'], summary: 'Remove a model added through the API', security, params: AliasParams },
  }, async (request, reply) => {
    await settings.deleteModel(auditContextOf(request), request.params.alias);
    return reply.code(204).send();
  });

  app.get('/admin/mcp-servers', {
    schema: { tags: ['admin'], summary: 'Upstream MCP servers (literal header values shown as ***)', security },
  }, async () => ({ data: settings.mcpServers() }));

  app.get('/admin/mcp-servers/:name', {
    schema: { tags: ['admin'], summary: 'One upstream MCP server', security, params: McpParams },
  }, async (request) => {
    const server = settings.mcpServers().find((s) => s.name === request.params.name);
    if (!server) throw new ApiError('mcp_server_not_found', `no MCP server is named ${request.params.name}`, 'name');
    return server;
  });

  app.post('/admin/mcp-servers', {
    schema: { tags: ['admin'], summary: 'Add an upstream MCP server', security, body: McpServerCreate },
  }, async (request, reply) => reply.code(201).send(await settings.createMcpServer(auditContextOf(request), request.body)));

  app.patch('/admin/mcp-servers/:name', {
    schema: { tags: ['admin'], summary: 'Change an upstream MCP server (headers replace its headers)', security, params: McpParams, body: McpServerUpdate },
  }, async (request) => settings.updateMcpServer(auditContextOf(request), request.params.name, request.body));

  app.delete('/admin/mcp-servers/:name', {
    schema: { tags: ['admin'], summary: 'Remove an upstream MCP server', security, params: McpParams },
  }, async (request, reply) => {
    await settings.deleteMcpServer(auditContextOf(request), request.params.name);
    return reply.code(204).send();
  });

  app.get('/admin/audit', {
    schema: {
      tags: ['admin'],
      summary: 'The audit log: every change made through /admin, newest first',
      security,
      querystring: Type.Object({
        from: Type.Optional(Type.String({ description: 'inclusive; ISO-8601 or milliseconds since the epoch' })),
        to: Type.Optional(Type.String({ description: 'exclusive' })),
        actor: Type.Optional(Type.String({ description: 'actor.id (admin for the admin token)' })),
        action: Type.Optional(Type.String()),
        target: Type.Optional(Type.String()),
        limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
        cursor: Type.Optional(Type.String()),
      }, { additionalProperties: false }),
    },
  }, async (request) => {
    const { from, to, limit, ...rest } = request.query;
    return services.audit.list({ ...rest, from: timeOf(from, 'from'), to: timeOf(to, 'to'), limit: limit ?? 50 });
  });
};
