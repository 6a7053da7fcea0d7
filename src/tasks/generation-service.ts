import type { Catalog, LiveModel } from '../catalog/catalog.ts';
import type { CapabilityName } from '../catalog/schema.ts';
import { ApiError } from '../core/errors.ts';
import type { EngineRegistry } from '../providers/registry.ts';
import type { TaskRow } from '../storage/schema.ts';
import type { TaskService } from './task-service.ts';
import type { TaskStatusRecord } from './task-record.ts';

/** Who asks: the token's user, the X-Client-Id of realtime pushes and the request id. */
export interface GenerationCaller {
  ownerId: string;
  clientId: string | null;
  requestId: string;
}

/** One generation call, as every generation endpoint hands it over. */
export interface GenerationRequest extends GenerationCaller {
  /** e.g. `images.generations`. */
  endpoint: string;
  /** The model must declare one of these capability types. */
  capabilities: readonly CapabilityName[];
  /** The result type of the outputs. */
  outputType: string;
  /** Catalog alias or workflow name; absent: the catalog's default model for the first capability. */
  model?: string;
  /** The validated request parameters (generate_info.input). */
  input: Record<string, unknown>;
}

export type GenerationOutcome =
  /** Async mode: the task is queued. */
  | { kind: 'submitted'; task: TaskRow }
  /** Sync mode: the task ended (any terminal status); its final record. */
  | { kind: 'ended'; task: TaskRow; record: TaskStatusRecord }
  /** Sync mode past SYNC_TIMEOUT_MS: the task goes on; the caller gets the async body. */
  | { kind: 'still_running'; task: TaskRow };

/**
 * The one generation pipeline: model check against the catalog → task stored → queued →
 * either answered at once (async) or waited for (sync, bounded by the sync timeout).
 */
export class GenerationService {
  constructor(
    private readonly deps: { catalog: Catalog; engines: EngineRegistry; tasks: TaskService; syncTimeoutMs: number },
  ) {}

  /** The catalog model (or else the workflow) a request may use, or the contract's 404/400. */
  resolveModel(alias: string, capabilities: readonly CapabilityName[]): LiveModel {
    const model = this.deps.catalog.find(alias) ?? this.deps.engines.findModel?.(alias);
    if (!model) throw new ApiError('model_not_found', `unknown model ${alias}`, 'model');
    if (!capabilities.some((c) => model.modelTypes.includes(c))) {
      throw new ApiError('model_capability_mismatch', `model ${alias} cannot do ${capabilities.join(' or ')}`, 'model');
    }
    if (!model.enabled) throw new ApiError('model_disabled', `model ${alias} is disabled${model.disabled_reason ? `: ${model.disabled_reason}` : ''}`, 'model');
    return model;
  }

  /** The alias of the model serving a request that names none. */
  private defaultAlias(capability: CapabilityName): string {
    const model = this.deps.catalog.defaultModel(capability);
    if (!model) throw new ApiError('model_not_found', `no model given, and no enabled catalog model can do ${capability}`, 'model');
    return model.alias;
  }

  async generate(request: GenerationRequest, mode: 'sync' | 'async'): Promise<GenerationOutcome> {
    const model = this.resolveModel(request.model ?? this.defaultAlias(request.capabilities[0]), request.capabilities);
    const task = await this.deps.tasks.submit({
      ownerId: request.ownerId,
      clientId: request.clientId,
      requestId: request.requestId,
      endpoint: request.endpoint,
      model: model.alias,
      provider: model.providerCode,
      outputType: request.outputType,
      cancellable: this.deps.engines.engineFor(model).cancellable,
      input: request.input,
    });
    if (mode === 'async') return { kind: 'submitted', task };
    const record = await this.deps.tasks.waitForEnd(task.id, this.deps.syncTimeoutMs);
    return record ? { kind: 'ended', task, record } : { kind: 'still_running', task };
  }
}
