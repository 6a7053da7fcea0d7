import type { CatalogView, LiveModel } from '../catalog/catalog.ts';
import type { CapabilityName } from '../catalog/schema.ts';
import { ApiError } from '../core/errors.ts';
import type { TaskStatus } from '../core/task-state.ts';
import { ENDPOINTS } from '../endpoints/endpoint-table.ts';
import type { OutboundUrlPolicy } from '../core/outbound-urls.ts';
import type { EngineRegistry } from '../providers/registry.ts';
import type { Endpoint, EndpointDeclaration, TaskInput } from '../providers/spec.ts';
import { servedDeclaration, servedWarnings } from './served-request.ts';
import type { TaskRow } from '../storage/schema.ts';
import type { TaskService } from './task-service.ts';
import type { TaskStatusRecord } from './task-record.ts';

/** What a call's admission (limits) does when the call creates its task. */
export interface TaskAdmission {
  /** Takes one of the caller's task slots (throws 429 too_many_tasks when all are taken); the task carries what it answers. */
  beginTask(): Promise<{ tokenId: string | null; reservedCredits: number; teamId: string | null }>;
  /** The task exists: it settles at its own end, not the call's. */
  taskSubmitted(taskId: string): void;
}

/** Who asks: the token's user, the X-Client-Id of realtime pushes and the request id. */
export interface GenerationCaller {
  ownerId: string;
  clientId: string | null;
  requestId: string;
  /** The call's admission; none for tasks made inside the gateway (the agent's tools). */
  admission?: TaskAdmission;
  /** The statuses the task's callback announces (the submit's callback_events); absent: every status. */
  callbackEvents?: readonly TaskStatus[];
  /** Epoch ms of the submit's x-deadline: still waiting then, the task fails. */
  deadlineAt?: number;
}

/** One generation call, as every modality's service hands it over: its model resolved, its input checked. */
export type GenerationRequest = GenerationCaller & TaskInput & {
  /** From resolveModel. */
  model: LiveModel;
};

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
  private readonly deps: { catalog: CatalogView; engines: EngineRegistry; tasks: TaskService; urls: OutboundUrlPolicy; syncTimeoutMs: number };

  constructor(
    deps: { catalog: CatalogView; engines: EngineRegistry; tasks: TaskService; urls: OutboundUrlPolicy; syncTimeoutMs: number },
  ) {
    this.deps = deps;
  }

  /**
   * 400 url_not_allowed before any task exists for a URL field the gateway would refuse to fetch
   * (docs/security.md); every modality's service calls it for each URL its body carries.
   */
  checkCallerUrl(ref: string, param: string): void {
    this.deps.urls.checkCallerUrl(ref, param);
  }

  /**
   * The catalog model (or else the workflow) a request may use, or the contract's 404/400
   * . No alias: the catalog's default model for the first capability that has one.
   */
  resolveModel(alias: string | undefined, capabilities: readonly CapabilityName[]): LiveModel {
    if (alias === undefined) return this.defaultModel(capabilities);
    const model = this.deps.catalog.find(alias) ?? this.deps.engines.findModel?.(alias);
    if (!model) throw new ApiError('model_not_found', `unknown model ${alias}`, 'model');
    if (!capabilities.some((c) => model.modelTypes.includes(c))) {
      throw new ApiError('model_capability_mismatch', `model ${alias} cannot do ${capabilities.join(' or ')}`, 'model');
    }
    if (!model.enabled) throw new ApiError('model_disabled', `model ${alias} is disabled${model.disabled_reason ? `: ${model.disabled_reason}` : ''}`, 'model');
    return model;
  }

  /** The models engines serve beyond the catalog (workflows), as they are now: listed with the catalog's. */
  engineModels(): LiveModel[] {
    return this.deps.engines.models?.() ?? [];
  }

  private defaultModel(capabilities: readonly CapabilityName[]): LiveModel {
    for (const capability of capabilities) {
      const model = this.deps.catalog.defaultModel(capability);
      if (model) return this.resolveModel(model.alias, capabilities);
    }
    throw new ApiError('model_not_found', `no model given, and no enabled catalog model can do ${capabilities.join(' or ')}`, 'model');
  }

  /**
   * What the adapter running `model` declares for `endpoint`: undefined when it declares
   * nothing; 400 model_capability_mismatch when it declares endpoints but not this one.
   */
  declarationFor(model: LiveModel, endpoint: Endpoint): EndpointDeclaration | undefined {
    return servedDeclaration(this.deps.engines.engineFor(model).serves, model, endpoint);
  }

  async generate(request: GenerationRequest, mode: 'sync' | 'async'): Promise<GenerationOutcome> {
    const { model } = request;
    const engine = this.deps.engines.engineFor(model);
    const warnings = servedWarnings(servedDeclaration(engine.serves, model, request.endpoint), model, request.input);
    const admitted = await request.admission?.beginTask();
    const task = await this.deps.tasks.submit({
      ownerId: request.ownerId,
      clientId: request.clientId,
      requestId: request.requestId,
      endpoint: request.endpoint,
      model: model.alias,
      provider: model.providerCode,
      outputType: ENDPOINTS[request.endpoint].output,
      cancellable: engine.cancellable,
      input: request.input,
      warnings,
      tokenId: admitted?.tokenId ?? null,
      reservedCredits: admitted?.reservedCredits ?? 0,
      teamId: admitted?.teamId ?? null,
      ...(request.callbackEvents ? { callbackEvents: request.callbackEvents } : {}),
      ...(request.deadlineAt !== undefined ? { deadlineAt: request.deadlineAt } : {}),
    });
    request.admission?.taskSubmitted(task.id);
    if (mode === 'async') return { kind: 'submitted', task };
    const record = await this.deps.tasks.waitForEnd(task.id, this.deps.syncTimeoutMs);
    return record ? { kind: 'ended', task, record } : { kind: 'still_running', task };
  }
}
