import type { GenerationJob, GenerationOutput, RunContext } from '../spec.ts';

/**
 * The local engine's work for one endpoint. `check` refuses a job before it starts
 * (TaskRejectedError); `run` produces the files, reading inputs through the context.
 */
export interface LocalHandler {
  check?(job: GenerationJob): void;
  run(job: GenerationJob, ctx: RunContext): Promise<GenerationOutput>;
}
