/**
 * One immutable set of runtime settings and everything built from it: the catalog, the engines,
 * chat and synchronous models of every channel, the channels' routing specs. A call takes what it
 * needs of the current snapshot when it starts and finishes on it, whatever changes meanwhile.
 */
import type { Logger } from 'pino';
import { buildCatalog, type Catalog, type CatalogDocument } from '../catalog/catalog.ts';
import { channelSpecs, checkRoutingConfig, routingPolicy, type ChannelSpec, type RoutingPolicy } from '../config/channel-config.ts';
import { checkProviderCodes, type GengateConfig, type Settings } from '../config/settings.ts';
import type { MergedConfig } from '../config/stored-config.ts';
import { createChatModelRegistry, createEngineRegistry, createSyncModelRegistries, SELF_SERVING_ADAPTERS, type ChannelChatModels, type EngineRegistry } from '../providers/registry.ts';

export interface ConfigSnapshot {
  /** The stored settings' version it was built from (0: GENGATE_CONFIG alone). */
  readonly version: number;
  readonly merged: MergedConfig;
  readonly config: GengateConfig;
  readonly catalog: Catalog;
  readonly engines: EngineRegistry;
  readonly chatModels: ChannelChatModels;
  readonly syncModels: ReturnType<typeof createSyncModelRegistries>;
  readonly specs: readonly ChannelSpec[];
  readonly policy: RoutingPolicy;
}

/** What every snapshot is built over: the catalog file as read at start, the process settings. */
export interface SnapshotBase {
  document: CatalogDocument;
  /** The catalog's file, named in error lines. */
  catalogSource: string;
  settings: Settings;
  logger: Logger;
  /** Engines a caller supplied instead of the configured ones (tests script engines this way). */
  engines?: EngineRegistry;
}

/** Builds a snapshot; throws CatalogError or SettingsError naming what the settings get wrong. */
export function buildSnapshot(base: SnapshotBase, merged: MergedConfig, version: number): ConfigSnapshot {
  const { config } = merged;
  const catalog = buildCatalog(base.document, config, base.catalogSource, { models: merged.addedModels, displayNames: merged.displayNames });
  checkProviderCodes(config, [...catalog.providers.map((p) => p.code), ...catalog.models.map((m) => m.providerCode)], SELF_SERVING_ADAPTERS);
  checkRoutingConfig(config, (alias) => catalog.find(alias)?.providerCode);
  const registrySettings = { localEngineMinDurationMs: base.settings.localEngineMinDurationMs, config, channelKeys: merged.channelKeys };
  const logger = base.logger.child({ component: 'providers' });
  return Object.freeze({
    version,
    merged,
    config,
    catalog,
    engines: base.engines ?? createEngineRegistry(registrySettings, logger),
    chatModels: createChatModelRegistry(registrySettings, logger),
    syncModels: createSyncModelRegistries(registrySettings, logger),
    specs: channelSpecs(config, merged.channelKeys),
    policy: routingPolicy(config.routing),
  });
}
