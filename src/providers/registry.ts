import type { Logger } from 'pino';
import type { LiveModel } from '../catalog/catalog.ts';
import type { GengateConfig, ProviderSettings, Settings } from '../config/settings.ts';
import type { AdapterContext, AdapterFactory } from './adapter-support.ts';
import { LocalEngine } from './local/local-engine.ts';
import { comfyuiAdapter } from './comfyui/adapter.ts';
import { openaiImagesAdapter } from './openai/adapter.ts';
import { minimaxAdapter } from './minimax/adapter.ts';
import { sunoAdapter } from './suno/adapter.ts';
import { volcengineAdapter } from './volcengine/adapter.ts';
import { volcHumanAdapter } from './volc-human/adapter.ts';
import { tripoAdapter } from './tripo/adapter.ts';
import { rodinAdapter } from './rodin/adapter.ts';
import { hunyuanAdapter } from './hunyuan/adapter.ts';
import { falAdapter } from './fal/adapter.ts';
import { klingAdapter } from './kling/adapter.ts';
import { bflAdapter } from './bfl/adapter.ts';
import { noopAdapter } from './noop/adapter.ts';
import { LocalChatModel } from './local/chat/local-chat-model.ts';
import { createOpenAiChatModel } from './openai/chat-model.ts';
import { createAnthropicChatModel } from './anthropic/adapter.ts';
import { createGeminiChatModel } from './google/adapter.ts';
import { createOpenAiEmbeddingModel } from './openai/embedding-model.ts';
import { createOpenAiTranscriptionModel } from './openai/transcription-model.ts';
import { createRerankModel } from './cohere/adapter.ts';
import { LocalEmbeddingModel, LocalRerankModel } from './local/text/local-text-models.ts';
import { LocalTranscriptionModel } from './local/audio/local-transcription-model.ts';
import { ApiError } from '../core/errors.ts';
import { TaskRejectedError, type ChatCallOptions, type ChatModel, type EmbeddingModel, type ResponsesCall, type RoutedResponses, type GenerationEngine, type RerankModel, type TranscriptionModel } from './spec.ts';
import { DEFAULT_CONCURRENCY, DEFAULT_RETRY, DEFAULT_TIMEOUT_MS } from './upstream-client.ts';
import { channelKey, channelSpecs } from '../config/channel-config.ts';
import { scrubbingErrors } from './secret-scrubbing.ts';

/** What the registries are built from: the merged config and the API keys stored through the admin API. */
export type RegistrySettings = Pick<Settings, 'localEngineMinDurationMs'> & {
  config: GengateConfig;
  /** Stored API keys by `<provider>/<channel>` (config/stored-config.ts). */
  channelKeys?: ReadonlyMap<string, string>;
};

/** Which engine runs a catalog model. */
export interface EngineRegistry {
  /** The engine of the model's provider (its first channel's): what it serves, whether it can cancel. */
  engineFor(model: LiveModel): GenerationEngine;
  /** The engine of one channel of the model's provider (that channel's endpoint and key); default engineFor. */
  engineOn?(model: LiveModel, channel: string): GenerationEngine;
  /** A model no catalog alias names but an engine serves (a workflow name). */
  findModel?(name: string): LiveModel | undefined;
  /** The models engines serve beyond the catalog (workflows), as they are now. */
  models?(): LiveModel[];
}

const DEFAULT_POLL_INTERVAL_MS = 2_000;
const DEFAULT_MAX_WAIT_MS = 60 * 60_000;

/** Task adapters by name (a provider's `adapter` setting, default its code). */
const ADAPTERS: Record<string, AdapterFactory> = {
  openai: openaiImagesAdapter,
  comfyui: comfyuiAdapter,
  suno: sunoAdapter,
  minimax: minimaxAdapter,
  volcengine: volcengineAdapter,
  'volc-human': volcHumanAdapter,
  tripo: tripoAdapter,
  rodin: rodinAdapter,
  hunyuan: hunyuanAdapter,
  fal: falAdapter,
  kling: klingAdapter,
  bfl: bflAdapter,
  noop: noopAdapter,
};

/** Adapters that serve models of their own (workflows), so their provider needs no catalog entry. */
export const SELF_SERVING_ADAPTERS: readonly string[] = ['comfyui'];

