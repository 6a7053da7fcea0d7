/**
 * Loading the model catalog: read the file, validate it, apply the
 * deployment's model overrides (GENGATE_CONFIG `models`), validate again, and derive each
 * model's live state (enabled, disabled_reason, disabled_until).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { GengateConfig, ModelOverride } from '../config/settings.ts';
import { CAPABILITY_NAMES, validateCatalog, type BaseModel, type CapabilityName, type CatalogDocument, type CatalogProvider } from './schema.ts';

export { CAPABILITY_NAMES, validateCatalog };
export type * from './schema.ts';

/** The catalog shipped with Gengate, used when CATALOG_PATH is not set. */
export const BUILTIN_CATALOG_PATH = fileURLToPath(new URL('./builtin-catalog.json', import.meta.url));

/** Provider code that never needs a providers-config entry: the built-in offline engine. */
const LOCAL_PROVIDER = 'local';

/** A catalog model after deployment overrides, with its live availability. */
export interface LiveModel extends BaseModel {
  enabled: boolean;
  disabled_reason?: string;
  disabled_until?: string;
}

/** A catalog that cannot be used; `lines` are `<JSON path>: <message>`, one per problem. */
export class CatalogError extends Error {
  readonly lines: string[];

  constructor(lines: string[], source?: string) {
    super(`${source ? `${source}: ` : ''}invalid model catalog\n${lines.join('\n')}`);
    this.name = 'CatalogError';
    this.lines = lines;
  }
}

/** Reads and parses a catalog file; an unreadable file or bad JSON is a CatalogError with one `$: …` line. */
export function readCatalogFile(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new CatalogError([`$: cannot read the file (${(err as Error).message})`], path);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new CatalogError([`$: not valid JSON (${(err as Error).message})`], path);
  }
}

const CONFIG_MODELS_PATH = 'GENGATE_CONFIG.models';
const CONFIG_DEFAULT_MODELS_PATH = 'GENGATE_CONFIG.default_models';

/** The JSON path of a key under a config object, as the error lines name it. */
function configPath(key: string, under = CONFIG_MODELS_PATH): string {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? `${under}.${key}` : `${under}[${JSON.stringify(key)}]`;
}

/** One line per default model that names no catalog model, or one without that capability type. */
function checkDefaultModels(document: CatalogDocument, defaults: Record<string, string> | undefined): string[] {
  const lines: string[] = [];
  for (const [type, alias] of Object.entries(defaults ?? {})) {
    const path = configPath(type, CONFIG_DEFAULT_MODELS_PATH);
    const model = document.baseModels.find((m) => m.alias === alias);
    if (!(CAPABILITY_NAMES as readonly string[]).includes(type)) lines.push(`${path}: ${type} is not a capability type`);
    else if (!model) lines.push(`${path}: no catalog model has the alias ${alias}`);
    else if (!(model.modelTypes as string[]).includes(type)) lines.push(`${path}: model ${alias} does not declare ${type}`);
  }
  return lines;
}

/**
 * Merges each override's capability values over the catalog's, per capability key and field.
 * A field set to null removes the catalog's value (JSON merge-patch style), so a deployment
 * can drop a limit, not only change it. Returns the merged document and one line per
 * override naming an alias the catalog does not have.
 */
export function applyModelOverrides(
  document: CatalogDocument,
  overrides: Record<string, ModelOverride> | undefined,
): { document: CatalogDocument; lines: string[]; overriddenIndexes: Map<number, string> } {
  const merged = structuredClone(document);
  const lines: string[] = [];
  const overriddenIndexes = new Map<number, string>();
  for (const [alias, override] of Object.entries(overrides ?? {})) {
    const index = merged.baseModels.findIndex((m) => m.alias === alias);
    if (index < 0) {
      lines.push(`${configPath(alias)}: no catalog model has this alias`);
      continue;
    }
    overriddenIndexes.set(index, alias);
    const model = merged.baseModels[index];
    const capabilities = model.capabilities as Record<string, Record<string, unknown>>;
    for (const [key, fields] of Object.entries(override.capabilities ?? {})) {
      const current = capabilities[key];
      const value: Record<string, unknown> =
        current !== null && typeof current === 'object' ? { ...current } : { type: key };
      for (const [field, fieldValue] of Object.entries(fields)) {
        if (fieldValue === null) delete value[field];
        else value[field] = structuredClone(fieldValue);
      }
      capabilities[key] = value;
    }
  }
  return { document: merged, lines, overriddenIndexes };
}

/** The live state of one model: offline, switched off by the deployment, or its provider unconfigured. */
function liveState(
  model: BaseModel,
  override: ModelOverride | undefined,
  config: GengateConfig,
): Pick<LiveModel, 'enabled' | 'disabled_reason' | 'disabled_until'> {
  if (override?.enabled === false) {
    return {
      enabled: false,
      ...(override.disabled_reason !== undefined ? { disabled_reason: override.disabled_reason } : {}),
      ...(override.disabled_until !== undefined ? { disabled_until: override.disabled_until } : {}),
    };
  }
  if (model.status === 'offline') {
    return { enabled: false, disabled_reason: override?.disabled_reason ?? 'model is offline' };
  }
  // Once a providers config exists, models of providers it does not name are listed but disabled.
  if (config.providers !== undefined && model.providerCode !== LOCAL_PROVIDER && !(model.providerCode in config.providers)) {
    return { enabled: false, disabled_reason: 'provider not configured' };
  }
  return { enabled: true };
}

