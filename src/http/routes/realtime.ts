import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppServices } from '../services.ts';

/** POST /v1/realtime/tickets: a single-use credential for session.authenticate. */
export const realtimeRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  app.post('/v1/realtime/tickets', {
    schema: {
      tags: ['realtime'],
      summary: 'Issue a single-use ticket for the realtime gateway (session.authenticate method ws_ticket)',
      security: [{ bearer: [] }],
      response: {
        200: Type.Object({
          ticket: Type.String(),
          expires_in: Type.Integer({ description: 'seconds the ticket can be presented' }),
        }),
      },
    },
  }, async (request) => services.wsTickets.issue(request.ctx.principal.userId, request.ctx.principal.tokenId));
};
