/**
 * The runtime settings set through the admin API: providers, channels, models and upstream MCP
 * servers, stored in the database over GENGATE_CONFIG. A change is checked by building the
 * snapshot it makes (nothing is written when that fails), then written with its audit row and a
 * new version in one transaction, applied here before the answer, and announced; every other
 * instance reloads on the announcement, or at its next version check when one is missed.
 */
import type { Logger } from 'pino';
import { CatalogError, validateCatalog, type CatalogDocument, type LiveModel } from '../catalog/catalog.ts';
import type { ChannelSpec } from '../config/channel-config.ts';
import { SecretBox, SecretKeyMissingError, SecretUnreadableError, lastFour, scrubSecrets, type SealedSecret } from '../config/secret-box.ts';
import { GATEWAY_MCP_SERVER, SettingsError, type ChannelSettings, type GengateConfig, type ModelPricing } from '../config/settings.ts';
import {
  isEnvReference, mergeConfig, resolveHeaderValue, sealedSecrets, storedConfigOf,
  type ChannelRecord, type ConfigRecord, type McpServerRecord, type MergedConfig, type ModelPatch, type ProviderPatch, type RecordKind, type StoredConfig, type ValueSource,
} from '../config/stored-config.ts';
import { ApiError } from '../core/errors.ts';
import { hasAdapter, SELF_SERVING_ADAPTERS } from '../providers/registry.ts';
import type { EventBus } from '../storage/event-bus.ts';
import type { ConfigRecordsRepo } from '../storage/repos/config-records-repo.ts';
import { auditRows, MASKED, type AuditContext, type AuditEntry } from './audit-log.ts';
import { buildSnapshot, type ConfigSnapshot, type SnapshotBase } from './config-snapshot.ts';
import type { LiveConfig } from './live-config.ts';

/** A channel as the admin API shows it: never its key, only whether it has one and its last four characters. */
export interface ChannelView {
  name: string;
  base_url: string | null;
  weight: number;
  priority: number;
  models: string[] | null;
  concurrency: number | null;
  options: Record<string, unknown>;
  api_key_set: boolean;
  api_key_last4: string | null;
  source: ValueSource;
}

export interface ProviderView {
  code: string;
  adapter: string;
  base_url: string | null;
  options: Record<string, unknown>;
  concurrency: number | null;
  retry: ProviderPatch['retry'] | null;
  source: ValueSource;
  channels: ChannelView[];
}

export type ModelView = LiveModel & { pricing: ModelPricing | null; fallbacks: string[]; source: ValueSource };

export interface McpServerView {
  name: string;
  url: string;
  /** `env:VAR` references as given; literal values (secrets) as "***". */
  headers: Record<string, string>;
  tools: string[] | null;
  source: ValueSource;
}

/** What a channel test found: whether the call succeeded, how long it took, on which model, and the error (scrubbed of the key). */
export interface ChannelTest {
  ok: boolean;
  latency_ms: number;
  model: string | null;
  error: string | null;
}

/** The fields of POST /admin/providers/:code/channels (PATCH: the same but `name`). */
export interface ChannelInput {
  name?: string;
  base_url?: string;
  api_key?: string;
  weight?: number;
  priority?: number;
  models?: string[];
  concurrency?: number;
  options?: Record<string, unknown>;
}

export interface McpServerInput {
  name?: string;
  url?: string;
  headers?: Record<string, string>;
  tools?: string[];
}

/** What a change writes, what its audit rows say, and what it answers. */
interface ChangePlan<T> {
  put: ConfigRecord[];
  remove: { kind: RecordKind; key: string }[];
  audit(before: ConfigSnapshot, after: ConfigSnapshot): AuditEntry[];
  answer(after: ConfigSnapshot): T;
  /** The field a settings problem found while building the new snapshot is reported against. */
  param: string;
}

export interface RuntimeSettingsDeps {
  repo: ConfigRecordsRepo;
  live: LiveConfig;
  base: SnapshotBase;
  file: GengateConfig;
  secrets: SecretBox;
  bus: EventBus;
  instanceId: string;
  checkIntervalMs: number;
  logger: Logger;
}

