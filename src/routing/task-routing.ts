/**
 * A task's run over the channels of its model and of its fallbacks. Where each attempt goes is
 * saved with the task before it starts, and whatever the engine saves (an upstream reference)
 * is kept with it, so a run resumed after a crash goes on with the same model and channel and
 * never submits work an upstream already accepted a second time.
 */
import type { LiveModel } from '../catalog/catalog.ts';
import type { RoutingRecord } from '../core/result-types.ts';
import type { EngineRegistry } from '../providers/registry.ts';
import type { Endpoint, GenerationEngine, GenerationJob, GenerationOutput, RunContext } from '../providers/spec.ts';
import type { ChannelRouter, RouteOutcome } from './router.ts';
import { translateTaskInput } from './translate.ts';

/** The key of the saved state that holds the route. */
const ROUTING_KEY = 'routing';

export class TaskRouting {
  private readonly router: ChannelRouter;
  private readonly engines: EngineRegistry;

  constructor(
    router: ChannelRouter,
    engines: EngineRegistry,
  ) {
    this.router = router;
    this.engines = engines;
  }

  private engineOn(model: LiveModel, channel: string): GenerationEngine {
    return this.engines.engineOn?.(model, channel) ?? this.engines.engineFor(model);
  }

  /**
   * Runs the job where the router sends it; `save` replaces the task's saved state (the route
   * and the engine's own). Answers the output or the failure, with the route either way.
   */
  run(job: GenerationJob, ctx: RunContext, save: (state: Record<string, unknown>) => Promise<void>): Promise<RouteOutcome<GenerationOutput>> {
    const { [ROUTING_KEY]: savedRoute, ...engineState } = job.saved ?? {};
    const hasEngineState = Object.keys(engineState).length > 0;
    // A task saved before it had a route: its engine state belongs to the provider's first channel.
    const first = this.router.tiersOf(job.model)[0]?.[0];
    const resume = (savedRoute as RoutingRecord | undefined)
      ?? (hasEngineState && first ? { model: job.model.alias, provider: job.model.providerCode, channel: first.name, attempts: [], warnings: [] } : undefined);
    return this.router.route<Record<string, unknown>, GenerationOutput>({
      model: job.model,
      input: job.input as Record<string, unknown>,
      ...(resume ? { resume } : {}),
      translate: (input, target) => {
        const serves = this.engines.engineFor(target).serves;
        const declared = serves?.[job.endpoint as Endpoint];
        if (serves && !declared) return { skip: `fallback model ${target.alias} runs on provider ${target.providerCode}, whose adapter does not serve ${job.endpoint}` };
        return translateTaskInput(job.endpoint, input, target, declared);
      },
      beforeAttempt: (record) => save({ [ROUTING_KEY]: record }),
      signal: ctx.signal,
    }, (target) => {
      const { saved: _previous, ...rest } = job;
      // The input as validated for the task, fitted to a fallback model's capabilities: still the endpoint's input.
      const attempt = { ...rest, model: target.model, input: target.input, ...(target.resumed && hasEngineState ? { saved: engineState } : {}) } as GenerationJob;
      return this.engineOn(target.model, target.channel.name).run(attempt, {
        ...ctx,
        signal: target.signal,
        remember: (state) => save({ ...state, [ROUTING_KEY]: target.record }),
      });
    });
  }
}
