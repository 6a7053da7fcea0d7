import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { toCompatItem } from '../../catalog/listing.ts';
import type { AppServices } from '../services.ts';

const security = [{ bearer: [] }];

/** GET /v1/models and /v1/models/list. */
export const modelRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  const { generations } = services;
  // A snapshot of the runtime settings is fixed, so the compatible listing is built once per snapshot.
  const created = Math.floor(Date.now() / 1000);
  const compatBySnapshot = new WeakMap<object, { compatItems: ReturnType<typeof toCompatItem>[]; compatBody: string }>();
  const compat = () => {
    const snapshot = services.live.current();
    let found = compatBySnapshot.get(snapshot);
    if (!found) {
      const compatItems = snapshot.catalog.list().map((m) => toCompatItem(m, created));
      found = { compatItems, compatBody: JSON.stringify({ data: compatItems, success: true }) };
      compatBySnapshot.set(snapshot, found);
    }
    return found;
  };

  app.get('/v1/models', {
    schema: { tags: ['models'], summary: 'Models in the compatibility shape', security },
  }, async (_request, reply) => {
    const served = generations.engineModels();
    const { compatBody, compatItems } = compat();
    const body = served.length === 0 ? compatBody : JSON.stringify({ data: [...compatItems, ...served.map((m) => toCompatItem(m, created))], success: true });
    return reply.type('application/json; charset=utf-8').send(body);
  });

  app.get('/v1/models/list', {
    schema: {
      tags: ['models'],
      summary: 'Models with their capabilities, optionally of one capability type; ComfyUI workflows included',
      security,
      querystring: Type.Object({ type: Type.Optional(Type.String({ description: 'capability type, or all' })) }),
    },
  }, async (request, reply) => reply.type('application/json; charset=utf-8').send(services.modelList.body(request.query.type || 'all')));
};