const channelKey = (provider: string, name: string) => `${provider}/${name}`;

/** Opens sealed secrets; the first one no key reads stops the start naming the variable. */
function opener(secrets: SecretBox): (sealed: SealedSecret) => string {
  return (sealed) => {
    try {
      return secrets.open(sealed);
    } catch (err) {
      if (err instanceof SecretUnreadableError) throw new SettingsError(`GENGATE_SECRET_KEY: cannot read the secrets stored through the admin API (${err.message})`);
      throw err;
    }
  };
}

/**
 * The first snapshot of a start: GENGATE_CONFIG with the stored settings over it. An instance
 * whose keys cannot read every stored secret refuses to start, naming the variable and the secrets.
 */
export async function loadInitialSnapshot(repo: ConfigRecordsRepo, base: SnapshotBase, file: GengateConfig, secrets: SecretBox): Promise<ConfigSnapshot> {
  const { version, records } = await repo.load();
  const stored = storedConfigOf(records);
  const unreadable = sealedSecrets(stored).filter(({ sealed }) => {
    try {
      secrets.open(sealed);
      return false;
    } catch {
      return true;
    }
  });
  if (unreadable.length > 0) {
    throw new SettingsError(`GENGATE_SECRET_KEY: ${secrets.canSeal ? 'does not read' : 'is not set, and is needed to read'} the secrets stored through the admin API (${unreadable.map((s) => s.name).join(', ')}); set the key they were stored under (or keep it in GENGATE_SECRET_KEY_PREVIOUS after a rotation)`);
  }
  return buildSnapshot(base, mergeConfig(file, stored, opener(secrets)), version);
}

/** The settings problem of a refused snapshot, as a 400 naming `param`. */
function refusal(err: unknown, param: string): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof CatalogError) return new ApiError('invalid_parameter', err.lines.join('; '), param);
  if (err instanceof SettingsError) return new ApiError('invalid_parameter', err.message.replaceAll('\n', '; '), param);
  throw err;
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

export class RuntimeSettingsService {
  /** Changes and reloads of this instance, one at a time. */
  private queue: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;

  private readonly deps: RuntimeSettingsDeps;

  constructor(deps: RuntimeSettingsDeps) {
    this.deps = deps;
  }

  /** Follows the other instances' changes: their announcements, and a version check as a safety net. */
  start(): void {
    this.unsubscribe = this.deps.bus.subscribe('config.changed', (message) => {
      if (message.origin !== this.deps.instanceId && message.version > this.deps.live.current().version) void this.reloadLogged();
    });
    this.timer = setInterval(() => {
      void this.deps.repo.version().then((version) => {
        if (version > this.deps.live.current().version) return this.reloadLogged();
        return undefined;
      }, (err: unknown) => this.deps.logger.warn({ err }, 'reading the runtime settings version failed'));
    }, this.deps.checkIntervalMs);
    this.timer.unref();
  }

  close(): void {
    clearInterval(this.timer);
    this.unsubscribe?.();
  }

