import type { Logger } from 'pino';
import type { CatalogView, LiveModel } from '../catalog/catalog.ts';
import { isTerminal } from '../core/task-state.ts';
import type { FileService } from '../files/file-service.ts';
import type { EngineRegistry } from '../providers/registry.ts';
import type { TaskRouting } from '../routing/task-routing.ts';
import { TaskCancelledError, TaskFailedError, TaskRejectedError, type GenerationJob, type GenerationOutput, type TaskInput } from '../providers/spec.ts';
import type { TaskRow } from '../storage/schema.ts';
import type { EventBus } from '../storage/event-bus.ts';
import { InputUnavailableError, type InputReader } from './input-reader.ts';
import { UrlNotAllowedError } from './outbound-fetch.ts';
import type { TaskClaim } from './task-queue.ts';
import type { BillingEntry, RoutingRecord } from '../core/result-types.ts';
import { parseResult, type TaskResult } from './task-record.ts';
import { DEADLINE_EXCEEDED, type TaskService } from './task-service.ts';
import { failSpan, GEN_AI, inSpan, restoredTraceContext, SpanKind } from '../telemetry/tracing.ts';
import { retryWhileDatabaseUnavailable } from '../storage/database-unavailable.ts';
import type { Span } from '@opentelemetry/api';

/** Runs taken over after this many interrupted runs fail instead of trying again. */
const MAX_ATTEMPTS = 3;
/** An engine's previews closer together than this are dropped: each one is a stored file and an event. */
const PREVIEW_SPACING_MS = 500;
/** File name extensions of the preview images engines send. */
const PREVIEW_EXTENSIONS: Record<string, string> = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/webp': 'webp' };

/**
 * Runs one claimed task: start, the engine's run with progress, storing its outputs, and the
 * end state. A cancel (from any instance) aborts the engine; losing the claim or a shutdown
 * aborts it too but leaves the task live, so it is resumed.
 */
export class TaskRunner {
  private readonly running = new Map<string, AbortController>();
  private readonly unsubscribe: () => void;

  private readonly deps: {
      tasks: TaskService;
      catalog: CatalogView;
      engines: EngineRegistry;
      /** Sends each run to a channel of its model (or of a fallback) and moves it on failure. */
      routing: TaskRouting;
      files: FileService;
      bus: EventBus;
      inputs: InputReader;
      instanceId: string;
      logger: Logger;
    };

  constructor(
    deps: {
      tasks: TaskService;
      catalog: CatalogView;
      engines: EngineRegistry;
      /** Sends each run to a channel of its model (or of a fallback) and moves it on failure. */
      routing: TaskRouting;
      files: FileService;
      bus: EventBus;
      inputs: InputReader;
      instanceId: string;
      logger: Logger;
    },
  ) {
    this.deps = deps;
    this.unsubscribe = deps.bus.subscribe('task.cancel', ({ taskId }) => this.running.get(taskId)?.abort(new TaskCancelledError('cancelled')));
  }

  close(): void {
    this.unsubscribe();
  }

  /** Runs the claimed task; `ended` when it is over (its end, written by anyone, gave the claim back). */
  readonly handle = async (claim: TaskClaim): Promise<'ended' | 'live'> => {
    const row = claim.row ?? (await this.stored(claim, () => this.deps.tasks.load(claim.taskId)));
    if (!row || isTerminal(row.status)) return 'ended';
    // A child of the submitting request's span, wherever the task runs.
    return inSpan(`task run ${row.endpoint}`, () => ({
      kind: SpanKind.CONSUMER,
      parent: restoredTraceContext(row.trace_context),
      attributes: { [GEN_AI.operationName]: 'generate_content', [GEN_AI.requestModel]: row.model, 'gengate.task.id': row.id, 'gengate.task.output_type': row.output_type, 'gengate.task.attempt': claim.attempt },
    }), (span) => this.run(row, claim, span));
  };

