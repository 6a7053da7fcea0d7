import { setTimeout as delay } from 'node:timers/promises';
import { ENDPOINT_NAMES, ENDPOINTS, type EndpointRow, type LocalHandlerKey, type LocalHandlerKeys } from '../../endpoints/endpoint-table.ts';
import { TaskRejectedError, type Endpoint, type EngineDeclaration, type GenerationEngine, type GenerationJob, type GenerationOutput, type RunContext } from '../spec.ts';
import type { LocalHandler } from './local-handler.ts';
import { MAX_IMAGE_SIDE } from './image/image-size.ts';

export interface LocalEngineOptions {
  /** The run's progress updates are spread over at least this long (LOCAL_ENGINE_MIN_DURATION_MS). */
  minDurationMs: number;
}

const PROGRESS_STEPS = [10, 30, 50, 70, 90];
/** The step after which a handler's draft is shown (halfway). */
const DRAFT_STEP = 2;
/** The saved state of a run: how many progress steps it reported. */
const SAVED_STEPS = 'local_progress_steps';

/** The endpoints whose row in the table names the handler K. */
type EndpointsOf<K extends LocalHandlerKey> = { [E in Endpoint]: LocalHandlerKeys[E] extends K ? E : never }[Endpoint];
type HandlerLoader<E extends Endpoint> = (endpoint: E) => Promise<LocalHandler<E>>;

/**
 * What the local engine does for each handler of the endpoint table. Each handler's module (and
 * the image, audio, video and mesh libraries behind it) loads on first use, so a gateway that
 * never runs one does not keep it in memory.
 */
export const LOCAL_HANDLERS: { [K in LocalHandlerKey]: HandlerLoader<EndpointsOf<K>> } = {
  'generate-image': async () => (await import('./image/generate-image.ts')).generateImage,
  'edit-image': async () => (await import('./image/edit-image.ts')).editImage,
  'generate-song': async () => (await import('./audio/generate-song.ts')).generateSong,
  'generate-speech': async () => (await import('./audio/generate-speech.ts')).generateSpeech,
  'generate-video': async () => (await import('./video/generate-video.ts')).generateVideo,
  'create-digital-human': async () => (await import('./video/create-digital-human.ts')).createDigitalHuman,
  'lip-sync-video': async () => (await import('./video/lip-sync-video.ts')).lipSyncVideo,
  // Each 3D endpoint has its own handler there; TypeScript sees the union of them all.
  mesh: async (endpoint) => (await import('./mesh/mesh-handlers.ts')).MESH_HANDLERS[endpoint] as LocalHandler<EndpointsOf<'mesh'>>,
};

/** The /v1/mesh3d endpoints, whose handlers are mesh/mesh-handlers.ts's. */
export const MESH_ENDPOINTS = ENDPOINT_NAMES.filter((endpoint) => ENDPOINTS[endpoint].local === 'mesh');

/** Every endpoint of the table; the image ones draw sides up to MAX_IMAGE_SIDE. Workflow parameters are read as they come. */
const LOCAL_DECLARATION: EngineDeclaration = Object.fromEntries(ENDPOINT_NAMES.map((endpoint) => [
  endpoint,
  ENDPOINTS[endpoint].output === 'image' ? { limits: { maxImageSide: MAX_IMAGE_SIDE } } : {},
]));

/**
 * The built-in offline engine: real files derived deterministically from the request, progress
 * spread over the configured minimum duration, cancellable at every step.
 */
export class LocalEngine implements GenerationEngine {
  readonly cancellable = true;
  readonly serves: EngineDeclaration = LOCAL_DECLARATION;

  private readonly opts: LocalEngineOptions;

  constructor(opts: LocalEngineOptions) {
    this.opts = opts;
  }

  private async handlerOf(job: GenerationJob): Promise<LocalHandler> {
    // The table pairs each endpoint with a handler of that endpoint's input, so the job's own
    // endpoint picks a handler that reads its input; TypeScript cannot follow that pairing.
    // A stored task's endpoint is read back as it was written.
    const row = ENDPOINTS[job.endpoint] as EndpointRow | undefined;
    if (!row) throw new TaskRejectedError(`the local engine has no ${job.endpoint} support`);
    return (LOCAL_HANDLERS[row.local] as HandlerLoader<Endpoint>)(job.endpoint);
  }

  async check(job: GenerationJob): Promise<void> {
    (await this.handlerOf(job)).check?.(job);
  }

  async run(job: GenerationJob, ctx: RunContext): Promise<GenerationOutput> {
    const handler = await this.handlerOf(job);
    // Without a minimum duration there is nothing to watch: the task goes straight to its end.
    if (this.opts.minDurationMs > 0) {
      const stepMs = this.opts.minDurationMs / (PROGRESS_STEPS.length + 1);
      // A resumed run goes on from the last step it reported, as an upstream job would.
      const saved = job.saved?.[SAVED_STEPS];
      for (let step = typeof saved === 'number' ? saved : 0; step < PROGRESS_STEPS.length; step++) {
        await delay(stepMs, undefined, { signal: ctx.signal });
        await ctx.progress(PROGRESS_STEPS[step]!, 'generating');
        if (step === DRAFT_STEP && handler.draft) await ctx.preview(await handler.draft(job), 'image/png');
        await ctx.remember({ [SAVED_STEPS]: step + 1 });
      }
      await delay(stepMs, undefined, { signal: ctx.signal });
    }
    ctx.signal.throwIfAborted();
    return handler.run(job, ctx);
  }
}
