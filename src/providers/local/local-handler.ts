import type { Endpoint, GenerationOutput, JobOf, RunContext } from '../spec.ts';

/**
 * The local engine's work for the endpoints `E`, reading their typed inputs. `check` refuses a
 * job before it starts (TaskRejectedError); `run` produces the files, reading inputs through
 * the context.
 */
// `in`: a handler of several endpoints serves each one of them.
export interface LocalHandler<in E extends Endpoint = Endpoint> {
  check?(job: JobOf<E>): void;
  run(job: JobOf<E>, ctx: RunContext): Promise<GenerationOutput>;
  /** A small, rough PNG of what `run` will make, shown as the task's preview while its progress steps go by. */
  draft?(job: JobOf<E>): Promise<Buffer>;
}
