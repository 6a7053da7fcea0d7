import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { applyPatch, LimitsPatch, LimitsView } from '../../limits/limits.ts';
import type { TeamRow } from '../../storage/schema.ts';
import type { AppServices } from '../services.ts';
import { announceRevoked, TeamId } from './admin.ts';

const security = [{ bearer: [] }];
const Role = Type.Union([Type.Literal('admin'), Type.Literal('member'), Type.Literal('viewer')]);
const UserId = Type.String({ minLength: 1, maxLength: 200, pattern: '^[^\\s]+$' });
const Team = Type.Object({
  id: Type.String(),
  name: Type.String(),
  limits: LimitsView,
  created_at: Type.Number({ description: 'milliseconds since the epoch' }),
});
const Member = Type.Object({ team_id: Type.String(), user_id: Type.String(), role: Role, created_at: Type.Number() });
const TeamParams = Type.Object({ id: TeamId });
const MemberParams = Type.Object({ id: TeamId, user_id: UserId });

/** Teams, their members and their limits (for all their tokens together). */
export const teamRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  const view = async (team: TeamRow) => ({ id: team.id, name: team.name, limits: (await services.limits.teamLimits(team.id)) ?? {}, created_at: team.created_at });

  app.post('/admin/teams', {
    schema: {
      tags: ['admin'],
      summary: 'Create a team; its limits apply to all its tokens together',
      security,
      body: Type.Object({ id: TeamId, name: Type.String({ minLength: 1, maxLength: 200 }), limits: Type.Optional(LimitsPatch) }, { additionalProperties: false }),
      response: { 201: Team },
    },
  }, async (request, reply) => {
    const limits = request.body.limits ? applyPatch(undefined, request.body.limits) : undefined;
    const team = await services.teams.create(request.body.id, request.body.name, limits ? JSON.stringify(limits) : null);
    await services.limits.teamCreated(team.id, limits);
    return reply.code(201).send({ ...team, limits: limits ?? {} });
  });

  app.get('/admin/teams', {
    schema: { tags: ['admin'], summary: 'Teams: all, or the console user\'s own', security, response: { 200: Type.Object({ data: Type.Array(Team) }) } },
  }, async (request) => {
    const operator = request.ctx.operatorOrThrow;
    const teams = await services.teams.list(operator.isAdmin ? undefined : operator.memberships.map((m) => m.team_id));
    return { data: await Promise.all(teams.map(view)) };
  });

  app.get('/admin/teams/:id', {
    schema: { tags: ['admin'], summary: 'A team with its members', security, params: TeamParams, response: { 200: Type.Intersect([Team, Type.Object({ members: Type.Array(Member) })]) } },
  }, async (request) => {
    request.ctx.operatorOrThrow.checkTeam(request.params.id, ['admin']);
    const team = await services.teams.get(request.params.id);
    return { ...(await view(team)), members: await services.teams.members(team.id) };
  });

  app.patch('/admin/teams/:id', {
    schema: {
      tags: ['admin'],
      summary: 'Rename a team or change its limits; a null limit removes it, limits null removes all',
      security,
      params: TeamParams,
      body: Type.Object({ name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })), limits: Type.Optional(Type.Union([LimitsPatch, Type.Null()])) }, { additionalProperties: false }),
      response: { 200: Team },
    },
  }, async (request) => {
    request.ctx.operatorOrThrow.checkTeam(request.params.id, []);
    const { name, limits } = request.body;
    if (name !== undefined) await services.teams.rename(request.params.id, name);
    await services.teams.get(request.params.id);
    if (limits !== undefined) await services.limits.updateTeam(request.params.id, limits);
    return view(await services.teams.get(request.params.id));
  });

  app.delete('/admin/teams/:id', {
    schema: { tags: ['admin'], summary: 'Delete a team and its members; its tokens stop working', security, params: TeamParams },
  }, async (request, reply) => {
    request.ctx.operatorOrThrow.checkTeam(request.params.id, []);
    await announceRevoked(services, request, await services.teams.delete(request.params.id));
    return reply.code(204).send();
  });

  app.put('/admin/teams/:id/members/:user_id', {
    schema: {
      tags: ['admin'],
      summary: 'Add a member to a team, or change its role',
      security,
      params: MemberParams,
      body: Type.Object({ role: Role }, { additionalProperties: false }),
      response: { 200: Member },
    },
  }, async (request) => {
    request.ctx.operatorOrThrow.checkTeam(request.params.id, ['admin']);
    return services.teams.setMember(request.params.id, request.params.user_id, request.body.role);
  });

  app.delete('/admin/teams/:id/members/:user_id', {
    schema: { tags: ['admin'], summary: 'Remove a member; its tokens of the team stop working', security, params: MemberParams },
  }, async (request, reply) => {
    request.ctx.operatorOrThrow.checkTeam(request.params.id, ['admin']);
    await announceRevoked(services, request, await services.teams.removeMember(request.params.id, request.params.user_id));
    return reply.code(204).send();
  });
};
