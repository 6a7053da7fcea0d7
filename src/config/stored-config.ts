/**
 * Settings the admin API stored (providers, channels, models, MCP servers) and how they merge over
 * GENGATE_CONFIG: key by key, the stored value wins; each merged value knows where it came from.
 */
import type { Static } from 'typebox';
import { Type } from 'typebox';
import { ChannelSettings, ModelOverride, ProviderSettings, type GengateConfig, type McpServerSettings } from './settings.ts';
import { isSealedSecret, type SealedSecret } from './secret-box.ts';

/** Where a merged value comes from: the built-in or CATALOG_PATH catalog, GENGATE_CONFIG, or the admin API. */
export type ValueSource = 'catalog' | 'file' | 'admin';

/** The provider fields PUT /admin/providers/:code sets. */
export const ProviderPatch = Type.Object({
  adapter: ProviderSettings.properties.adapter,
  base_url: ProviderSettings.properties.base_url,
  options: ProviderSettings.properties.options,
  concurrency: ProviderSettings.properties.concurrency,
  retry: ProviderSettings.properties.retry,
}, { additionalProperties: false });
export type ProviderPatch = Static<typeof ProviderPatch>;

/** A channel as stored: the fields given through the API, the key sealed; `deleted` hides a channel of the file. */
export interface ChannelRecord extends Omit<ChannelSettings, 'name' | 'api_key_env'> {
  api_key?: SealedSecret;
  deleted?: true;
}

/** The model fields PATCH /admin/models/:alias sets. */
export const ModelPatch = Type.Object({
  enabled: ModelOverride.properties.enabled,
  pricing: ModelOverride.properties.pricing,
  fallbacks: ModelOverride.properties.fallbacks,
  capabilities: ModelOverride.properties.capabilities,
  /** The name consoles show for the model. */
  display_name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
}, { additionalProperties: false });
export type ModelPatch = Static<typeof ModelPatch>;

/** An MCP server as stored: literal header values sealed; `deleted` hides a server of the file. */
export interface McpServerRecord {
  url?: string;
  headers?: Record<string, string | SealedSecret>;
  tools?: string[];
  deleted?: true;
}

/** Every record the admin API stored, by kind and key. */
export interface StoredConfig {
  providers: Record<string, ProviderPatch>;
  /** By provider code, then channel name. */
  channels: Record<string, Record<string, ChannelRecord>>;
  models: Record<string, ModelPatch>;
  /** Catalog baseModel objects added through POST /admin/models, by alias. */
  addedModels: Record<string, unknown>;
  mcpServers: Record<string, McpServerRecord>;
}

export const emptyStoredConfig = (): StoredConfig => ({ providers: {}, channels: {}, models: {}, addedModels: {}, mcpServers: {} });

/** The record kinds as the store keeps them (storage/repos/config-records-repo.ts). */
export const RECORD_KINDS = ['provider', 'channel', 'model', 'added_model', 'mcp_server'] as const;
export type RecordKind = (typeof RECORD_KINDS)[number];

/** One stored record: a channel's key is `<provider>/<name>`. */
export interface ConfigRecord {
  kind: RecordKind;
  key: string;
  value: unknown;
}

/** The stored config from its records. */
export function storedConfigOf(records: readonly ConfigRecord[]): StoredConfig {
  const stored = emptyStoredConfig();
  for (const { kind, key, value } of records) {
    if (kind === 'provider') stored.providers[key] = value as ProviderPatch;
    else if (kind === 'model') stored.models[key] = value as ModelPatch;
    else if (kind === 'added_model') stored.addedModels[key] = value;
    else if (kind === 'mcp_server') stored.mcpServers[key] = value as McpServerRecord;
    else {
      const slash = key.indexOf('/');
      const provider = key.slice(0, slash);
      (stored.channels[provider] ??= {})[key.slice(slash + 1)] = value as ChannelRecord;
    }
  }
  return stored;
}

/** Every sealed secret of the stored config, named as `gengate secrets rotate` reports them. */
export function sealedSecrets(stored: StoredConfig): { name: string; sealed: SealedSecret }[] {
  const found: { name: string; sealed: SealedSecret }[] = [];
  for (const [provider, channels] of Object.entries(stored.channels)) {
    for (const [name, record] of Object.entries(channels)) if (record.api_key) found.push({ name: `channel ${provider}/${name} api_key`, sealed: record.api_key });
  }
  for (const [name, record] of Object.entries(stored.mcpServers)) {
    for (const [header, value] of Object.entries(record.headers ?? {})) if (isSealedSecret(value)) found.push({ name: `mcp server ${name} headers.${header}`, sealed: value });
  }
  return found;
}

/** An MCP server as the MCP code uses it: header values resolved (env read, secrets opened). */
export interface McpServerRuntime {
  name: string;
  url: string;
  headers: Record<string, string>;
  /** The headers as answers show them: `env:VAR` as given, literal values (secrets) as "***". */
  headerViews: Record<string, string>;
  tools: string[] | undefined;
  source: ValueSource;
}

/** GENGATE_CONFIG with the stored records over it, and what the merge learned on the way. */
export interface MergedConfig {
  config: GengateConfig;
  /** Opened API keys of stored channels, by `<provider>/<name>`. */
  channelKeys: ReadonlyMap<string, string>;
  /** Catalog baseModel objects added through the API. */
  addedModels: unknown[];
  /** display_name set through the API, by alias. */
  displayNames: ReadonlyMap<string, string>;
  mcpServers: McpServerRuntime[];
  sources: {
    providers: ReadonlyMap<string, ValueSource>;
    channels: ReadonlyMap<string, ValueSource>;
    models: ReadonlyMap<string, ValueSource>;
  };
}

