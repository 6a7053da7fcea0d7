import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { LimitsPatch, LimitsView } from '../../limits/limits.ts';
import type { AppServices } from '../services.ts';

const security = [{ bearer: [] }];
const time = (description: string) => Type.Optional(Type.String({ description: `ISO-8601 time: ${description}` }));
const UsageRow = Type.Object({
  key: Type.String(),
  requests: Type.Integer({ description: 'ledger rows: calls and tasks' }),
  tasks: Type.Integer(),
  input_tokens: Type.Integer(),
  output_tokens: Type.Integer(),
  cost: Type.Number({ description: 'credits' }),
  errors: Type.Integer({ description: 'failed or rejected tasks and calls answered with an error (refused ones included)' }),
});
const UsageAnswer = Type.Object({ rows: Type.Array(UsageRow) });
const page = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
  cursor: Type.Optional(Type.String({ description: 'next_cursor of the previous page' })),
};
const TaskListQuery = {
  status: Type.Optional(Type.String()),
  model: Type.Optional(Type.String()),
  from: time('tasks submitted from then on'),
  to: time('tasks submitted before then'),
  ...page,
};
const TaskPage = Type.Object({ data: Type.Array(Type.Unknown(), { description: 'task status records, newest first' }), next_cursor: Type.Union([Type.String(), Type.Null()]) });

/** The caller's own usage and tasks. */
export const usageRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  app.get('/v1/usage', {
    schema: {
      tags: ['usage'],
      summary: 'Your usage between two times, grouped by day or model',
      security,
      querystring: Type.Object({ from: time('default 30 days before to'), to: time('default now'), group_by: Type.Optional(Type.Union([Type.Literal('day'), Type.Literal('model')])) }),
      response: { 200: UsageAnswer },
    },
  }, async (request) => services.usage.usage(request.query, request.ctx.principal.userId));

  app.get('/v1/tasks', {
    schema: { tags: ['tasks'], summary: 'Your tasks, newest first', security, querystring: Type.Object(TaskListQuery), response: { 200: TaskPage } },
  }, async (request) => services.usage.tasks({ ...request.query, owner_id: request.ctx.principal.userId }));
};

const LedgerEntry = Type.Object({
  id: Type.String(),
  kind: Type.String({ description: 'task, or request for a call that made no task' }),
  created_at: Type.String(),
  finished_at: Type.String(),
  user_id: Type.String({ description: '"" for a call refused before its caller was known (an unknown token)' }),
  token_id: Type.Union([Type.String(), Type.Null()]),
  endpoint: Type.String(),
  model: Type.Union([Type.String(), Type.Null()], { description: 'a catalog alias or workflow name; null when the call named none' }),
  provider: Type.Union([Type.String(), Type.Null()]),
  channel: Type.Union([Type.String(), Type.Null()]),
  status: Type.String({ description: 'a task\'s terminal status; for a call success, error, or refused (turned away before anything ran)' }),
  http_status: Type.Union([Type.Integer(), Type.Null()]),
  input_tokens: Type.Integer(),
  output_tokens: Type.Integer(),
  outputs: Type.Integer(),
  cost: Type.Number(),
  latency_ms: Type.Integer(),
  request_id: Type.String(),
  task_id: Type.Union([Type.String(), Type.Null()]),
});

/** Usage, the requests log, every task, and the limits of tokens and users. */
export const adminUsageRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  app.get('/admin/usage', {
    schema: {
      tags: ['admin'],
      summary: 'Usage between two times, grouped',
      security,
      querystring: Type.Object({
        from: time('default 30 days before to'),
        to: time('default now'),
        group_by: Type.Optional(Type.Union(['day', 'model', 'user', 'token', 'provider'].map((g) => Type.Literal(g)))),
      }),
      response: { 200: UsageAnswer },
    },
  }, async (request) => services.usage.usage(request.query as { from?: string; to?: string; group_by?: 'day' | 'model' | 'user' | 'token' | 'provider' }));

  app.get('/admin/requests', {
    schema: {
      tags: ['admin'],
      summary: 'The usage ledger: one row per call or task, newest first',
      security,
      querystring: Type.Object({
        user_id: Type.Optional(Type.String()),
        token_id: Type.Optional(Type.String()),
        model: Type.Optional(Type.String()),
        status: Type.Optional(Type.String()),
        from: time('rows begun from then on'),
        to: time('rows begun before then'),
        ...page,
      }),
      response: { 200: Type.Object({ data: Type.Array(LedgerEntry), next_cursor: Type.Union([Type.String(), Type.Null()]) }) },
    },
  }, async (request) => services.usage.requests(request.query));

  app.get('/admin/tasks', {
    schema: { tags: ['admin'], summary: 'Every user\'s tasks, newest first', security, querystring: Type.Object({ ...TaskListQuery, user_id: Type.Optional(Type.String()) }), response: { 200: TaskPage } },
  }, async (request) => {
    const { user_id, ...rest } = request.query;
    return services.usage.tasks({ ...rest, ...(user_id !== undefined ? { owner_id: user_id } : {}) });
  });

  app.patch('/admin/tokens/:id', {
    schema: {
      tags: ['admin'],
      summary: 'Rename a token or change its limits; a null limit removes it, limits null removes all',
      security,
      params: Type.Object({ id: Type.String() }),
      body: Type.Object({
        name: Type.Optional(Type.Union([Type.String({ maxLength: 200 }), Type.Null()])),
        limits: Type.Optional(Type.Union([LimitsPatch, Type.Null()])),
      }, { additionalProperties: false }),
      response: { 200: Type.Object({ id: Type.String(), limits: LimitsView }) },
    },
  }, async (request) => {
    const before = await services.limits.tokenLimits(request.params.id);
    const limits = await services.limits.updateToken(request.params.id, request.body);
    request.ctx.audit.push({ action: 'token.update', target: `token:${request.params.id}`, before: { limits: before ?? {} }, after: { ...(request.body.name !== undefined ? { name: request.body.name } : {}), limits: limits ?? {} } });
    return { id: request.params.id, limits: limits ?? {} };
  });

  app.get('/admin/users/:id/limits', {
    schema: { tags: ['admin'], summary: 'A user\'s limits', security, params: Type.Object({ id: Type.String() }), response: { 200: Type.Object({ user_id: Type.String(), limits: LimitsView }) } },
  }, async (request) => ({ user_id: request.params.id, limits: (await services.limits.userLimits(request.params.id)) ?? {} }));

  app.put('/admin/users/:id/limits', {
    schema: {
      tags: ['admin'],
      summary: 'Set a user\'s limits (for all its tokens together); a null limit removes it',
      security,
      params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) }),
      body: LimitsPatch,
      response: { 200: Type.Object({ user_id: Type.String(), limits: LimitsView }) },
    },
  }, async (request) => {
    const before = (await services.limits.userLimits(request.params.id)) ?? {};
    const limits = (await services.limits.updateUser(request.params.id, request.body)) ?? {};
    request.ctx.audit.push({ action: 'limits.update', target: `user:${request.params.id}`, before, after: limits });
    return { user_id: request.params.id, limits };
  });
};
