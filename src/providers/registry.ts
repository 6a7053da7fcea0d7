import type { LiveModel } from '../catalog/catalog.ts';
import type { Settings } from '../config/settings.ts';
import { LocalEngine } from './local/local-engine.ts';
import type { GenerationEngine } from './spec.ts';

/** Which engine runs a catalog model. */
export interface EngineRegistry {
  engineFor(model: LiveModel): GenerationEngine;
}

/** The only place that knows the engines. Without configured upstreams every model runs on `local`. */
export function createEngineRegistry(settings: Settings): EngineRegistry {
  const local = new LocalEngine({ minDurationMs: settings.localEngineMinDurationMs });
  return { engineFor: () => local };
}
