import type { CallbackSettings } from './settings.ts';

/** Where the settings are kept: JSON values by key (storage/repos/settings-repo.ts). */
export interface SettingsStore {
  get<T>(key: string): Promise<T | undefined>;
  put(key: string, value: unknown): Promise<void>;
}

export type CallbackConfig = Required<Pick<CallbackSettings, 'callback_timeout_ms' | 'callback_retry_delays_ms'>> &
  Pick<CallbackSettings, 'callback_url' | 'callback_secret'>;

const CALLBACK_KEY = 'callback';
export const CALLBACK_DEFAULTS = { callback_timeout_ms: 3000, callback_retry_delays_ms: [1000, 5000, 25000] };

/**
 * Operator settings changed through PUT /admin/config: stored in the database so every
 * instance and every restart sees them; GENGATE_CONFIG gives the starting values.
 */
export class RuntimeConfig {
  private cached: { value: Promise<CallbackConfig>; until: number } | undefined;

  private readonly repo: SettingsStore;
  private readonly initial: CallbackSettings;
  private readonly cacheMs;

  constructor(
    repo: SettingsStore,
    initial: CallbackSettings = {},
    /** Every task status change reads the callback; other instances' changes show within this time. */
    cacheMs = 1000,
  ) {
    this.repo = repo;
    this.initial = initial;
    this.cacheMs = cacheMs;
  }

  async callback(): Promise<CallbackConfig> {
    const now = Date.now();
    if (!this.cached || this.cached.until <= now) {
      const value = this.repo.get<CallbackSettings>(CALLBACK_KEY).then((stored) => ({ ...CALLBACK_DEFAULTS, ...this.initial, ...(stored ?? {}) }));
      this.cached = { value, until: now + this.cacheMs };
      value.catch(() => (this.cached = undefined));
    }
    return this.cached.value;
  }

  /** Merges the given fields over the current ones; null clears a field back to its default. */
  async updateCallback(patch: { [K in keyof CallbackSettings]?: CallbackSettings[K] | null }): Promise<CallbackConfig> {
    const stored = (await this.repo.get<CallbackSettings>(CALLBACK_KEY)) ?? {};
    const next: Record<string, unknown> = { ...stored };
    for (const [key, value] of Object.entries(patch)) {
      if (value === null) delete next[key];
      else if (value !== undefined) next[key] = value;
    }
    await this.repo.put(CALLBACK_KEY, next);
    this.cached = undefined;
    return this.callback();
  }
}
