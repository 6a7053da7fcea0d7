import { ApiError } from '../core/errors.ts';
import { newId } from '../core/ids.ts';
import type { DbHandle } from '../storage/db-handle.ts';
import type { DigitalHumanRepo } from '../storage/repos/digital-human-repo.ts';
import type { DigitalHumanVideo } from '../endpoints/digital-human.ts';

/** A digital-human resource as the gateway keeps it. */
export interface DigitalHuman {
  id: string;
  ownerId: string;
  /** Catalog alias the resource was created with. */
  model: string;
  taskId: string;
  /** `blake3:<hex>` of the source video (the owner's asset), readable as a task input; null when an upstream kept it. */
  sourceHash: string | null;
  video: DigitalHumanVideo;
  interactionOptimise: 0 | 1;
  upstreamResourceId: string | null;
  createdAt: number;
}

export type NewDigitalHuman = Omit<DigitalHuman, 'id' | 'createdAt'>;

/** Digital-human resources: recorded when a digital-human.create task succeeds, looked up by their owner. */
export class DigitalHumanService {
  private readonly repo: DigitalHumanRepo;
  private readonly clock: () => number;

  constructor(
    repo: DigitalHumanRepo,
    clock: () => number = Date.now,
  ) {
    this.repo = repo;
    this.clock = clock;
  }

  /** A new resource with its id, not stored yet: its id goes into the create task's result first. */
  create(spec: NewDigitalHuman): DigitalHuman {
    return { ...spec, id: newId('dh'), createdAt: this.clock() };
  }

  /** Stores a resource through `db`, the transaction that ends its create task. */
  async store(resource: DigitalHuman, db: DbHandle): Promise<void> {
    await this.repo.in(db).insert({
      id: resource.id,
      owner_id: resource.ownerId,
      model: resource.model,
      task_id: resource.taskId,
      source_hash: resource.sourceHash,
      video: JSON.stringify(resource.video),
      interaction_optimise: resource.interactionOptimise,
      upstream_resource_id: resource.upstreamResourceId,
      created_at: resource.createdAt,
    });
  }

  /** The owner's resource, or undefined (another user's resource is never found). */
  async find(ownerId: string, id: string): Promise<DigitalHuman | undefined> {
    const row = await this.repo.findOwned(ownerId, id);
    if (!row) return undefined;
    return {
      id: row.id,
      ownerId: row.owner_id,
      model: row.model,
      taskId: row.task_id,
      sourceHash: row.source_hash,
      video: JSON.parse(row.video) as DigitalHumanVideo,
      interactionOptimise: row.interaction_optimise === 0 ? 0 : 1,
      upstreamResourceId: row.upstream_resource_id,
      createdAt: row.created_at,
    };
  }

  /** The owner's resource, or 404 resource_not_found naming `param`. */
  async require(ownerId: string, id: string, param = 'resource_id'): Promise<DigitalHuman> {
    const resource = await this.find(ownerId, id);
    if (!resource) throw new ApiError('resource_not_found', `no digital-human resource ${id}`, param);
    return resource;
  }
}
