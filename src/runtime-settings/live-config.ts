/**
 * The current runtime settings of this instance: one snapshot, swapped whole when a new version
 * is applied. The views below read the current snapshot on each call, so long-lived services see
 * every change while a call already under way keeps the model and engine it took.
 */
import type { CatalogView, LiveModel } from '../catalog/catalog.ts';
import type { CapabilityName } from '../catalog/schema.ts';
import type { McpServerRuntime } from '../config/stored-config.ts';
import type { ChannelChatModels, EngineRegistry, SyncModelRegistry } from '../providers/registry.ts';
import type { EmbeddingModel, RerankModel, TranscriptionModel } from '../providers/spec.ts';
import type { ConfigSnapshot } from './config-snapshot.ts';

export class LiveConfig {
  #current: ConfigSnapshot;
  readonly #listeners = new Set<(snapshot: ConfigSnapshot, previous: ConfigSnapshot) => void>();

  /** The current catalog, read on each call. */
  readonly catalog: CatalogView;

  constructor(initial: ConfigSnapshot) {
    this.#current = initial;
    const current = () => this.#current;
    this.catalog = {
      get providers() {
        return current().catalog.providers;
      },
      get models() {
        return current().catalog.models;
      },
      find: (alias: string) => current().catalog.find(alias),
      list: (type?: string) => current().catalog.list(type),
      defaultModel: (type: CapabilityName) => current().catalog.defaultModel(type),
      provider: (code: string) => current().catalog.provider(code),
    };
  }

  current(): ConfigSnapshot {
    return this.#current;
  }

  /** Makes `next` current unless a newer version already is; answers whether it did. */
  swap(next: ConfigSnapshot): boolean {
    if (next.version <= this.#current.version) return false;
    const previous = this.#current;
    this.#current = next;
    for (const listener of this.#listeners) listener(next, previous);
    return true;
  }

  /** Called with each new snapshot once it is current; answers the function that stops it. */
  onChange(listener: (snapshot: ConfigSnapshot, previous: ConfigSnapshot) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** The upstream MCP servers as now configured (GENGATE_CONFIG with the admin API's over it), header values resolved. */
  mcpServers(): readonly McpServerRuntime[] {
    return this.#current.merged.mcpServers;
  }

  /** The current engines: a task takes its engine when it starts and keeps it. */
  readonly engines: EngineRegistry = {
    engineFor: (model: LiveModel) => this.#current.engines.engineFor(model),
    engineOn: (model: LiveModel, channel: string) => this.#current.engines.engineOn?.(model, channel) ?? this.#current.engines.engineFor(model),
    findModel: (name: string) => this.#current.engines.findModel?.(name),
    models: () => this.#current.engines.models?.() ?? [],
  };

  readonly chatModels: ChannelChatModels = {
    chatModelOn: (provider: string, channel: string) => this.#current.chatModels.chatModelOn(provider, channel),
  };

  readonly syncModels: { embeddings: SyncModelRegistry<EmbeddingModel>; transcriptions: SyncModelRegistry<TranscriptionModel>; rerankers: SyncModelRegistry<RerankModel> } = {
    embeddings: { modelFor: (model) => this.#current.syncModels.embeddings.modelFor(model) },
    transcriptions: { modelFor: (model) => this.#current.syncModels.transcriptions.modelFor(model) },
    rerankers: { modelFor: (model) => this.#current.syncModels.rerankers.modelFor(model) },
  };
}
