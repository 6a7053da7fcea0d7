/**
 * The model list of GET /v1/models/list (and the MCP tool list_models): catalog models and the
 * workflows engines serve, with their prices when the configuration sets them.
 */
import { CAPABILITY_NAMES, type CatalogView, type LiveModel } from '../catalog/catalog.ts';
import { toPlatformItem, type PlatformModelItem } from '../catalog/listing.ts';
import { ApiError } from '../core/errors.ts';
import type { ModelPricing } from '../config/settings.ts';
import type { GenerationService } from '../tasks/generation-service.ts';
import { billingModeOf } from './pricing.ts';

/** Types the listing accepts: the catalog's capability names plus the listing-only ones. */
const LISTING_TYPES: readonly string[] = [...CAPABILITY_NAMES, 'video_edit'];
const listingTypes = new Set(LISTING_TYPES);

/** A /v1/models/list item: the platform item, with its prices when the configuration sets them. */
export type ListedModel = PlatformModelItem & { billing_mode?: ReturnType<typeof billingModeOf> };

export class ModelList {
  // A snapshot of the runtime settings is fixed, so the catalog's part of each answer is built
  // once per snapshot; workflows (engine models) change with their folder and are added on each request.
  private readonly bySnapshot = new WeakMap<object, Map<string, { items: ListedModel[]; body: string }>>();

  private readonly deps: { catalog: CatalogView; generations: GenerationService; pricingOf(alias: string): ModelPricing | undefined; snapshot(): object };

  constructor(deps: { catalog: CatalogView; generations: GenerationService; pricingOf(alias: string): ModelPricing | undefined; snapshot(): object }) {
    this.deps = deps;
  }

  /** The models of `type` (`all` or a capability type), or 400 invalid_parameter naming `param`. */
  list(type: string, param = 'type'): { modelList: ListedModel[]; count: number } {
    const cached = this.catalogPart(type, param);
    const modelList = [...cached.items, ...this.served(type)];
    return { modelList, count: modelList.length };
  }

  /** The answer of GET /v1/models/list?type= as JSON text. */
  body(type: string): string {
    const cached = this.catalogPart(type, 'type');
    return this.served(type).length === 0 ? cached.body : JSON.stringify(this.list(type));
  }

  private catalogPart(type: string, param: string): { items: ListedModel[]; body: string } {
    if (type !== 'all' && !listingTypes.has(type)) {
      throw new ApiError('invalid_parameter', `type must be all or a capability type (${LISTING_TYPES.join(', ')})`, param);
    }
    const snapshot = this.deps.snapshot();
    let byType = this.bySnapshot.get(snapshot);
    if (!byType) this.bySnapshot.set(snapshot, (byType = new Map()));
    let cached = byType.get(type);
    if (!cached) {
      const items = this.deps.catalog.list(type).map((m) => this.item(m));
      cached = { items, body: JSON.stringify({ modelList: items, count: items.length }) };
      byType.set(type, cached);
    }
    return cached;
  }

  private served(type: string): ListedModel[] {
    return this.deps.generations.engineModels().filter((model) => type === 'all' || (model.modelTypes as string[]).includes(type)).map((m) => this.item(m));
  }

  private item(model: LiveModel): ListedModel {
    const pricing = this.deps.pricingOf(model.alias);
    return pricing ? { ...toPlatformItem(model), billing_mode: billingModeOf(pricing) } : toPlatformItem(model);
  }
}
