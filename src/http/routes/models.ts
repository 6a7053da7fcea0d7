import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ApiError } from '../../core/errors.ts';
import { CAPABILITY_NAMES } from '../../catalog/catalog.ts';
import type { LiveModel } from '../../catalog/catalog.ts';
import { toCompatItem, toPlatformItem, type PlatformModelItem } from '../../catalog/listing.ts';
import { billingModeOf } from '../../limits/pricing.ts';
import type { AppServices } from '../services.ts';

const security = [{ bearer: [] }];
/** Types the listing accepts: the catalog's capability names plus the listing-only ones. */
const LISTING_TYPES: readonly string[] = [...CAPABILITY_NAMES, 'video_edit'];
const listingTypes = new Set(LISTING_TYPES);

/** A /v1/models/list item: the platform item, with its prices when the configuration sets them. */
type ListedModel = PlatformModelItem & { billing_mode?: ReturnType<typeof billingModeOf> };

/** GET /v1/models and /v1/models/list. */
export const modelRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  const { catalog, generations } = services;
  // A snapshot of the runtime settings is fixed, so its part of each answer is built once per
  // snapshot; workflows (engine models) change with their folder and are added on each request.
  const created = Math.floor(Date.now() / 1000);
  const ofType = (type: string) => (model: LiveModel) => type === 'all' || (model.modelTypes as string[]).includes(type);
  const platformItem = (model: LiveModel): ListedModel => {
    const pricing = services.live.current().config.models?.[model.alias]?.pricing;
    return pricing ? { ...toPlatformItem(model), billing_mode: billingModeOf(pricing) } : toPlatformItem(model);
  };
  interface Answers {
    compatItems: ReturnType<typeof toCompatItem>[];
    compatBody: string;
    listItems: Map<string, ListedModel[]>;
    listBodies: Map<string, string>;
  }
  const bySnapshot = new WeakMap<object, Answers>();
  const answers = (): Answers => {
    const snapshot = services.live.current();
    let found = bySnapshot.get(snapshot);
    if (!found) {
      const compatItems = snapshot.catalog.list().map((m) => toCompatItem(m, created));
      found = { compatItems, compatBody: JSON.stringify({ data: compatItems, success: true }), listItems: new Map(), listBodies: new Map() };
      bySnapshot.set(snapshot, found);
    }
    return found;
  };

  app.get('/v1/models', {
    schema: { tags: ['models'], summary: 'Models in the compatibility shape', security },
  }, async (_request, reply) => {
    const served = generations.engineModels();
    const { compatBody, compatItems } = answers();
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
  }, async (request, reply) => {
    const type = request.query.type || 'all';
    if (type !== 'all' && !listingTypes.has(type)) {
      throw new ApiError('invalid_parameter', `type must be all or a capability type (${LISTING_TYPES.join(', ')})`, 'type');
    }
    const { listItems, listBodies } = answers();
    let items = listItems.get(type);
    if (!items) {
      items = catalog.list(type).map(platformItem);
      listItems.set(type, items);
      listBodies.set(type, JSON.stringify({ modelList: items, count: items.length }));
    }
    const served = generations.engineModels().filter(ofType(type)).map(platformItem);
    const modelList = [...items, ...served];
    return reply.type('application/json; charset=utf-8').send(served.length === 0 ? listBodies.get(type)! : JSON.stringify({ modelList, count: modelList.length }));
  });
};
