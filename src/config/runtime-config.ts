import type { SettingsRepo } from '../storage/repos/settings-repo.ts';
import type { CallbackSettings } from './settings.ts';

export type CallbackConfig = Required<Pick<CallbackSettings, 'callback_timeout_ms' | 'callback_retry_delays_ms'>> &
  Pick<CallbackSettings, 'callback_url' | 'callback_secret'>;

const CALLBACK_KEY = 'callback';
export const CALLBACK_DEFAULTS = { callback_timeout_ms: 3000, callback_retry_delays_ms: [1000, 5000, 25000] };

/**
 * Operator settings changed through PUT /admin/config: stored in the database so every
 * instance and every restart sees them; GENGATE_CONFIG gives the starting values.
 */
export class RuntimeConfig {
  constructor(
    private readonly repo: SettingsRepo,
    private readonly initial: CallbackSettings = {},
  ) {}

  async callback(): Promise<CallbackConfig> {
    const stored = (await this.repo.get<CallbackSettings>(CALLBACK_KEY)) ?? {};
    return { ...CALLBACK_DEFAULTS, ...this.initial, ...stored };
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
    return this.callback();
  }
}
