import { blake3 } from 'hash-wasm';
import { TaskFailedError } from '../providers/spec.ts';
import type { EndHandler } from '../tasks/task-endings.ts';
import { RESOURCE_ID_ROLE, SOURCE_VIDEO_ROLE, type DigitalHumanCreateExtra } from '../endpoints/digital-human-engines.ts';
import type { DigitalHumanService } from './digital-human-service.ts';

/**
 * The end handler of digital-human.create: resources are the gateway's records whichever engine
 * made the avatar. A successful create is written with its resource (its id is a text output and
 * `extra.resource_id` of the result), or the task fails when the engine reported no source video.
 */
export function recordCreatedResource(resources: DigitalHumanService): EndHandler {
  return async (ending) => {
    if (ending.status !== 'success' || !ending.output) return undefined;
    const extra = ending.output.extra as Partial<DigitalHumanCreateExtra> | undefined;
    if (!extra?.video) throw new TaskFailedError('the engine reported no source video for the digital human');
    const source = ending.output.files.find((f) => f.role === SOURCE_VIDEO_ROLE);
    const input = JSON.parse(ending.task.input) as { interaction_optimise?: number };
    const resource = resources.create({
      ownerId: ending.task.owner_id,
      model: ending.task.model,
      taskId: ending.task.id,
      // The same hash the asset registry gives the output file, so the source is readable by it.
      sourceHash: source ? `blake3:${await blake3(source.data)}` : null,
      video: extra.video,
      interactionOptimise: input.interaction_optimise === 0 ? 0 : 1,
      upstreamResourceId: extra.upstream_resource_id ?? null,
    });
    ending.result.output_content = [...(ending.result.output_content ?? []), { type: 'text', content: resource.id, role: RESOURCE_ID_ROLE }];
    ending.result.extra = { ...ending.result.extra, resource_id: resource.id };
    return { write: (db) => resources.store(resource, db) };
  };
}
