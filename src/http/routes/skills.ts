import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppServices } from '../services.ts';

const security = [{ bearer: [] }];
const text = (maxLength: number, description?: string) => Type.String({ minLength: 1, maxLength, ...(description ? { description } : {}) });

/** A reference text handed to the model with the skill. */
export const SkillReference = Type.Object({
  name: text(200),
  content: text(100_000),
}, { additionalProperties: false });

/** A file the skill points the model to. */
export const SkillAsset = Type.Object({
  name: text(200),
  description: Type.String({ maxLength: 2000 }),
  url: text(4000),
  file_type: text(100, 'e.g. image, pdf, audio'),
}, { additionalProperties: false });

/** The fields of a skill: POST /v1/skills, and `skill_options.ephemeral_skill` of POST /v1/responses. */
export const SkillFields = Type.Object({
  name: text(200),
  description: Type.String({ maxLength: 2000 }),
  instructions: text(100_000),
  references: Type.Optional(Type.Array(SkillReference, { maxItems: 50 })),
  assets: Type.Optional(Type.Array(SkillAsset, { maxItems: 50 })),
}, { additionalProperties: false });

const Skill = Type.Object({
  id: Type.String(),
  object: Type.Literal('skill'),
  name: Type.String(),
  description: Type.String(),
  instructions: Type.String(),
  references: Type.Array(SkillReference),
  assets: Type.Array(SkillAsset),
  created_at: Type.Integer({ description: 'Unix seconds' }),
});

const IdParams = Type.Object({ id: Type.String({ minLength: 1 }) });

/** Personal skills of the /v1/responses agent, per user (another user's id answers 404). */
export const skillRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  const { skills } = services.agents;

  app.post('/v1/skills', {
    schema: { tags: ['agent'], summary: 'Store a personal skill', security, body: SkillFields, response: { 201: Skill } },
  }, async (request, reply) => reply.code(201).send(await skills.create(request.ctx.principal.userId, request.body)));

  app.get('/v1/skills', {
    schema: { tags: ['agent'], summary: 'The caller\'s skills, newest first', security, response: { 200: Type.Object({ object: Type.Literal('list'), data: Type.Array(Skill) }) } },
  }, async (request) => ({ object: 'list' as const, data: await skills.list(request.ctx.principal.userId) }));

  app.get('/v1/skills/:id', {
    schema: { tags: ['agent'], summary: 'One of the caller\'s skills', security, params: IdParams, response: { 200: Skill } },
  }, async (request) => skills.get(request.ctx.principal.userId, request.params.id));

  app.delete('/v1/skills/:id', {
    schema: { tags: ['agent'], summary: 'Delete one of the caller\'s skills', security, params: IdParams },
  }, async (request, reply) => {
    await skills.delete(request.ctx.principal.userId, request.params.id);
    return reply.code(204).send();
  });
};
