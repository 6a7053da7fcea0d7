import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ENDPOINTS, routePath } from '../../endpoints/endpoint-table.ts';
import { EDIT_OPERATIONS, GENERATION_KINDS, type EditOperation, type GenerationBody, type GenerationKind } from '../../endpoints/mesh3d.ts';
import { callerOf } from '../generation-reply.ts';
import type { AppServices } from '../services.ts';

const security = [{ bearer: [] }];
const headers = Type.Object({
  'x-client-id': Type.Optional(Type.String({ description: 'realtime pushes of the task go only to sessions with this client_id' })),
});
const GenerationReply = Type.Object({ material_id: Type.String(), task_id: Type.String(), mesh3d_history_id: Type.String() });
const EditReply = Type.Object({ material_id: Type.String(), task_id: Type.String(), history_id: Type.String() });
const ASYNC_NOTE = 'Always asynchronous: read the result with GET /v1/ai/result/{task_id}, the callback or the realtime gateway.';

/** 3D generation and editing. */
export const mesh3dRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  const { mesh3d } = services;

  for (const kind of Object.keys(GENERATION_KINDS) as GenerationKind[]) {
    for (const route of ENDPOINTS[`mesh3d.generate.${kind}`].routes) app.post(routePath(route), {
      schema: {
        tags: ['mesh3d'],
        summary: `Generate a 3D model from ${kind === 'text' ? 'text' : kind === 'image' ? 'one image' : 'several views'}`,
        description: `${ASYNC_NOTE} Fields the model does not support are refused (unsupported_parameter).`,
        security,
        headers,
        body: GENERATION_KINDS[kind],
        response: { 200: GenerationReply },
      },
    }, async (request) => (await mesh3d.generate(kind, request.body as GenerationBody, callerOf(request))).reply);
  }

  for (const op of Object.keys(EDIT_OPERATIONS) as EditOperation[]) {
    for (const route of ENDPOINTS[`mesh3d.edit.${op}`].routes) app.post(routePath(route), {
      schema: {
        tags: ['mesh3d'],
        summary: `3D edit: ${op.replaceAll('_', ' ')}`,
        description: `${ASYNC_NOTE} history_id names the history to edit; the answer's history_id is the new one.`,
        security,
        headers,
        body: EDIT_OPERATIONS[op],
        response: { 200: EditReply },
      },
    }, async (request) => mesh3d.edit(op, request.body as Record<string, unknown> & { history_id: string; model?: string }, callerOf(request)));
  }
};