  private async run(row: TaskRow, claim: TaskClaim, span: Span | undefined): Promise<'ended' | 'live'> {
    const log = this.deps.logger.child({ taskId: row.id, attempt: claim.attempt });
    if (this.deps.tasks.isOverdue(row)) return this.fail(claim, row.id, DEADLINE_EXCEEDED);
    if (claim.attempt > MAX_ATTEMPTS) return this.fail(claim, row.id, `the task was interrupted ${MAX_ATTEMPTS} times (its worker stopped or lost contact) and is not retried`);
    const model = this.deps.catalog.find(row.model) ?? this.deps.engines.findModel?.(row.model);
    if (!model) return this.fail(claim, row.id, `model ${row.model} is no longer in the catalog`);
    const engine = this.deps.engines.engineFor(model);
    // The endpoint's service stored the row's input as that endpoint's type: read back, it is that type again.
    const stored = { endpoint: row.endpoint, input: JSON.parse(row.input) as unknown } as TaskInput;
    const job: GenerationJob = { taskId: row.id, ownerId: row.owner_id, ...stored, model, attempt: claim.attempt,
      ...(row.saved_state ? { saved: JSON.parse(row.saved_state) as Record<string, unknown> } : {}),
    };

    const controller = new AbortController();
    const onLost = () => controller.abort(claim.signal.reason);
    claim.signal.addEventListener('abort', onLost, { once: true });
    this.running.set(row.id, controller);
    // The newest version this run wrote, handed back to save re-reading it on the next change.
    let latest: TaskRow = row;
    // What the task has saved: this run is its one writer while it holds the claim, so its end need not read it back.
    let saved = row.saved_state;
    // A submitted task is started by the first save, which TaskRouting makes before the first
    // attempt (its route): the start and the route are one write, and nothing runs before both are stored.
    let started = row.status !== 'submitted';
    const save = async (state: Record<string, unknown>) => {
      if (started) {
        saved = await this.stored(claim, () => this.deps.tasks.saveState(row.id, state));
        return;
      }
      const outcome = await this.stored(claim, () => this.deps.tasks.transition(row.id, { status: 'started' }, { server: this.deps.instanceId, current: latest, state }));
      if (!outcome.ok) {
        // Ended meanwhile (cancelled, past its deadline): the run is over. Started by another worker: it is theirs.
        const reason = isTerminal(outcome.row.status) ? new TaskCancelledError(`task is ${outcome.row.status}`) : new Error(`task is ${outcome.row.status} elsewhere`);
        controller.abort(reason);
        throw reason;
      }
      started = true;
      latest = outcome.row;
      saved = outcome.row.saved_state;
    };
    // A resumed run covers ground again (an engine restarts its count, an upstream is polled
    // anew); progress up to what the task had reached was announced before the interruption.
    const announced = row.status === 'submitted' ? -1 : row.progress;
    // Where the run went, for the record whatever its end.
    let routing: RoutingRecord | undefined;
    let previews = 0;
    let lastPreviewAt = -Infinity;
    const preview = async (image: Buffer, mimeType: string) => {
      if (Date.now() - lastPreviewAt < PREVIEW_SPACING_MS) return;
      lastPreviewAt = Date.now();
      try {
        const file = await this.deps.files.store(row.owner_id, image, `preview-${++previews}.${PREVIEW_EXTENSIONS[mimeType] ?? 'bin'}`, mimeType);
        await this.deps.tasks.preview(row.id, file.url);
      } catch (err) {
        // A preview is a courtesy: the run goes on without it.
        log.warn({ err }, 'storing a preview failed');
      }
    };
    try {
      if (row.status === 'submitted') {
        try {
          await engine.check?.(job);
        } catch (err) {
          if (!(err instanceof TaskRejectedError)) throw err;
          return outcomeOf(await this.stored(claim, () => this.deps.tasks.transition(row.id, { status: 'rejected', message: err.message }, { current: latest })));
        }
      } else {
        log.info('resuming a task whose worker stopped');
        const resumed = await this.stored(claim, () => this.deps.tasks.transition(row.id, { status: 'process', message: 'resumed after an interruption' }, { server: this.deps.instanceId, current: latest }));
        latest = resumed.row;
      }
      const warnings: string[] = [];
      const routed = await this.deps.routing.run(job, {
        signal: controller.signal,
        progress: async (percent, message, nodeStatus) => {
          if (percent <= announced) return;
          const res = await this.stored(claim, () => this.deps.tasks.transition(row.id, { status: 'process', progress: percent, ...(message !== undefined ? { message } : {}) }, { current: latest, ...(nodeStatus ? { result: { node_status: nodeStatus } } : {}) }));
          latest = res.row;
          // Ended meanwhile (cancelled elsewhere): stop the work.
          if (!res.ok) controller.abort(new TaskCancelledError(`task is ${res.row.status}`));
        },
        remember: save,
        readInput: (ref) => this.stored(claim, () => this.deps.inputs.read(row.owner_id, ref)),
        publish: async (data, fileName, mimeType) => (await this.stored(claim, () => this.deps.files.store(row.owner_id, data, fileName, mimeType))).url,
        warn: (message) => void warnings.push(message),
        preview,
      }, save);
      routing = routed.record;
      if (!routed.ok) throw routed.error;
      const output = routed.value;
      span?.setAttributes({
        [GEN_AI.responseModel]: routing.model, [GEN_AI.providerName]: routing.provider, [GEN_AI.system]: routing.provider, 'gengate.routing.channel': routing.channel,
        ...(output.usage ? { [GEN_AI.inputTokens]: output.usage.input_tokens, [GEN_AI.outputTokens]: output.usage.output_tokens } : {}),
      });
      controller.signal.throwIfAborted();
      // The end handlers store the files and add them to the result, in the transaction that writes the success.
      const result = this.resultOf(row, this.deps.catalog.find(routing.model) ?? model, output, warnings, routing);
      return outcomeOf(await this.stored(claim, () => this.deps.tasks.transition(row.id, { status: 'success', message: 'success' }, { result, output, current: { ...latest, saved_state: saved }, currentHasState: true })));
    } catch (err) {
      if (span && !controller.signal.aborted) failSpan(span, err);
      if (controller.signal.aborted) {
        // Cancelled: the record already says so. Lost claim or shutdown: the task stays live and resumes.
        const reason: unknown = controller.signal.reason;
        if (!(reason instanceof TaskCancelledError)) log.info({ reason: reason instanceof Error ? reason.message : String(reason) }, 'task run stopped');
        // Cancelled: the cancel's end gave the claim back. Otherwise the task is handed back.
        return reason instanceof TaskCancelledError ? 'ended' : 'live';
      }
      // Its message is all the caller learns: nothing of the refused target.
      if (err instanceof UrlNotAllowedError) return this.fail(claim, row.id, err.message, undefined, routing);
      if (err instanceof InputUnavailableError) return this.fail(claim, row.id, `an input could not be read: ${err.message}`, undefined, routing);
      if (err instanceof TaskFailedError) return this.fail(claim, row.id, err.message, err.originalMessage, routing);
      log.warn({ err }, 'task failed');
      return this.fail(claim, row.id, 'generation failed', err instanceof Error ? err.message : String(err), routing);
    } finally {
      claim.signal.removeEventListener('abort', onLost);
      this.running.delete(row.id);
    }
  }