/** The channels of a provider in the file: its `channels`, else its own settings as one channel named after it. */
function fileChannels(code: string, provider: ProviderSettings | undefined, hasStoredProvider: boolean): ChannelSettings[] {
  if (provider?.channels) return provider.channels;
  return provider || hasStoredProvider ? [{ name: code }] : [];
}

const MCP_ENV_PREFIX = 'env:';

/** A header value as the MCP code sends it: `env:VAR` read from the environment (undefined when unset). */
export function resolveHeaderValue(value: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  return value.startsWith(MCP_ENV_PREFIX) ? env[value.slice(MCP_ENV_PREFIX.length)] : value;
}

/** Whether a header value names an environment variable rather than holding the secret itself. */
export const isEnvReference = (value: string): boolean => value.startsWith(MCP_ENV_PREFIX);

/** Merges the stored records over the file; `open` reads a sealed secret. */
export function mergeConfig(file: GengateConfig, stored: StoredConfig, open: (sealed: SealedSecret) => string): MergedConfig {
  const providerSources = new Map<string, ValueSource>();
  const channelSources = new Map<string, ValueSource>();
  const modelSources = new Map<string, ValueSource>();
  const channelKeys = new Map<string, string>();
  const codes = new Set([...Object.keys(file.providers ?? {}), ...Object.keys(stored.providers), ...Object.keys(stored.channels)]);
  const providers: Record<string, ProviderSettings> = {};
  for (const code of codes) {
    const fromFile = file.providers?.[code];
    const { channels: _fileChannels, ...ownFile } = fromFile ?? {};
    const patch = stored.providers[code];
    providerSources.set(code, patch ? 'admin' : fromFile ? 'file' : 'admin');
    const own: ProviderSettings = { ...ownFile, ...patch };
    const records = stored.channels[code] ?? {};
    const listed = fileChannels(code, fromFile, patch !== undefined);
    const channels: ChannelSettings[] = [];
    for (const channel of listed) {
      const record = records[channel.name];
      channelSources.set(`${code}/${channel.name}`, 'file');
      if (record?.deleted) {
        channelSources.delete(`${code}/${channel.name}`);
        continue;
      }
      channels.push(record ? { ...channel, ...channelFields(record) } : channel);
    }
    for (const [name, record] of Object.entries(records)) {
      if (record.deleted || listed.some((c) => c.name === name)) continue;
      channelSources.set(`${code}/${name}`, 'admin');
      channels.push({ name, ...channelFields(record) });
    }
    for (const [name, record] of Object.entries(records)) if (record.api_key && !record.deleted) channelKeys.set(`${code}/${name}`, open(record.api_key));
    // A provider still served by its own settings alone keeps the file's shape (no `channels`).
    const implicitOnly = channels.length === 1 && channels[0]!.name === code && Object.keys(channels[0]!).length === 1 && !fromFile?.channels;
    providers[code] = implicitOnly || (channels.length === 0 && !fromFile?.channels) ? own : { ...own, channels };
    if (channels.length === 0) delete providers[code]!.channels;
  }

  const models: Record<string, ModelOverride> = {};
  const displayNames = new Map<string, string>();
  for (const alias of new Set([...Object.keys(file.models ?? {}), ...Object.keys(stored.models)])) {
    const patch = stored.models[alias];
    modelSources.set(alias, patch ? 'admin' : 'file');
    const { display_name, ...override } = patch ?? {};
    if (display_name !== undefined) displayNames.set(alias, display_name);
    models[alias] = { ...file.models?.[alias], ...override };
  }
  for (const alias of Object.keys(stored.addedModels)) modelSources.set(alias, 'admin');

  const mcpServers: McpServerRuntime[] = [];
  const configServers: McpServerSettings[] = [];
  const fileServers = file.mcp_servers ?? [];
  const names = [...fileServers.map((s) => s.name), ...Object.keys(stored.mcpServers).filter((n) => !fileServers.some((s) => s.name === n))];
  for (const name of names) {
    const fromFile = fileServers.find((s) => s.name === name);
    const record = stored.mcpServers[name];
    if (record?.deleted) continue;
    const url = record?.url ?? fromFile?.url;
    if (url === undefined) continue;
    const headers = record?.headers ?? fromFile?.headers ?? {};
    const tools = record?.tools ?? fromFile?.tools;
    const resolved: Record<string, string> = {};
    const shown: Record<string, string> = {};
    const headerViews: Record<string, string> = {};
    for (const [header, value] of Object.entries(headers)) {
      const plain = isSealedSecret(value) ? open(value) : resolveHeaderValue(value);
      if (plain !== undefined) resolved[header] = plain;
      headerViews[header] = typeof value === 'string' && isEnvReference(value) ? value : '***';
      // Opened secrets stay out of the merged document (it may be shown or logged); the runtime list has them.
      if (!isSealedSecret(value)) shown[header] = value;
    }
    mcpServers.push({ name, url, headers: resolved, headerViews, tools, source: fromFile ? 'file' : 'admin' });
    configServers.push({ name, url, ...(Object.keys(shown).length > 0 ? { headers: shown } : {}), ...(tools ? { tools } : {}) });
  }

  const config: GengateConfig = { ...file };
  if (codes.size > 0) config.providers = providers;
  if (Object.keys(models).length > 0) config.models = models;
  if (configServers.length > 0 || file.mcp_servers) config.mcp_servers = configServers;
  return {
    config,
    channelKeys,
    addedModels: Object.values(stored.addedModels),
    displayNames,
    mcpServers,
    sources: { providers: providerSources, channels: channelSources, models: modelSources },
  };
}

/** A stored channel's settings fields (the key aside). */
function channelFields(record: ChannelRecord): Omit<ChannelSettings, 'name'> {
  const { api_key: _key, deleted: _deleted, ...fields } = record;
  return fields;
}