function adapterContext(provider: string, settings: ProviderSettings, apiKey: string | undefined, logger: Logger): AdapterContext {
  if (settings.api_key_env && !apiKey) logger.warn({ provider, env: settings.api_key_env }, 'the API key variable of a provider is not set');
  return {
    provider,
    settings,
    baseURL: settings.base_url,
    apiKey,
    client: {
      provider,
      timeoutMs: settings.timeout_ms ?? DEFAULT_TIMEOUT_MS,
      concurrency: settings.concurrency ?? DEFAULT_CONCURRENCY,
      retry: {
        attempts: settings.retry?.attempts ?? DEFAULT_RETRY.attempts,
        baseDelayMs: settings.retry?.base_delay_ms ?? DEFAULT_RETRY.baseDelayMs,
        maxDelayMs: settings.retry?.max_delay_ms ?? DEFAULT_RETRY.maxDelayMs,
      },
    },
    pollIntervalMs: settings.poll_interval_ms ?? DEFAULT_POLL_INTERVAL_MS,
    maxWaitMs: settings.max_wait_ms ?? DEFAULT_MAX_WAIT_MS,
    fetch,
    logger: logger.child({ provider }),
  };
}

/** Refuses every task: the provider is configured for chat only (no task adapter of that name). */
function noTaskAdapter(provider: string, adapter: string): GenerationEngine {
  return {
    cancellable: false,
    check() {
      throw new TaskRejectedError(`provider ${provider} (adapter ${adapter}) does not run generation tasks`);
    },
    run() {
      throw new TaskRejectedError(`provider ${provider} (adapter ${adapter}) does not run generation tasks`);
    },
  };
}

/**
 * The only place that knows the adapters. A provider configured in GENGATE_CONFIG runs its
 * models on its adapter; everything else (and `adapter: "local"`) runs on the built-in engine.
 */
export function createEngineRegistry(settings: RegistrySettings, logger: Logger): EngineRegistry {
  const local = new LocalEngine({ minDurationMs: settings.localEngineMinDurationMs });
  // Each channel gets an adapter of its own (its base URL, key and connection limit).
  const byChannel = new Map<string, Map<string, GenerationEngine>>();
  const byProvider = new Map<string, GenerationEngine>();
  for (const channel of channelSpecs(settings.config, settings.channelKeys)) {
    const adapter = channel.settings.adapter ?? channel.provider;
    if (adapter === 'local') continue;
    const factory = ADAPTERS[adapter];
    const engine = factory ? scrubbingErrors(factory(adapterContext(channel.provider, channel.settings, channel.apiKey, logger)), channel.apiKey) : noTaskAdapter(channel.provider, adapter);
    if (!byProvider.has(channel.provider)) byProvider.set(channel.provider, engine);
    const channels = byChannel.get(channel.provider) ?? new Map<string, GenerationEngine>();
    byChannel.set(channel.provider, channels.set(channel.name, engine));
  }
  const engineFor = (model: LiveModel) => byProvider.get(model.providerCode) ?? local;
  return {
    engineFor,
    engineOn: (model, channel) => byChannel.get(model.providerCode)?.get(channel) ?? engineFor(model),
    findModel(name) {
      for (const engine of byProvider.values()) {
        const model = engine.findModel?.(name);
        if (model) return model;
      }
      return undefined;
    },
    models: () => [...byProvider.values()].flatMap((engine) => engine.listModels?.() ?? []),
  };
}

/** Which chat model answers a catalog model's chat calls. */
export interface ChatModelRegistry {
  chatModelFor(model: LiveModel): ChatModel;
  /** Routes a Responses call: passed through where the upstream serves the Responses API for the model, else a chat call. */
  respond(call: ResponsesCall, options: ChatCallOptions): Promise<RoutedResponses>;
}

/** The chat model behind each channel. */
export interface ChannelChatModels {
  chatModelOn(provider: string, channel: string): ChatModel;
}

/** Chat APIs of their own, by adapter name: Anthropic's Messages API and Gemini's generateContent. */
const CHAT_ADAPTERS: Record<string, (ctx: AdapterContext) => ChatModel> = {
  anthropic: createAnthropicChatModel,
  google: createGeminiChatModel,
};

/** Providers of the built-in catalog that speak the OpenAI chat API, with the base URL used when their settings give none. */
const OPENAI_COMPATIBLE_BASE_URLS: Record<string, string> = {
  deepseek: 'https://api.deepseek.com',
  qwen: 'https://dashscope-intl.aliyuncs.com/compatible-mode/v1',
};

/**
 * Chat models of a channel whose adapter has a chat API of its own (CHAT_ADAPTERS) speak it;
 * other channels with a base_url, of the `openai` adapter (whose base URL defaults to OpenAI's)
 * or of a known OpenAI-compatible provider (OPENAI_COMPATIBLE_BASE_URLS) speak the OpenAI chat
 * API there (OpenAI, vLLM, Ollama, DeepSeek, …); everything else (and `adapter: "local"`)
 * answers from the local chat model.
 */
