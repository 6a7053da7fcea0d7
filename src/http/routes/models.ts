import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ApiError } from '../../core/errors.ts';
import { CAPABILITY_NAMES } from '../../catalog/catalog.ts';
import { toCompatItem, toPlatformItem } from '../../catalog/listing.ts';
import { billingModeOf } from '../../limits/pricing.ts';
import type { AppServices } from '../services.ts';

const security = [{ bearer: [] }];
/** Types the listing accepts: the catalog's capability names plus the listing-only ones. */
const LISTING_TYPES: readonly string[] = [...CAPABILITY_NAMES, 'video_edit'];
const listingTypes = new Set(LISTING_TYPES);

/** GET /v1/models and /v1/models/list. */
export const modelRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  const { catalog } = services;
  // The catalog is fixed once loaded, so each answer is serialized once and reused.
  const created = Math.floor(Date.now() / 1000);
  const compatBody = JSON.stringify({ data: catalog.list().map((m) => toCompatItem(m, created)), success: true });
  const listBodies = new Map<string, string>();
  const listBody = (type: string): string => {
    let body = listBodies.get(type);
    if (body === undefined) {
      const modelList = catalog.list(type).map((model) => {
        const pricing = services.settings.config.models?.[model.alias]?.pricing;
        return pricing ? { ...toPlatformItem(model), billing_mode: billingModeOf(pricing) } : toPlatformItem(model);
      });
      body = JSON.stringify({ modelList, count: modelList.length });
      listBodies.set(type, body);
    }
    return body;
  };

  app.get('/v1/models', {
    schema: { tags: ['models'], summary: 'Models in the compatibility shape', security },
  }, async (_request, reply) => reply.type('application/json; charset=utf-8').send(compatBody));

  app.get('/v1/models/list', {
    schema: {
      tags: ['models'],
      summary: 'Models with their capabilities, optionally of one capability type',
      security,
      querystring: Type.Object({ type: Type.Optional(Type.String({ description: 'capability type, or all' })) }),
    },
  }, async (request, reply) => {
    const type = request.query.type || 'all';
    if (type !== 'all' && !listingTypes.has(type)) {
      throw new ApiError('invalid_parameter', `type must be all or a capability type (${LISTING_TYPES.join(', ')})`, 'type');
    }
    return reply.type('application/json; charset=utf-8').send(listBody(type));
  });
};
