import { blake3 } from 'hash-wasm';
import type { EngineRegistry } from '../providers/registry.ts';
import { TaskFailedError, type GenerationEngine, type GenerationJob, type GenerationOutput } from '../providers/spec.ts';
import type { DigitalHumanService, DigitalHumanVideo } from './digital-human-service.ts';

/** Endpoint of POST /v1/digital-human/create. */
export const DIGITAL_HUMAN_CREATE = 'digital-human.create';
/** Endpoint of POST /v1/digital-human/generations. */
export const DIGITAL_HUMAN_GENERATIONS = 'digital-human.generations';
/** Role of the output file that is the resource's source video (kept as the owner's asset). */
export const SOURCE_VIDEO_ROLE = 'source';
/** Role of the text output that carries the new resource id. */
export const RESOURCE_ID_ROLE = 'resource_id';

/** What an engine's digital-human.create run reports in GenerationOutput.extra. */
export interface DigitalHumanCreateExtra {
  video: DigitalHumanVideo;
  /** The upstream's own id of the trained avatar, when an upstream made it. */
  upstream_resource_id?: string;
}

/** What a digital-human.generations job carries in `input.resource`, added when the task runs. */
export interface DigitalHumanJobResource {
  id: string;
  /** Input reference (`blake3:<hex>`) of the source video for RunContext.readInput; null when an upstream keeps it. */
  source: string | null;
  video: DigitalHumanVideo;
  upstream_resource_id: string | null;
}

/**
 * Resources are the gateway's records whichever engine makes the avatar: after a create run
 * the resource is written (before the task's success is), and a generation run gets the
 * resource it names in its input. Every engine of `engines` is wrapped this way.
 */
export function withDigitalHumanResources(engines: EngineRegistry, resources: DigitalHumanService): EngineRegistry {
  const wrapped = new WeakMap<GenerationEngine, GenerationEngine>();
  return {
    engineFor(model) {
      const engine = engines.engineFor(model);
      let wrapper = wrapped.get(engine);
      if (!wrapper) {
        wrapper = wrapEngine(engine, resources);
        wrapped.set(engine, wrapper);
      }
      return wrapper;
    },
    findModel: (name) => engines.findModel?.(name),
  };
}

function wrapEngine(engine: GenerationEngine, resources: DigitalHumanService): GenerationEngine {
  return {
    cancellable: engine.cancellable,
    check: (job) => engine.check?.(job),
    async run(job, ctx) {
      if (job.endpoint === DIGITAL_HUMAN_GENERATIONS) return engine.run(await withResource(job, resources), ctx);
      const output = await engine.run(job, ctx);
      return job.endpoint === DIGITAL_HUMAN_CREATE ? recordResource(job, output, resources) : output;
    },
  };
}

async function withResource(job: GenerationJob, resources: DigitalHumanService): Promise<GenerationJob> {
  const id = String(job.input.resource_id);
  const resource = await resources.find(job.ownerId, id);
  // The route checked it at submit; only a resource removed since then gets here.
  if (!resource) throw new TaskFailedError(`digital-human resource ${id} does not exist`);
  const ref: DigitalHumanJobResource = {
    id: resource.id,
    source: resource.sourceHash,
    video: resource.video,
    upstream_resource_id: resource.upstreamResourceId,
  };
  return { ...job, input: { ...job.input, resource: ref } };
}

async function recordResource(job: GenerationJob, output: GenerationOutput, resources: DigitalHumanService): Promise<GenerationOutput> {
  const extra = output.extra as Partial<DigitalHumanCreateExtra> | undefined;
  if (!extra?.video) throw new TaskFailedError('the engine reported no source video for the digital human');
  const source = output.files.find((f) => f.role === SOURCE_VIDEO_ROLE);
  const resource = await resources.record({
    ownerId: job.ownerId,
    model: job.model.alias,
    taskId: job.taskId,
    // The same hash the asset registry gives the output file, so the source is readable by it.
    sourceHash: source ? `blake3:${await blake3(source.data)}` : null,
    video: extra.video,
    interactionOptimise: job.input.interaction_optimise === 0 ? 0 : 1,
    upstreamResourceId: extra.upstream_resource_id ?? null,
  });
  return {
    ...output,
    texts: [...(output.texts ?? []), { content: resource.id, role: RESOURCE_ID_ROLE }],
    extra: { ...extra, resource_id: resource.id },
  };
}
