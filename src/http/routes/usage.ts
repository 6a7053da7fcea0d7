import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { LimitsPatch, LimitsView } from '../../limits/limits.ts';
import { McpToolPatterns } from '../../mcp/tool-patterns.ts';
import type { AppServices } from '../services.ts';
import { announceRevoked, TeamId } from './admin.ts';

const security = [{ bearer: [] }];
const time = (description: string) => Type.Optional(Type.String({ description: `ISO-8601 time: ${description}` }));
/** The token counts of a ledger row and of a usage group. */
const TokenColumns = {
  input_tokens: Type.Integer({ description: 'input tokens neither read from nor written to the upstream\'s prompt cache' }),
  cached_input_tokens: Type.Integer({ description: 'input tokens read from the upstream\'s prompt cache (0 where it reports none)' }),
  cache_write_tokens: Type.Integer({ description: 'input tokens written to the upstream\'s prompt cache (0 where it reports none)' }),
  output_tokens: Type.Integer(),
};
const UsageRow = Type.Object({
  key: Type.String(),
  requests: Type.Integer({ description: 'ledger rows: calls and tasks' }),
  tasks: Type.Integer(),
  ...TokenColumns,
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
      querystring: Type.Object({ from: time('default 30 days before to'), to: time('default now'), group_by: Type.Optional(Type.Union([Type.Literal('day'), Type.Literal('model'), Type.Literal('team')])) }),
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
  team_id: Type.Union([Type.String(), Type.Null()], { description: 'the team of the call\'s token; null without one' }),
  endpoint: Type.String(),
  model: Type.Union([Type.String(), Type.Null()], { description: 'a catalog alias or workflow name; null when the call named none' }),
  provider: Type.Union([Type.String(), Type.Null()]),
  channel: Type.Union([Type.String(), Type.Null()]),
  status: Type.String({ description: 'a task\'s terminal status; for a call success, error, or refused (turned away before anything ran)' }),
  http_status: Type.Union([Type.Integer(), Type.Null()]),
  ...TokenColumns,
  outputs: Type.Integer(),
  cost: Type.Number(),
  latency_ms: Type.Integer(),
  request_id: Type.String(),
  task_id: Type.Union([Type.String(), Type.Null()]),
  batch_id: Type.Union([Type.String(), Type.Null()], { description: 'the batch the call ran for (/openai/v1/batches)' }),
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
        group_by: Type.Optional(Type.Union(['day', 'model', 'user', 'token', 'provider', 'team'].map((g) => Type.Literal(g)))),
        team_id: Type.Optional(TeamId),
      }),
      response: { 200: UsageAnswer },
    },
  }, async (request) => {
    const query = request.query as { from?: string; to?: string; group_by?: 'day' | 'model' | 'user' | 'token' | 'provider' | 'team'; team_id?: string };
    // A team's admins and viewers see its usage; members their own.
    return services.usage.usage(query, undefined, request.ctx.operatorOrThrow.readScope(['admin', 'viewer'], query.team_id));
  });

  app.get('/admin/requests', {
    schema: {
      tags: ['admin'],
      summary: 'The usage ledger: one row per call or task, newest first',
      security,
      querystring: Type.Object({
        user_id: Type.Optional(Type.String()),
        token_id: Type.Optional(Type.String()),
        team_id: Type.Optional(TeamId),
        model: Type.Optional(Type.String()),
        status: Type.Optional(Type.String()),
        batch_id: Type.Optional(Type.String({ description: 'rows of the lines of one batch' })),
        from: time('rows begun from then on'),
        to: time('rows begun before then'),
        ...page,
      }),
      response: { 200: Type.Object({ data: Type.Array(LedgerEntry), next_cursor: Type.Union([Type.String(), Type.Null()]) }) },
    },
  }, async (request) => services.usage.requests(request.query, request.ctx.operatorOrThrow.readScope(['admin'], request.query.team_id)));

  app.get('/admin/tasks', {
    schema: {
      tags: ['admin'],
      summary: 'Every user\'s tasks (or those the console role sees), newest first',
      security,
      querystring: Type.Object({ ...TaskListQuery, user_id: Type.Optional(Type.String()), team_id: Type.Optional(TeamId) }),
      response: { 200: TaskPage },
    },
  }, async (request) => {
    const { user_id, ...rest } = request.query;
    return services.usage.tasks({ ...rest, ...(user_id !== undefined ? { owner_id: user_id } : {}) }, request.ctx.operatorOrThrow.readScope(['admin'], rest.team_id));
  });

  app.patch('/admin/tokens/:id', {
    schema: {
      tags: ['admin'],
      summary: 'Rename a token or change its limits or MCP tools; a null limit removes it, limits null removes all, mcp_tools null restores `*`',
      security,
      params: Type.Object({ id: Type.String() }),
      body: Type.Object({
        name: Type.Optional(Type.Union([Type.String({ maxLength: 200 }), Type.Null()])),
        limits: Type.Optional(Type.Union([LimitsPatch, Type.Null()])),
        mcp_tools: Type.Optional(Type.Union([McpToolPatterns, Type.Null()])),
        team_id: Type.Optional(Type.Union([TeamId, Type.Null()], { description: 'the team the token works for; null: none' })),
      }, { additionalProperties: false }),
      response: { 200: Type.Object({ id: Type.String(), limits: LimitsView, mcp_tools: McpToolPatterns, team_id: Type.Union([Type.String(), Type.Null()]) }) },
    },
  }, async (request) => {
    const operator = request.ctx.operatorOrThrow;
    const token = await services.tokens.get(request.params.id);
    operator.checkToken(token);
    const { team_id, mcp_tools: mcpTools, ...change } = request.body;
    const teamId = team_id === undefined ? token.team_id : team_id;
    if (team_id !== undefined && team_id !== token.team_id) {
      operator.checkNewToken({ user_id: token.user_id, team_id });
      if (team_id !== null) await services.teams.checkMember(team_id, token.user_id);
    }
    const before = { limits: (await services.limits.tokenLimits(request.params.id)) ?? {}, team_id: token.team_id };
    if (mcpTools !== undefined) await services.mcp.setTokenTools(request.params.id, mcpTools);
    // A team's admin keeps its tokens' limits within the team's own; administrators set any.
    const cap = teamId !== null && !operator.isAdmin ? await services.limits.teamLimits(teamId) : undefined;
    const limits = await services.limits.updateToken(request.params.id, change, cap);
    if (team_id !== undefined && team_id !== token.team_id) {
      await services.tokens.setTeam(request.params.id, team_id);
      await announceRevoked(services, request, [request.params.id]);
    }
    const after = { ...(request.body.name !== undefined ? { name: request.body.name } : {}), limits: limits ?? {}, team_id: teamId, ...(mcpTools !== undefined ? { mcp_tools: mcpTools ?? ['*'] } : {}) };
    request.ctx.audit.push({ action: 'token.update', target: `token:${request.params.id}`, before, after });
    return { id: request.params.id, limits: limits ?? {}, mcp_tools: [...(await services.mcp.tokenTools(request.params.id))], team_id: teamId };
  });

  app.put('/admin/users/:id/mcp-tools', {
    schema: {
      tags: ['admin'],
      summary: 'Set the MCP tools a user may list and call (with each of its tokens\' own list); null restores `*`',
      security,
      params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) }),
      body: Type.Object({ mcp_tools: Type.Union([McpToolPatterns, Type.Null()]) }, { additionalProperties: false }),
      response: { 200: Type.Object({ user_id: Type.String(), mcp_tools: McpToolPatterns }) },
    },
  }, async (request) => {
    await services.mcp.setUserTools(request.params.id, request.body.mcp_tools);
    request.ctx.audit.push({ action: 'user.mcp_tools', target: `user:${request.params.id}`, before: null, after: { mcp_tools: request.body.mcp_tools ?? ['*'] } });
    return { user_id: request.params.id, mcp_tools: request.body.mcp_tools ?? ['*'] };
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
