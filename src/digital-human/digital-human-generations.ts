/**
 * The digital-human calls (docs/api/digital-humans.md): a resource made from a source video, then
 * lip-synced videos of it. The model's mode decides which options apply; the resource must be
 * the caller's; the task goes through the generation pipeline.
 */
import type { GenerationCaller, GenerationOutcome, GenerationService } from '../tasks/generation-service.ts';
import { DIGITAL_HUMAN_CREATE, DIGITAL_HUMAN_GENERATIONS } from '../endpoints/digital-human-engines.ts';
import { digitalHumanModeOf, generationInputFor } from '../endpoints/digital-human-options.ts';
import type { DigitalHuman, DigitalHumanService } from './digital-human-service.ts';
import type { DigitalHumanCreateBody, DigitalHumanGenerationBody, DigitalHumanJobResource } from '../endpoints/digital-human.ts';

type Mode = 'sync' | 'async';
const CAPABILITIES = ['digital_human_generate'] as const;

/** The resource as a generation task carries it (`input.resource`), so engines need no lookup. */
function jobResourceOf(resource: DigitalHuman): DigitalHumanJobResource {
  return { id: resource.id, source: resource.sourceHash, video: resource.video, upstream_resource_id: resource.upstreamResourceId };
}

export class DigitalHumanGenerations {
  private readonly deps: { generations: GenerationService; resources: DigitalHumanService };

  constructor(deps: { generations: GenerationService; resources: DigitalHumanService }) {
    this.deps = deps;
  }

  /** POST /v1/digital-human/create. */
  create(caller: GenerationCaller, body: DigitalHumanCreateBody, mode: Mode): Promise<GenerationOutcome> {
    const { model: alias, ...input } = body;
    this.deps.generations.checkCallerUrl(input.video_id, 'video_id');
    const model = this.deps.generations.resolveModel(alias, CAPABILITIES);
    return this.deps.generations.generate({ ...caller, endpoint: DIGITAL_HUMAN_CREATE, model, input }, mode);
  }

  /** POST /v1/digital-human/generations: Lite-only options on a Basic model (and the reverse) are 400 unsupported_parameter. */
  async generate(caller: GenerationCaller, body: DigitalHumanGenerationBody, mode: Mode): Promise<GenerationOutcome> {
    const { model: alias, ...params } = body;
    const model = this.deps.generations.resolveModel(alias, CAPABILITIES);
    const input = generationInputFor(digitalHumanModeOf(model), params);
    for (const field of ['audio_url', 'image_url', 'video_url'] as const) {
      const ref = params[field];
      if (ref !== undefined) this.deps.generations.checkCallerUrl(ref, field);
    }
    const resource = await this.deps.resources.require(caller.ownerId, params.resource_id);
    return this.deps.generations.generate({ ...caller, endpoint: DIGITAL_HUMAN_GENERATIONS, model, input: { ...input, resource: jobResourceOf(resource) } }, mode);
  }
}
