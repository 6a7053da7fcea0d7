import { setTimeout as delay } from 'node:timers/promises';
import { TaskRejectedError, type Endpoint, type EngineDeclaration, type GenerationEngine, type GenerationJob, type GenerationOutput, type RunContext } from '../spec.ts';
import type { LocalHandler } from './local-handler.ts';
import { MAX_IMAGE_SIDE } from './image/image-size.ts';

export interface LocalEngineOptions {
  /** The run's progress updates are spread over at least this long (LOCAL_ENGINE_MIN_DURATION_MS). */
  minDurationMs: number;
}

const PROGRESS_STEPS = [10, 30, 50, 70, 90];
/** The saved state of a run: how many progress steps it reported. */
const SAVED_STEPS = 'local_progress_steps';

type HandlerLoader<E extends Endpoint> = () => Promise<LocalHandler<E>>;
type MeshEndpoint = Extract<Endpoint, `mesh3d.${string}`>;

/** The /v1/mesh3d endpoints of mesh/mesh-handlers.ts, named here so that module loads only when one runs. */
export const MESH_ENDPOINTS = (['generate.text', 'generate.image', 'generate.multiview', 'edit.segmentation', 'edit.completion', 'edit.smart_lowpoly', 'edit.texture', 'edit.convert', 'edit.check_riggable', 'edit.rig', 'edit.retarget_animation', 'edit.refine', 'edit.stylize'] as const).map((name): MeshEndpoint => `mesh3d.${name}`);
const meshHandler = <E extends MeshEndpoint>(endpoint: E): HandlerLoader<E> => async () => (await import('./mesh/mesh-handlers.ts')).MESH_HANDLERS[endpoint];

/**
 * What the local engine does for each generation endpoint. Each handler's module (and the
 * image, audio, video and mesh libraries behind it) loads on first use, so a gateway that never
 * runs one does not keep it in memory.
 */
const HANDLERS: { [E in Endpoint]: HandlerLoader<E> } = {
  'images.generations': async () => (await import('./image/generate-image.ts')).generateImage,
  'ai.generations': async () => (await import('./image/generate-image.ts')).generateImage,
  'images.edits': async () => (await import('./image/edit-image.ts')).editImage,
  'song.generations': async () => (await import('./audio/generate-song.ts')).generateSong,
  'speech.generations': async () => (await import('./audio/generate-speech.ts')).generateSpeech,
  'video.generations': async () => (await import('./video/generate-video.ts')).generateVideo,
  'digital-human.create': async () => (await import('./video/create-digital-human.ts')).createDigitalHuman,
  'digital-human.generations': async () => (await import('./video/lip-sync-video.ts')).lipSyncVideo,
  ...(Object.fromEntries(MESH_ENDPOINTS.map((endpoint) => [endpoint, meshHandler(endpoint)])) as { [E in MeshEndpoint]: HandlerLoader<E> }),
};

/** Every handler's endpoint; the image ones draw sides up to MAX_IMAGE_SIDE. Workflow parameters are read as they come. */
const LOCAL_DECLARATION: EngineDeclaration = Object.fromEntries(Object.keys(HANDLERS).map((endpoint) => [
  endpoint,
  endpoint.startsWith('images.') || endpoint === 'ai.generations' ? { limits: { maxImageSide: MAX_IMAGE_SIDE } } : {},
]));

/**
 * The built-in offline engine: real files derived deterministically from the request, progress
 * spread over the configured minimum duration, cancellable at every step.
 */
export class LocalEngine implements GenerationEngine {
  readonly cancellable = true;
  readonly serves: EngineDeclaration = LOCAL_DECLARATION;

  constructor(private readonly opts: LocalEngineOptions) {}

  private async handlerOf(job: GenerationJob): Promise<LocalHandler> {
    // HANDLERS pairs each endpoint with the handler of that endpoint's input, so the job's own
    // endpoint picks a handler that reads its input; TypeScript cannot follow that pairing.
    const load = HANDLERS[job.endpoint] as HandlerLoader<Endpoint> | undefined;
    if (!load) throw new TaskRejectedError(`the local engine has no ${job.endpoint} support`);
    return load();
  }

  async check(job: GenerationJob): Promise<void> {
    (await this.handlerOf(job)).check?.(job);
  }

  async run(job: GenerationJob, ctx: RunContext): Promise<GenerationOutput> {
    // Without a minimum duration there is nothing to watch: the task goes straight to its end.
    if (this.opts.minDurationMs > 0) {
      const stepMs = this.opts.minDurationMs / (PROGRESS_STEPS.length + 1);
      // A resumed run goes on from the last step it reported, as an upstream job would.
      const saved = job.saved?.[SAVED_STEPS];
      for (let step = typeof saved === 'number' ? saved : 0; step < PROGRESS_STEPS.length; step++) {
        await delay(stepMs, undefined, { signal: ctx.signal });
        await ctx.progress(PROGRESS_STEPS[step]!, 'generating');
        await ctx.remember({ [SAVED_STEPS]: step + 1 });
      }
      await delay(stepMs, undefined, { signal: ctx.signal });
    }
    ctx.signal.throwIfAborted();
    return (await this.handlerOf(job)).run(job, ctx);
  }
}
