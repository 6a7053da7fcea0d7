import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { sql } from 'kysely';
import type { AppServices } from '../services.ts';

/**
 * Liveness plus a database round trip, so a load balancer drops an instance that lost its store.
 * With REDIS_URL it also pings Redis; an unreachable Redis is reported (`redis: "unreachable"`) but
 * keeps the 200: the instance still stores and accepts tasks, which are queued once Redis is back.
 */
export const healthRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  app.get('/healthz', {
    schema: {
      tags: ['system'],
      summary: 'Health check',
      response: {
        200: Type.Object({ status: Type.Literal('ok'), database: Type.String(), redis: Type.Optional(Type.Union([Type.Literal('ok'), Type.Literal('unreachable')])) }),
        503: Type.Object({ status: Type.Literal('unavailable'), error: Type.String() }),
      },
    },
  }, async (_request, reply) => {
    const redis = redisState(services);
    try {
      await sql`select 1`.execute(services.db.kysely);
      return { status: 'ok' as const, database: services.db.dialect, ...(await redis) };
    } catch (err) {
      return reply.code(503).send({ status: 'unavailable' as const, error: (err as Error).message });
    }
  });
};

/** `{redis: "ok" | "unreachable"}` with REDIS_URL (a ping bounded by REDIS_TIMEOUT_MS), else nothing. */
async function redisState(services: AppServices): Promise<{ redis?: 'ok' | 'unreachable' }> {
  if (!services.redis) return {};
  return services.redis.ping().then(
    () => ({ redis: 'ok' as const }),
    () => ({ redis: 'unreachable' as const }),
  );
}