  private serialized<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work, work);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async reloadLogged(): Promise<void> {
    await this.reload().catch((err: unknown) => this.deps.logger.error({ err }, 'applying the stored runtime settings failed; the previous ones stay in force'));
  }

  /** Applies the stored settings when they are newer than the ones in force. */
  reload(): Promise<void> {
    return this.serialized(async () => {
      const { version, records } = await this.deps.repo.load();
      if (version <= this.deps.live.current().version) return;
      this.apply(buildSnapshot(this.deps.base, this.merge(storedConfigOf(records)), version));
    });
  }

  private apply(snapshot: ConfigSnapshot): void {
    if (this.deps.live.swap(snapshot)) this.deps.logger.info({ version: snapshot.version }, 'runtime settings applied');
  }

  private merge(stored: StoredConfig): MergedConfig {
    return mergeConfig(this.deps.file, stored, opener(this.deps.secrets));
  }

  /**
   * Runs one change: the plan is made against the stored settings as they are now, the snapshot
   * it leads to is built (a refusal changes nothing), then records, audit rows and the new version
   * are written together, and the snapshot is applied before the caller answers.
   */
  private change<T>(ctx: AuditContext, plan: (current: { stored: StoredConfig; snapshot: ConfigSnapshot }) => ChangePlan<T>): Promise<T> {
    return this.serialized(async () => {
      const loaded = await this.deps.repo.load();
      // Another instance's change not applied here yet: the plan starts from it.
      if (loaded.version > this.deps.live.current().version) this.apply(buildSnapshot(this.deps.base, this.merge(storedConfigOf(loaded.records)), loaded.version));
      const before = this.deps.live.current();
      const steps = plan({ stored: storedConfigOf(loaded.records), snapshot: before });
      const records = new Map(loaded.records.map((r) => [`${r.kind}\u0000${r.key}`, r]));
      for (const { kind, key } of steps.remove) records.delete(`${kind}\u0000${key}`);
      for (const record of steps.put) records.set(`${record.kind}\u0000${record.key}`, record);
      let candidate: ConfigSnapshot;
      try {
        candidate = buildSnapshot(this.deps.base, this.merge(storedConfigOf([...records.values()])), before.version);
      } catch (err) {
        throw refusal(err, steps.param);
      }
      const version = await this.deps.repo.commit({ put: steps.put, remove: steps.remove, audit: auditRows(ctx, steps.audit(before, candidate)) });
      const after = Object.freeze({ ...candidate, version });
      if (version === loaded.version + 1) this.apply(after);
      else {
        // Another instance wrote in between: its change and this one are read back together.
        const reloaded = await this.deps.repo.load();
        this.apply(buildSnapshot(this.deps.base, this.merge(storedConfigOf(reloaded.records)), reloaded.version));
      }
      await this.deps.bus.publish('config.changed', { version, origin: this.deps.instanceId }).catch((err: unknown) => this.deps.logger.warn({ err }, 'announcing new runtime settings failed; the other instances apply them at their next version check'));
      return steps.answer(this.deps.live.current());
    });
  }

  // ---- views ------------------------------------------------------------------------------

  private channelView(snapshot: ConfigSnapshot, spec: ChannelSpec): ChannelView {
    return {
      name: spec.name,
      base_url: spec.settings.base_url ?? null,
      weight: spec.weight,
      priority: spec.priority,
      models: spec.models ? [...spec.models] : null,
      concurrency: spec.settings.concurrency ?? null,
      options: spec.settings.options ?? {},
      api_key_set: spec.apiKey !== undefined,
      api_key_last4: spec.apiKey === undefined ? null : lastFour(spec.apiKey),
      source: snapshot.merged.sources.channels.get(channelKey(spec.provider, spec.name)) ?? 'file',
    };
  }

  private providerView(snapshot: ConfigSnapshot, code: string): ProviderView | undefined {
    const settings = snapshot.config.providers?.[code];
    if (!settings) return undefined;
    return {
      code,
      adapter: settings.adapter ?? code,
      base_url: settings.base_url ?? null,
      options: settings.options ?? {},
      concurrency: settings.concurrency ?? null,
      retry: settings.retry ?? null,
      source: snapshot.merged.sources.providers.get(code) ?? 'file',
      channels: snapshot.specs.filter((s) => s.provider === code).map((s) => this.channelView(snapshot, s)),
    };
  }

  providers(): ProviderView[] {
    const snapshot = this.deps.live.current();
    return Object.keys(snapshot.config.providers ?? {}).map((code) => this.providerView(snapshot, code)!);
  }

  private modelView(snapshot: ConfigSnapshot, model: LiveModel): ModelView {
    const override = snapshot.config.models?.[model.alias];
    return { ...model, pricing: override?.pricing ?? null, fallbacks: override?.fallbacks ?? [], source: snapshot.merged.sources.models.get(model.alias) ?? 'catalog' };
  }

  models(): ModelView[] {
    const snapshot = this.deps.live.current();
    return snapshot.catalog.models.map((m) => this.modelView(snapshot, m));
  }

  private mcpView(snapshot: ConfigSnapshot, name: string): McpServerView | undefined {
    const server = snapshot.merged.mcpServers.find((s) => s.name === name);
    return server && { name, url: server.url, headers: server.headerViews, tools: server.tools ?? null, source: server.source };
  }

  mcpServers(): McpServerView[] {
    const snapshot = this.deps.live.current();
    return snapshot.merged.mcpServers.map((s) => this.mcpView(snapshot, s.name)!);
  }

  // ---- checks -----------------------------------------------------------------------------

  private seal(secret: string, param: string): SealedSecret {
    try {
      return this.deps.secrets.seal(secret);
    } catch (err) {
      if (err instanceof SecretKeyMissingError) throw new ApiError('secret_key_not_configured', `storing a secret needs GENGATE_SECRET_KEY (32 bytes, base64) set on the server; ${param} was not stored`, param);
      throw err;
    }
  }

  /** The catalog's and the configured provider codes, as a path may name them. */
  private knownProvider(snapshot: ConfigSnapshot, code: string, adapter: string | undefined): boolean {
    return code in (snapshot.config.providers ?? {}) || snapshot.catalog.provider(code) !== undefined || snapshot.catalog.models.some((m) => m.providerCode === code) || (adapter !== undefined && SELF_SERVING_ADAPTERS.includes(adapter));
  }

  private checkBaseUrl(value: string | undefined, param = 'base_url'): void {
    if (value !== undefined && !isHttpUrl(value)) throw new ApiError('invalid_parameter', `${param} must be an http(s) URL`, param);
  }

  private checkChannelModels(snapshot: ConfigSnapshot, provider: string, models: string[] | undefined): void {
    for (const [i, alias] of (models ?? []).entries()) {
      const model = snapshot.catalog.find(alias);
      if (!model) throw new ApiError('invalid_parameter', `no catalog model has the alias ${alias}`, `models[${i}]`);
      if (model.providerCode !== provider) throw new ApiError('invalid_parameter', `${alias} is a model of provider ${model.providerCode}, not ${provider}`, `models[${i}]`);
    }
  }

  private requireModel(snapshot: ConfigSnapshot, alias: string): LiveModel {
    const model = snapshot.catalog.find(alias);
    if (!model) throw new ApiError('model_not_found', `no model has the alias ${alias}`, 'alias');
    return model;
  }

  private requireChannel(snapshot: ConfigSnapshot, provider: string, name: string): ChannelSpec {
    const spec = snapshot.specs.find((s) => s.provider === provider && s.name === name);
    if (!spec) throw new ApiError('channel_not_found', `provider ${provider} has no channel ${name}`, 'name');
    return spec;
  }

  // ---- providers and channels -------------------------------------------------------------

  /** PUT /admin/providers/:code: sets the given fields; the others keep their file or default values. */
  putProvider(ctx: AuditContext, code: string, patch: ProviderPatch): Promise<ProviderView> {
    return this.change(ctx, ({ stored, snapshot }) => {
      const adapter = patch.adapter ?? snapshot.config.providers?.[code]?.adapter;
      if (!this.knownProvider(snapshot, code, adapter)) throw new ApiError('provider_not_found', `no catalog provider has the code ${code} (a provider serving workflows names its adapter, e.g. "adapter": "${SELF_SERVING_ADAPTERS[0]}")`, 'code');
      if (patch.adapter !== undefined && patch.adapter !== 'local' && !hasAdapter(patch.adapter)) throw new ApiError('invalid_parameter', `no adapter is named ${patch.adapter}`, 'adapter');
      this.checkBaseUrl(patch.base_url);
      const record = { ...stored.providers[code], ...patch };
      return {
        put: [{ kind: 'provider', key: code, value: record }],
        remove: [],
        param: 'body',
        audit: (before, after) => [{ action: 'provider.update', target: `provider:${code}`, before: this.providerView(before, code) ?? null, after: this.providerView(after, code) }],
        answer: (after) => this.providerView(after, code)!,
      };
    });
  }

  /** POST /admin/providers/:code/channels. */
  createChannel(ctx: AuditContext, provider: string, input: ChannelInput & { name: string }): Promise<ChannelView> {
    return this.change(ctx, ({ snapshot }) => {
      if (!this.knownProvider(snapshot, provider, snapshot.config.providers?.[provider]?.adapter)) throw new ApiError('provider_not_found', `no provider has the code ${provider}`, 'code');
      if (snapshot.specs.some((s) => s.provider === provider && s.name === input.name)) throw new ApiError('invalid_parameter', `provider ${provider} already has a channel named ${input.name}`, 'name');
      this.checkBaseUrl(input.base_url);
      this.checkChannelModels(snapshot, provider, input.models);
      const { name, ...fields } = input;
      const record = this.channelRecord({}, fields);
      return this.channelPlan(provider, name, record, 'channel.create', undefined);
    });
  }

  /** PATCH /admin/providers/:code/channels/:name: on a channel of the file it stores an override. */
  updateChannel(ctx: AuditContext, provider: string, name: string, input: ChannelInput): Promise<ChannelView> {
    return this.change(ctx, ({ stored, snapshot }) => {
      const current = this.requireChannel(snapshot, provider, name);
      this.checkBaseUrl(input.base_url);
      this.checkChannelModels(snapshot, provider, input.models);
      const record = this.channelRecord(stored.channels[provider]?.[name] ?? {}, input);
      return this.channelPlan(provider, name, record, 'channel.update', this.channelView(snapshot, current));
    });
  }

  /** DELETE /admin/providers/:code/channels/:name: a channel of the file is hidden, one of the API removed. */
  deleteChannel(ctx: AuditContext, provider: string, name: string): Promise<void> {
    return this.change(ctx, ({ snapshot }) => {
      const current = this.requireChannel(snapshot, provider, name);
      const fromFile = snapshot.merged.sources.channels.get(channelKey(provider, name)) === 'file';
      const key = channelKey(provider, name);
      return {
        put: fromFile ? [{ kind: 'channel', key, value: { deleted: true } satisfies ChannelRecord }] : [],
        remove: fromFile ? [] : [{ kind: 'channel', key }],
        param: 'name',
        audit: (before) => [{ action: 'channel.delete', target: `channel:${key}`, before: this.channelView(before, current), after: null }],
        answer: () => undefined,
      };
    });
  }

  private channelRecord(previous: ChannelRecord, input: ChannelInput): ChannelRecord {
    const { api_key, name: _name, ...fields } = input;
    const record: ChannelRecord = { ...previous, ...(fields as Omit<ChannelSettings, 'name'>) };
    delete record.deleted;
    if (api_key !== undefined) record.api_key = this.seal(api_key, 'api_key');
    return record;
  }

  private channelPlan(provider: string, name: string, record: ChannelRecord, action: string, before: ChannelView | undefined): ChangePlan<ChannelView> {
    const key = channelKey(provider, name);
    const view = (after: ConfigSnapshot) => this.channelView(after, this.requireChannel(after, provider, name));
    return {
      put: [{ kind: 'channel', key, value: record }],
      remove: [],
      param: 'body',
      audit: (_before, after) => [{ action, target: `channel:${key}`, before: before ?? null, after: { ...view(after), ...(record.api_key ? { api_key: MASKED } : {}) } }],
      answer: view,
    };
  }

  /**
   * POST /admin/providers/:code/channels/:name/test: one cheap call on the channel as now
   * configured: a one-token chat completion when it serves a chat model, else a GET of its base URL.
   */
  async testChannel(provider: string, name: string, timeoutMs = 30_000): Promise<ChannelTest> {
    const snapshot = this.deps.live.current();
    const spec = this.requireChannel(snapshot, provider, name);
    const served = snapshot.catalog.models.filter((m) => m.providerCode === provider && (!spec.models || spec.models.has(m.alias)));
    const chat = served.find((m) => m.modelTypes.includes('text_generate'));
    const started = performance.now();
    const result = (ok: boolean, error: string | null, model: string | null): ChannelTest => ({ ok, latency_ms: Math.round(performance.now() - started), model, error: error === null ? null : scrubSecrets(error, spec.apiKey ? [spec.apiKey] : []) });
    try {
      if (chat) {
        await snapshot.chatModels.chatModelOn(provider, name).complete({ model: chat, messages: [{ role: 'user', content: 'ping' }], params: { max_tokens: 1 } }, { signal: AbortSignal.timeout(timeoutMs) });
        return result(true, null, chat.alias);
      }
      const baseUrl = spec.settings.base_url;
      if (!baseUrl) return result(true, null, null);
      const res = await fetch(baseUrl, { signal: AbortSignal.timeout(timeoutMs) });
      await res.body?.cancel();
      return res.status >= 500 || res.status === 401 || res.status === 403 ? result(false, `${baseUrl} answered ${res.status}`, null) : result(true, null, null);
    } catch (err) {
      return result(false, (err as Error).message, chat?.alias ?? null);
    }
  }

  // ---- models -----------------------------------------------------------------------------

  /** PATCH /admin/models/:alias. */
  updateModel(ctx: AuditContext, alias: string, patch: ModelPatch): Promise<ModelView> {
    return this.change(ctx, ({ stored, snapshot }) => {
      const model = this.requireModel(snapshot, alias);
      for (const [i, fallback] of (patch.fallbacks ?? []).entries()) {
        if (!snapshot.catalog.find(fallback)) throw new ApiError('invalid_parameter', `no catalog model has the alias ${fallback}`, `fallbacks[${i}]`);
        if (fallback === alias) throw new ApiError('invalid_parameter', 'a model cannot fall back to itself', `fallbacks[${i}]`);
      }
      const record: ModelPatch = { ...stored.models[alias], ...patch };
      return {
        put: [{ kind: 'model', key: alias, value: record }],
        remove: [],
        param: patch.capabilities ? 'capabilities' : 'body',
        audit: (before, after) => [{ action: 'model.update', target: `model:${alias}`, before: this.modelView(before, model), after: this.modelView(after, after.catalog.find(alias)!) }],
        answer: (after) => this.modelView(after, after.catalog.find(alias)!),
      };
    });
  }

  /** POST /admin/models: a catalog baseModel, checked against the catalog's schema. */
  addModel(ctx: AuditContext, model: Record<string, unknown>): Promise<ModelView> {
    return this.change(ctx, ({ snapshot }) => {
      const alias = typeof model.alias === 'string' ? model.alias : undefined;
      const document: CatalogDocument = { schemaVersion: 1, providers: snapshot.catalog.providers, baseModels: [...snapshot.catalog.models.map(catalogEntry), model] } as CatalogDocument;
      const index = document.baseModels.length - 1;
      const prefix = `$.baseModels[${index}]`;
      const lines = validateCatalog(document).filter((line) => line.startsWith(prefix) || !/^\$\.baseModels\[\d+\]/.test(line));
      if (lines.length > 0) {
        const path = lines[0]!.slice(0, lines[0]!.indexOf(':'));
        const param = path.startsWith(prefix) ? path.slice(prefix.length).replace(/^\./, '') || 'body' : 'body';
        throw new ApiError('invalid_parameter', lines.map((l) => l.replace(prefix, '$')).join('; '), param);
      }
      if (alias === undefined) throw new ApiError('missing_parameter', 'alias is required', 'alias');
      if (snapshot.catalog.find(alias)) throw new ApiError('invalid_parameter', `a model with the alias ${alias} exists`, 'alias');
      return {
        put: [{ kind: 'added_model', key: alias, value: model }],
        remove: [],
        param: 'body',
        audit: (_before, after) => [{ action: 'model.create', target: `model:${alias}`, before: null, after: this.modelView(after, after.catalog.find(alias)!) }],
        answer: (after) => this.modelView(after, after.catalog.find(alias)!),
      };
    });
  }

  /** DELETE /admin/models/:alias: only a model added through the API. */
  deleteModel(ctx: AuditContext, alias: string): Promise<void> {
    return this.change(ctx, ({ stored, snapshot }) => {
      const model = this.requireModel(snapshot, alias);
      if (!(alias in stored.addedModels)) throw new ApiError('invalid_request', `model ${alias} comes from the catalog; only models added through the API can be deleted (PATCH {"enabled": false} turns it off)`, 'alias');
      return {
        put: [],
        remove: [{ kind: 'added_model', key: alias }, { kind: 'model', key: alias }],
        param: 'alias',
        audit: (before) => [{ action: 'model.delete', target: `model:${alias}`, before: this.modelView(before, model), after: null }],
        answer: () => undefined,
      };
    });
  }

  // ---- MCP servers ------------------------------------------------------------------------

  private mcpHeaders(headers: Record<string, string>): Record<string, string | SealedSecret> {
    const stored: Record<string, string | SealedSecret> = {};
    for (const [header, value] of Object.entries(headers)) {
      const param = `headers.${header}`;
      if (isEnvReference(value)) {
        if (resolveHeaderValue(value) === undefined) throw new ApiError('invalid_parameter', `the environment variable ${value.slice(4)} is not set on this server`, param);
        stored[header] = value;
      } else {
        stored[header] = this.seal(value, param);
      }
    }
    return stored;
  }

  /** POST /admin/mcp-servers. */
  createMcpServer(ctx: AuditContext, input: McpServerInput & { name: string; url: string }): Promise<McpServerView> {
    return this.change(ctx, ({ snapshot }) => {
      if (input.name === GATEWAY_MCP_SERVER) throw new ApiError('invalid_parameter', `"${GATEWAY_MCP_SERVER}" is reserved for the gateway's own tools`, 'name');
      if (snapshot.merged.mcpServers.some((s) => s.name === input.name)) throw new ApiError('invalid_parameter', `an MCP server named ${input.name} exists`, 'name');
      this.checkBaseUrl(input.url, 'url');
      const record: McpServerRecord = { url: input.url, ...(input.headers ? { headers: this.mcpHeaders(input.headers) } : {}), ...(input.tools ? { tools: input.tools } : {}) };
      return this.mcpPlan(input.name, record, 'mcp_server.create', null);
    });
  }

  /** PATCH /admin/mcp-servers/:name: `headers` replaces the server's headers. */
  updateMcpServer(ctx: AuditContext, name: string, input: McpServerInput): Promise<McpServerView> {
    return this.change(ctx, ({ stored, snapshot }) => {
      const before = this.mcpView(snapshot, name);
      if (!before) throw new ApiError('mcp_server_not_found', `no MCP server is named ${name}`, 'name');
      this.checkBaseUrl(input.url, 'url');
      const record: McpServerRecord = { ...stored.mcpServers[name] };
      delete record.deleted;
      if (input.url !== undefined) record.url = input.url;
      if (input.headers !== undefined) record.headers = this.mcpHeaders(input.headers);
      if (input.tools !== undefined) record.tools = input.tools;
      return this.mcpPlan(name, record, 'mcp_server.update', before);
    });
  }

  /** DELETE /admin/mcp-servers/:name. */
  deleteMcpServer(ctx: AuditContext, name: string): Promise<void> {
    return this.change(ctx, ({ snapshot }) => {
      const before = this.mcpView(snapshot, name);
      if (!before) throw new ApiError('mcp_server_not_found', `no MCP server is named ${name}`, 'name');
      const fromFile = before.source === 'file';
      return {
        put: fromFile ? [{ kind: 'mcp_server', key: name, value: { deleted: true } satisfies McpServerRecord }] : [],
        remove: fromFile ? [] : [{ kind: 'mcp_server', key: name }],
        param: 'name',
        audit: () => [{ action: 'mcp_server.delete', target: `mcp_server:${name}`, before, after: null }],
        answer: () => undefined,
      };
    });
  }

  private mcpPlan(name: string, record: McpServerRecord, action: string, before: McpServerView | null): ChangePlan<McpServerView> {
    return {
      put: [{ kind: 'mcp_server', key: name, value: record }],
      remove: [],
      param: 'body',
      audit: (_before, after) => [{ action, target: `mcp_server:${name}`, before, after: this.mcpView(after, name) }],
      answer: (after) => this.mcpView(after, name)!,
    };
  }
}

/** A live model back as the catalog entry it came from. */
function catalogEntry(model: LiveModel): unknown {
  const { enabled: _enabled, disabled_reason: _reason, disabled_until: _until, ...entry } = model;
  return entry;
}