export function createChatModelRegistry(settings: RegistrySettings, logger: Logger): ChannelChatModels {
  const local = new LocalChatModel({ minDurationMs: settings.localEngineMinDurationMs });
  const byChannel = new Map<string, Map<string, ChatModel>>();
  for (const channel of channelSpecs(settings.config, settings.channelKeys)) {
    const adapter = channel.settings.adapter ?? channel.provider;
    const compatibleURL = OPENAI_COMPATIBLE_BASE_URLS[adapter];
    const factory = CHAT_ADAPTERS[adapter] ?? (channel.settings.base_url !== undefined || adapter === 'openai' || compatibleURL ? createOpenAiChatModel : undefined);
    if (adapter === 'local' || !factory) continue;
    const ctx = adapterContext(channel.provider, channel.settings, channel.apiKey, logger);
    const channels = byChannel.get(channel.provider) ?? new Map<string, ChatModel>();
    byChannel.set(channel.provider, channels.set(channel.name, scrubbingErrors(factory({ ...ctx, baseURL: ctx.baseURL ?? compatibleURL }), channel.apiKey)));
  }
  return { chatModelOn: (provider, channel) => byChannel.get(provider)?.get(channel) ?? local };
}

/** The models of one kind of synchronous call (embeddings, transcription, rerank), by catalog model. */
export interface SyncModelRegistry<M> {
  modelFor(model: LiveModel): M;
}

/** Adapters that speak a rerank API (the Cohere v2 / Jina shape). */
const RERANK_ADAPTERS: readonly string[] = ['cohere', 'jina'];

/**
 * One kind of synchronous call by provider: a configured provider whose adapter `remoteFor` knows
 * gets that model; a configured provider it does not know answers 400 (its models cannot serve
 * this call); everything else (and `adapter: "local"`) the local model.
 */
function syncModelRegistry<M extends object>(settings: RegistrySettings, logger: Logger, local: M, call: string, remoteFor: (adapter: string, providerSettings: ProviderSettings) => ((ctx: AdapterContext) => M) | undefined): SyncModelRegistry<M> {
  const byProvider = new Map<string, M>();
  for (const [provider, providerSettings] of Object.entries(settings.config.providers ?? {})) {
    const adapter = providerSettings.adapter ?? provider;
    if (adapter === 'local') continue;
    const factory = remoteFor(adapter, providerSettings);
    // The provider's own key: that of its channel named after it when one is stored, else its api_key_env's.
    const apiKey = channelKey(providerSettings, settings.channelKeys?.get(`${provider}/${provider}`));
    byProvider.set(provider, factory ? scrubbingErrors(factory(adapterContext(provider, providerSettings, apiKey, logger)), apiKey) : refusing<M>(provider, adapter, call));
  }
  return { modelFor: (model) => byProvider.get(model.providerCode) ?? local };
}

/** A model whose every call is 400: its provider's adapter does not serve this call. */
function refusing<M extends object>(provider: string, adapter: string, call: string): M {
  return new Proxy({} as M, {
    get: () => async () => {
      throw new ApiError('model_capability_mismatch', `provider ${provider} (adapter ${adapter}) does not serve ${call}`, 'model');
    },
  });
}

/** OpenAI-compatible servers: the `openai` adapter, or any provider with a base_url that is not a rerank API. */
const isOpenAiCompatible = (adapter: string, providerSettings: ProviderSettings) => adapter === 'openai' || (providerSettings.base_url !== undefined && !RERANK_ADAPTERS.includes(adapter));

/** Embeddings, transcription and rerank models (POST /v1/embeddings, /v1/audio/transcriptions, /v1/rerank and their /openai/v1 twins). */
export function createSyncModelRegistries(settings: RegistrySettings, logger: Logger): {
  embeddings: SyncModelRegistry<EmbeddingModel>;
  transcriptions: SyncModelRegistry<TranscriptionModel>;
  rerankers: SyncModelRegistry<RerankModel>;
} {
  return {
    embeddings: syncModelRegistry<EmbeddingModel>(settings, logger, new LocalEmbeddingModel(), 'embeddings', (adapter, s) => (isOpenAiCompatible(adapter, s) ? createOpenAiEmbeddingModel : undefined)),
    transcriptions: syncModelRegistry<TranscriptionModel>(settings, logger, new LocalTranscriptionModel(), 'transcriptions', (adapter, s) => (isOpenAiCompatible(adapter, s) ? createOpenAiTranscriptionModel : undefined)),
    rerankers: syncModelRegistry<RerankModel>(settings, logger, new LocalRerankModel(), 'rerank', (adapter) => (RERANK_ADAPTERS.includes(adapter) ? createRerankModel : undefined)),
  };
}

/**
 * Whether an adapter of this name exists: a task adapter, a chat API of its own, a known
 * OpenAI-compatible provider or a rerank API. Every provider of the built-in catalog has one.
 */
export function hasAdapter(adapter: string): boolean {
  return adapter in ADAPTERS || adapter in CHAT_ADAPTERS || adapter in OPENAI_COMPATIBLE_BASE_URLS || RERANK_ADAPTERS.includes(adapter);
}
