import { setTimeout as delay } from 'node:timers/promises';
import { AcceptedWorkError, TaskCancelledError, TaskFailedError, type EngineDeclaration, type GenerationEngine, type GenerationJob, type GenerationOutput, type RunContext } from './spec.ts';

/** What an upstream says about a task it runs. */
export type UpstreamPoll =
  | { state: 'running'; progress?: number; message?: string }
  | { state: 'succeeded'; output: GenerationOutput }
  /** `fault: 'upstream'`: it failed for reasons of its own (not a refusal), so another channel may take the task. */
  | { state: 'failed'; message: string; original?: string; fault?: 'upstream' };

/**
 * An upstream that runs tasks of its own: submit answers a JSON-serializable reference (the
 * upstream task id and whatever polling needs), poll reports its state.
 */
export interface UpstreamTaskApi<Ref extends Record<string, unknown>> {
  /** Refuses a job the upstream cannot take (TaskRejectedError) before anything is sent. */
  check?(job: GenerationJob): void;
  submit(job: GenerationJob, ctx: RunContext): Promise<Ref>;
  poll(ref: Ref, job: GenerationJob, ctx: RunContext): Promise<UpstreamPoll>;
  /** Stops the upstream task; only workflow engines (cancellable) have it. */
  cancel?(ref: Ref): Promise<void>;
}

export interface UpstreamTaskEngineOptions {
  /** Built-in workflow engines can stop a task; external APIs cannot. */
  cancellable: boolean;
  pollIntervalMs: number;
  /** A task still running upstream after this long fails. */
  maxWaitMs: number;
  /** What the adapter serves (GenerationEngine.serves). */
  serves?: EngineDeclaration;
}

/** The key under which the upstream reference is saved for a resumed run. */
const SAVED_KEY = 'upstream';

/**
 * Turns submit + poll into a task run: the upstream reference is saved before waiting, so a run
 * resumed after a restart polls the same upstream task instead of submitting (and paying) twice.
 */
export function upstreamTaskEngine<Ref extends Record<string, unknown>>(api: UpstreamTaskApi<Ref>, opts: UpstreamTaskEngineOptions): GenerationEngine {
  return {
    cancellable: opts.cancellable,
    ...(opts.serves ? { serves: opts.serves } : {}),
    ...(api.check ? { check: (job: GenerationJob) => api.check!(job) } : {}),
    async run(job, ctx) {
      let ref = job.saved?.[SAVED_KEY] as Ref | undefined;
      if (!ref) {
        ref = await api.submit(job, ctx);
        await ctx.remember({ [SAVED_KEY]: ref });
      }
      const deadline = Date.now() + opts.maxWaitMs;
      let lastProgress = 0;
      try {
        for (;;) {
          const state = await api.poll(ref, job, ctx);
          if (state.state === 'succeeded') return state.output;
          if (state.state === 'failed') throw new AcceptedWorkError(state.message, state.original, state.fault === 'upstream');
          if (state.progress !== undefined && state.progress > lastProgress) {
            lastProgress = Math.min(99, state.progress);
            await ctx.progress(lastProgress, state.message);
          }
          if (Date.now() > deadline) throw new TaskFailedError(`the upstream task did not finish within ${Math.round(opts.maxWaitMs / 1000)} s`);
          await delay(opts.pollIntervalMs, undefined, { signal: ctx.signal });
        }
      } catch (err) {
        // Only a cancel stops the upstream task; a worker shutting down leaves it for the resumed run.
        if (ctx.signal.reason instanceof TaskCancelledError && opts.cancellable && api.cancel) await api.cancel(ref).catch(() => undefined);
        // The upstream holds the work now: a failure while watching it must not send it elsewhere.
        if (err instanceof TaskFailedError && !(err instanceof AcceptedWorkError)) throw new AcceptedWorkError(err.message, err.originalMessage, false);
        throw err;
      }
    },
  };
}
