/**
 * The channels of each configured provider, read from GENGATE_CONFIG: a provider's `channels`, or
 * the provider's own settings as its one channel named after it.
 */
import { SettingsError, type GengateConfig, type ProviderSettings, type RoutingSettings } from './settings.ts';

/** One endpoint-and-key of a provider that calls can be sent to. */
export interface ChannelSpec {
  provider: string;
  name: string;
  weight: number;
  priority: number;
  /** Catalog aliases it serves; undefined: every model of its provider. */
  models: ReadonlySet<string> | undefined;
  /** The provider's settings with the channel's own over them: what its adapter is built from. */
  settings: ProviderSettings;
  /** The channel's API key: stored through the admin API, else read from its api_key_env; never logged. */
  apiKey: string | undefined;
}

/** The routing settings with their defaults filled in. */
export interface RoutingPolicy {
  maxAttempts: number;
  failureThreshold: number;
  cooldownMs: number;
  maxCooldownMs: number;
  /** Error rate over the last minute above which a channel cools down, once it saw minCallsForRate calls. */
  maxErrorRate: number;
  minCallsForRate: number;
}

export function routingPolicy(settings: RoutingSettings | undefined): RoutingPolicy {
  return {
    maxAttempts: settings?.max_attempts ?? 3,
    failureThreshold: settings?.failure_threshold ?? 5,
    cooldownMs: settings?.cooldown_ms ?? 30_000,
    maxCooldownMs: settings?.max_cooldown_ms ?? 10 * 60_000,
    maxErrorRate: 0.5,
    minCallsForRate: 10,
  };
}

/** The API key of a channel: the stored one, else the value of its api_key_env. */
export function channelKey(settings: ProviderSettings, stored: string | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  return stored ?? (settings.api_key_env ? env[settings.api_key_env] || undefined : undefined);
}

/** Every channel of every configured provider, in configuration order; `keys` holds stored API keys by `<provider>/<name>`. */
export function channelSpecs(config: GengateConfig, keys: ReadonlyMap<string, string> = new Map()): ChannelSpec[] {
  const specs: ChannelSpec[] = [];
  for (const [provider, settings] of Object.entries(config.providers ?? {})) {
    const { channels, ...own } = settings;
    if (!channels) {
      specs.push({ provider, name: provider, weight: 1, priority: 0, models: undefined, settings: own, apiKey: channelKey(own, keys.get(`${provider}/${provider}`)) });
      continue;
    }
    const names = new Set<string>();
    for (const [i, channel] of channels.entries()) {
      if (names.has(channel.name)) throw new SettingsError(`GENGATE_CONFIG.providers.${provider}.channels[${i}].name: "${channel.name}" names two channels of ${provider}`);
      names.add(channel.name);
      const channelSettings: ProviderSettings = {
        ...own,
        ...(channel.base_url !== undefined ? { base_url: channel.base_url } : {}),
        ...(channel.api_key_env !== undefined ? { api_key_env: channel.api_key_env } : {}),
        ...(channel.concurrency !== undefined ? { concurrency: channel.concurrency } : {}),
        ...(channel.options !== undefined ? { options: { ...own.options, ...channel.options } } : {}),
      };
      specs.push({
        provider,
        name: channel.name,
        weight: channel.weight ?? 1,
        priority: channel.priority ?? 0,
        models: channel.models ? new Set(channel.models) : undefined,
        settings: channelSettings,
        apiKey: channelKey(channelSettings, keys.get(`${provider}/${channel.name}`)),
      });
    }
  }
  return specs;
}

/**
 * Refuses channel model lists and fallbacks naming aliases the catalog does not have (or, for a
 * channel, a model of another provider), so a typo stops the start instead of a call.
 */
export function checkRoutingConfig(config: GengateConfig, providerOf: (alias: string) => string | undefined): void {
  const lines: string[] = [];
  for (const [provider, settings] of Object.entries(config.providers ?? {})) {
    for (const [i, channel] of (settings.channels ?? []).entries()) {
      for (const alias of channel.models ?? []) {
        const owner = providerOf(alias);
        if (owner === undefined) lines.push(`GENGATE_CONFIG.providers.${provider}.channels[${i}].models: no catalog model has the alias ${alias}`);
        else if (owner !== provider) lines.push(`GENGATE_CONFIG.providers.${provider}.channels[${i}].models: ${alias} is a model of provider ${owner}, not ${provider}`);
      }
    }
  }
  for (const [alias, override] of Object.entries(config.models ?? {})) {
    for (const fallback of override.fallbacks ?? []) {
      if (providerOf(fallback) === undefined) lines.push(`GENGATE_CONFIG.models.${alias}.fallbacks: no catalog model has the alias ${fallback}`);
      else if (fallback === alias) lines.push(`GENGATE_CONFIG.models.${alias}.fallbacks: a model cannot fall back to itself`);
    }
  }
  if (lines.length > 0) throw new SettingsError(lines.join('\n'));
}
