import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ApiError } from '../../core/errors.ts';
import { applyPatch, LimitsPatch, LimitsView, parseLimits } from '../../limits/limits.ts';
import type { AppServices } from '../services.ts';

const TokenSummary = Type.Object({
  id: Type.String(),
  user_id: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.Number({ description: 'milliseconds since the epoch' }),
  limits: LimitsView,
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
      }, { additionalProperties: false }),
      response: { 201: Type.Intersect([TokenSummary, Type.Object({ token: Type.String() })]) },
    },
  }, async (request, reply) => {
    const limits = request.body.limits ? applyPatch(undefined, request.body.limits) : undefined;
    const created = await services.tokens.create(request.body.user_id, request.body.name, limits ? JSON.stringify(limits) : null);
    await services.limits.tokenCreated(created.id, limits);
    const { token: _plain, ...summary } = created;
    request.ctx.audit.push({ action: 'token.create', target: `token:${created.id}`, before: null, after: { ...summary, limits: limits ?? {} } });
    return reply.code(201).send({ ...created, limits: limits ?? {} });
  });

  app.get('/admin/tokens', {
    schema: { tags: ['admin'], summary: 'List API tokens (never the plain values)', security, response: { 200: Type.Object({ data: Type.Array(TokenSummary) }) } },
  }, async () => ({ data: (await services.tokens.list()).map((t) => ({ ...t, limits: parseLimits(t.limits) ?? {} })) }));

  app.delete('/admin/tokens/:id', {
    schema: { tags: ['admin'], summary: 'Revoke an API token', security, params: Type.Object({ id: Type.String() }) },
  }, async (request, reply) => {
    const before = (await services.tokens.list()).find((t) => t.id === request.params.id);
    if (!(await services.tokens.delete(request.params.id))) throw new ApiError('token_not_found', `no token ${request.params.id}`, 'id');
    // The token is gone from the store; other instances would otherwise trust their cache a while longer.
    await services.bus.publish('token.revoked', { tokenId: request.params.id }).catch((err: unknown) => request.log.warn({ err }, 'announcing a token revocation failed'));
    request.ctx.audit.push({ action: 'token.revoke', target: `token:${request.params.id}`, before: before ? { ...before, limits: parseLimits(before.limits) ?? {} } : null, after: null });
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
