import { setTimeout as delay } from 'node:timers/promises';
import { TaskRejectedError, type GenerationEngine, type GenerationJob, type GenerationOutput, type RunContext } from '../spec.ts';
import { generateImage } from './image/generate-image.ts';
import { editImage } from './image/edit-image.ts';
import type { LocalHandler } from './local-handler.ts';
import { MESH_HANDLERS } from './mesh/mesh-handlers.ts';
import { generateSong } from './audio/generate-song.ts';
import { generateSpeech } from './audio/generate-speech.ts';
import { generateVideo } from './video/generate-video.ts';
import { createDigitalHuman } from './video/create-digital-human.ts';
import { lipSyncVideo } from './video/lip-sync-video.ts';

export interface LocalEngineOptions {
  /** The run's progress updates are spread over at least this long (LOCAL_ENGINE_MIN_DURATION_MS). */
  minDurationMs: number;
}

const PROGRESS_STEPS = [10, 30, 50, 70, 90];

/** What the local engine does for each generation endpoint. */
const HANDLERS: Record<string, LocalHandler> = {
  'images.generations': generateImage,
  'ai.generations': generateImage,
  'song.generations': generateSong,
  'speech.generations': generateSpeech,
  'images.edits': editImage,
  'video.generations': generateVideo,
  'digital-human.create': createDigitalHuman,
  'digital-human.generations': lipSyncVideo,
  ...MESH_HANDLERS,
};

/**
 * The built-in offline engine: real files derived deterministically from the request, progress
 * spread over the configured minimum duration, cancellable at every step.
 */
export class LocalEngine implements GenerationEngine {
  readonly cancellable = true;

  constructor(private readonly opts: LocalEngineOptions) {}

  private handlerOf(job: GenerationJob): LocalHandler {
    const handler = HANDLERS[job.endpoint];
    if (!handler) throw new TaskRejectedError(`the local engine has no ${job.endpoint} support`);
    return handler;
  }

  check(job: GenerationJob): void {
    this.handlerOf(job).check?.(job);
  }

  async run(job: GenerationJob, ctx: RunContext): Promise<GenerationOutput> {
    // Without a minimum duration there is nothing to watch: the task goes straight to its end.
    if (this.opts.minDurationMs > 0) {
      const stepMs = this.opts.minDurationMs / (PROGRESS_STEPS.length + 1);
      for (const percent of PROGRESS_STEPS) {
        await delay(stepMs, undefined, { signal: ctx.signal });
        await ctx.progress(percent, 'generating');
      }
      await delay(stepMs, undefined, { signal: ctx.signal });
    }
    ctx.signal.throwIfAborted();
    return this.handlerOf(job).run(job, ctx);
  }
}