  private async fail(claim: TaskClaim, taskId: string, message: string, original?: string, routing?: RoutingRecord): Promise<'ended' | 'live'> {
    return outcomeOf(await this.stored(claim, () => this.deps.tasks.transition(taskId, { status: 'failed', message, errorMessage: original ?? message }, routing ? { result: { routing } } : {})));
  }

  /**
   * A read or write of a run waits out a database outage while the run holds its claim: what the
   * engine did is kept, and the task is not run again, once the database is back. Compare-and-set
   * makes a write that did land before its answer was lost harmless to repeat.
   */
  private stored<T>(claim: TaskClaim, work: () => Promise<T>): Promise<T> {
    return retryWhileDatabaseUnavailable(work, {
      signal: claim.signal,
      onRetry: (err, attempt) => {
        if (attempt === 1) this.deps.logger.warn({ err, taskId: claim.taskId }, 'the database is unavailable; the task run waits for it');
      },
    });
  }

  /** The billing entry of a finished task: what ran, on which provider, and what it produced. */
  private billingOf(row: TaskRow, model: LiveModel, output: GenerationOutput): BillingEntry {
    const provider = this.deps.catalog.providers.find((p) => p.code === model.providerCode);
    return {
      billing_type: row.output_type,
      billing_model: { name: model.alias, real_model: model.defaultRealModelName },
      generateParams: { endpoint: row.endpoint },
      platform: { name: provider?.name ?? model.providerCode, id: model.providerCode, code: model.providerCode },
      billing_params: { outputs: output.files.length + (output.texts?.length ?? 0) },
      result: { token: output.usage?.total_tokens ?? 0 },
    };
  }

  /** What the run leaves in the result besides its files: texts, usage, billing (of the model that served), workflow status, domain data and the route. */
  private resultOf(row: TaskRow, model: LiveModel, output: GenerationOutput, warnings: string[], routing: RoutingRecord): TaskResult {
    return {
      routing,
      output_content: (output.texts ?? []).map((text) => ({ type: 'text', content: text.content, ...(text.role ? { role: text.role } : {}) })),
      ...(output.files[0]?.mediaSize ? { mediaSize: output.files[0].mediaSize } : {}),
      ...(output.usage ? { usage: output.usage } : {}),
      billings: output.billings ?? [this.billingOf(row, model, output)],
      ...(output.nodeStatus ? { node_status: output.nodeStatus } : {}),
      ...(output.extra ? { extra: output.extra } : {}),
      // The run's own drops follow the fields the adapter declared it does not read.
      ...(warnings.length > 0 ? { warnings: [...(parseResult(row).warnings ?? []), ...warnings] } : {}),
    };
  }
}

/** Whether a run is over after a status change: the task as stored has ended (by this change or another writer's). */
function outcomeOf(result: { row: TaskRow }): 'ended' | 'live' {
  return isTerminal(result.row.status) ? 'ended' : 'live';
}
