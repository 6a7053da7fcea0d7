import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { applyPatch, checkWithin, LimitsPatch, LimitsView, parseLimits } from '../../limits/limits.ts';
import { McpToolPatterns } from '../../mcp/tool-patterns.ts';
import type { AppServices } from '../services.ts';

/** Team ids: what a path segment and a ledger key can hold as they are. */
export const TeamId = Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9._-]+$' });

/**
 * Tokens that stopped working (revoked, or their user left their team): forgotten here, and
 * announced so every other instance forgets its cached lookups too.
 */
export async function announceRevoked(services: AppServices, request: FastifyRequest, tokenIds: readonly string[]): Promise<void> {
  for (const tokenId of tokenIds) {
    services.tokens.forget(tokenId);
    await services.bus.publish('token.revoked', { tokenId }).catch((err: unknown) => request.log.warn({ err }, 'announcing a token revocation failed'));
  }
}

const TokenSummary = Type.Object({
  id: Type.String(),
  user_id: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.Number({ description: 'milliseconds since the epoch' }),
  limits: LimitsView,
  team_id: Type.Union([Type.String(), Type.Null()], { description: 'the team the token works for' }),
});

const CallbackConfig = Type.Object({
  callback_url: Type.Optional(Type.String()),
  callback_secret: Type.Optional(Type.String()),
  callback_timeout_ms: Type.Integer(),
  callback_retry_delays_ms: Type.Array(Type.Integer()),
});

const nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Optional(Type.Union([schema, Type.Null()]));

const security = [{ bearer: [] }];

/** Admin API: tokens and the task callback setting. */
export const adminRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  app.post('/admin/tokens', {
    schema: {
      tags: ['admin'],
      summary: 'Create an API token for a user; the plain token is shown only in this answer',
      security,
      body: Type.Object({
        user_id: Type.String({ minLength: 1, maxLength: 200, pattern: '^[^\\s]+$' }),
        name: Type.Optional(Type.String({ maxLength: 200 })),
        limits: Type.Optional(LimitsPatch),
        mcp_tools: Type.Optional(Type.Union([McpToolPatterns, Type.Null()], { description: 'MCP tools the token may list and call (patterns, `*` any run of characters); null or absent: `*`' })),
        team_id: Type.Optional(TeamId),
      }, { additionalProperties: false }),
      response: { 201: Type.Intersect([TokenSummary, Type.Object({ token: Type.String(), mcp_tools: McpToolPatterns })]) },
    },
  }, async (request, reply) => {
    const { user_id, team_id } = request.body;
    const operator = request.ctx.operatorOrThrow;
    operator.checkNewToken({ user_id, team_id: team_id ?? null });
    if (team_id !== undefined) await services.teams.checkMember(team_id, user_id);
    const limits = request.body.limits ? applyPatch(undefined, request.body.limits) : undefined;
    if (team_id !== undefined && !operator.isAdmin) checkWithin(limits, await services.limits.teamLimits(team_id));
    const created = await services.tokens.create(user_id, request.body.name, limits ? JSON.stringify(limits) : null, team_id ?? null);
    await services.limits.tokenCreated(created.id, limits);
    const mcpTools = request.body.mcp_tools ?? null;
    if (mcpTools) await services.mcp.setTokenTools(created.id, mcpTools);
    const { token: _plain, ...summary } = created;
    request.ctx.audit.push({ action: 'token.create', target: `token:${created.id}`, before: null, after: { ...summary, limits: limits ?? {}, mcp_tools: mcpTools ?? ['*'] } });
    return reply.code(201).send({ ...created, limits: limits ?? {}, mcp_tools: mcpTools ?? ['*'] });
  });

  app.get('/admin/tokens', {
    schema: {
      tags: ['admin'],
      summary: 'List API tokens (never the plain values): all, or those the console role sees',
      security,
      querystring: Type.Object({ team_id: Type.Optional(TeamId) }),
      response: { 200: Type.Object({ data: Type.Array(TokenSummary) }) },
    },
  }, async (request) => {
    const { team_id } = request.query;
    const tokens = await services.tokens.list(request.ctx.operatorOrThrow.readScope(['admin'], team_id));
    return { data: tokens.filter((t) => team_id === undefined || t.team_id === team_id).map((t) => ({ ...t, limits: parseLimits(t.limits) ?? {} })) };
  });

  app.delete('/admin/tokens/:id', {
    schema: { tags: ['admin'], summary: 'Revoke an API token', security, params: Type.Object({ id: Type.String() }) },
  }, async (request, reply) => {
    const before = await services.tokens.get(request.params.id);
    request.ctx.operatorOrThrow.checkToken(before);
    await services.tokens.delete(request.params.id);
    // The token is gone from the store; other instances would otherwise trust their cache a while longer.
    await announceRevoked(services, request, [request.params.id]);
    request.ctx.audit.push({ action: 'token.revoke', target: `token:${request.params.id}`, before: { ...before, limits: parseLimits(before.limits) ?? {} }, after: null });
    return reply.code(204).send();
  });

  app.get('/admin/config', {
    schema: { tags: ['admin'], summary: 'The task callback setting', security, response: { 200: CallbackConfig } },
  }, async () => services.runtimeConfig.callback());

  app.put('/admin/config', {
    schema: {
      tags: ['admin'],
      summary: 'Change the task callback setting; null resets a field',
      security,
      body: Type.Object({
        callback_url: nullable(Type.String({ pattern: '^https?://' })),
        callback_secret: nullable(Type.String({ minLength: 1 })),
        callback_timeout_ms: nullable(Type.Integer({ minimum: 1, maximum: 600_000 })),
        callback_retry_delays_ms: nullable(Type.Array(Type.Integer({ minimum: 0, maximum: 86_400_000 }), { maxItems: 10 })),
      }, { additionalProperties: false }),
      response: { 200: CallbackConfig },
    },
  }, async (request) => {
    const before = await services.runtimeConfig.callback();
    const after = await services.runtimeConfig.updateCallback(request.body);
    request.ctx.audit.push({ action: 'callback.update', target: 'config:callback', before, after });
    return after;
  });
};