/** What callers read of a catalog; the live one (runtime-settings/live-config.ts) reads the current settings' catalog. */
export interface CatalogView {
  readonly providers: CatalogProvider[];
  readonly models: LiveModel[];
  find(alias: string): LiveModel | undefined;
  list(type?: string): LiveModel[];
  defaultModel(type: CapabilityName): LiveModel | undefined;
  provider(code: string): CatalogProvider | undefined;
}

/** The loaded catalog: providers and live models, looked up by alias or capability type. */
export class Catalog implements CatalogView {
  readonly providers: CatalogProvider[];
  readonly models: LiveModel[];
  readonly #byAlias: Map<string, LiveModel>;
  readonly #defaults: Record<string, string>;

  constructor(document: CatalogDocument, config: GengateConfig = {}) {
    this.providers = document.providers;
    this.models = document.baseModels.map((model) => ({
      ...model,
      ...liveState(model, config.models?.[model.alias], config),
    }));
    this.#byAlias = new Map(this.models.map((m) => [m.alias, m]));
    this.#defaults = config.default_models ?? {};
  }

  /** The model with this alias, enabled or not. */
  find(alias: string): LiveModel | undefined {
    return this.#byAlias.get(alias);
  }

  /** Models that declare `type` in their modelTypes; every model for undefined or 'all'. */
  list(type?: string): LiveModel[] {
    if (type === undefined || type === 'all') return [...this.models];
    return this.models.filter((m) => (m.modelTypes as string[]).includes(type));
  }

  /**
   * The model a request naming none gets for `type`: GENGATE_CONFIG `default_models[type]`,
   * else the first enabled model declaring it, so any catalog file has one.
   */
  defaultModel(type: CapabilityName): LiveModel | undefined {
    const configured = this.#defaults[type];
    if (configured !== undefined) return this.find(configured);
    return this.models.find((m) => m.enabled && m.modelTypes.includes(type));
  }

  provider(code: string): CatalogProvider | undefined {
    return this.providers.find((p) => p.code === code);
  }
}

/**
 * Loads the catalog at `path` (the built-in one when undefined), applies the config's model
 * overrides and returns it; throws CatalogError with every problem found.
 */
export function loadCatalog(opts: { path?: string; config: GengateConfig }): Catalog {
  const source = opts.path ?? BUILTIN_CATALOG_PATH;
  return buildCatalog(readCatalogDocument(source), opts.config, source);
}

/** Reads and validates a catalog file (the built-in one when undefined); throws CatalogError. */
export function readCatalogDocument(source: string = BUILTIN_CATALOG_PATH): CatalogDocument {
  const data = readCatalogFile(source);
  // The built-in file ships with the code and test/catalog.test.ts checks it.
  const lines = source === BUILTIN_CATALOG_PATH ? [] : validateCatalog(data);
  if (lines.length > 0) throw new CatalogError(lines, source);
  return data as CatalogDocument;
}

/** What the admin API adds to a catalog: models of its own and display names. */
export interface CatalogAdditions {
  models?: readonly unknown[];
  displayNames?: ReadonlyMap<string, string>;
}

/**
 * A catalog from a validated document, the config's model overrides and the admin API's
 * additions; throws CatalogError with every problem found.
 */
export function buildCatalog(base: CatalogDocument, config: GengateConfig, source: string, additions: CatalogAdditions = {}): Catalog {
  const withAdditions: CatalogDocument = additions.models?.length || additions.displayNames?.size
    ? {
      ...base,
      baseModels: [...base.baseModels, ...(additions.models ?? []) as BaseModel[]].map((m) => {
        const displayName = additions.displayNames?.get(m.alias);
        return displayName === undefined ? m : { ...m, displayName };
      }),
    }
    : base;
  const { document, lines: overrideLines, overriddenIndexes } = applyModelOverrides(withAdditions, config.models);
  // Overrides may break a rule the file kept; say which override did it. A document nothing
  // changed is the validated one.
  const changed = withAdditions !== base || overriddenIndexes.size > 0;
  const mergedLines = (changed ? validateCatalog(document) : []).map((line) => {
    const index = /^\$\.baseModels\[(\d+)\]/.exec(line)?.[1];
    const alias = index === undefined ? undefined : overriddenIndexes.get(Number(index));
    return alias === undefined ? line : `${line} (after the override in ${configPath(alias)})`;
  });
  const allLines = [...overrideLines, ...mergedLines, ...checkDefaultModels(document, config.default_models)];
  if (allLines.length > 0) throw new CatalogError(allLines, source);
  return new Catalog(document, config);
}
