import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { sql } from 'kysely';
import type { AppServices } from '../services.ts';

/** Liveness plus a database round trip, so a load balancer drops an instance that lost its store. */
export const healthRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  app.get('/healthz', {
    schema: {
      tags: ['system'],
      summary: 'Health check',
      response: { 200: Type.Object({ status: Type.Literal('ok'), database: Type.String() }), 503: Type.Object({ status: Type.Literal('unavailable'), error: Type.String() }) },
    },
  }, async (_request, reply) => {
    try {
      await sql`select 1`.execute(services.db.kysely);
      return { status: 'ok' as const, database: services.db.dialect };
    } catch (err) {
      return reply.code(503).send({ status: 'unavailable' as const, error: (err as Error).message });
    }
  });
};
