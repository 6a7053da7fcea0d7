/**
 * The /v1/mesh3d calls: validate against the model and the source history,
 * submit an asynchronous task through the generation pipeline, record its history and material.
 */
import type { AssetService } from '../assets/asset-service.ts';
import type { LiveModel, MeshEditOperation } from '../catalog/catalog.ts';
import { ApiError } from '../core/errors.ts';
import type { FileService } from '../files/file-service.ts';
import { Mesh3dRepo } from '../storage/repos/mesh3d-repo.ts';
import type { Db } from '../storage/db.ts';
import type { TaskInput } from '../providers/spec.ts';
import type { TaskRow } from '../storage/schema.ts';
import type { GenerationCaller, GenerationService } from '../tasks/generation-service.ts';
import type { TaskService } from '../tasks/task-service.ts';
import type { FileSourceLookup } from '../endpoints/mesh3d-image-inputs.ts';
import { Mesh3dHistories, isMesh3dEndpoint } from './mesh3d-histories.ts';
import type { EditOperation, GenerationBody, GenerationKind, GenerationRequestBody } from '../endpoints/mesh3d.ts';
import { editOperationOf, validateEdit } from '../endpoints/mesh3d-edit-checks.ts';
import { GENERATION_CAPABILITY, validateGeneration } from '../endpoints/mesh3d-generation-checks.ts';

export interface GenerationReply {
  material_id: string;
  task_id: string;
  mesh3d_history_id: string;
}

export interface EditReply {
  material_id: string;
  task_id: string;
  history_id: string;
}

export class Mesh3dService {
  private readonly histories: Mesh3dHistories;
  private readonly files: FileSourceLookup;

  private readonly deps: { db: Db; generations: GenerationService; tasks: TaskService; files: FileService; assets: AssetService };

  constructor(
    deps: { db: Db; generations: GenerationService; tasks: TaskService; files: FileService; assets: AssetService },
  ) {
    this.deps = deps;
    this.histories = new Mesh3dHistories({ repo: new Mesh3dRepo(deps.db), tasks: deps.tasks });
    deps.tasks.onEnd(isMesh3dEndpoint, this.histories.onEnd);
    this.files = {
      checkCallerUrl: (url, param) => deps.generations.checkCallerUrl(url, param),
      fileUrl: (id, fileName) => deps.files.urlOf(id, fileName),
      hasAssetHash: (ownerId, hash) => deps.assets.records.hashExists(ownerId, hash),
      assetHash: async (ownerId, assetId) => {
        try {
          return (await deps.assets.records.get(ownerId, assetId)).hash;
        } catch (err) {
          if (err instanceof ApiError && err.status === 404) return undefined;
          throw err;
        }
      },
    };
  }

  /** A generation; `model` undefined: the catalog's default for the kind. Answers the reply and the submitted task. */
  async generate(kind: GenerationKind, body: GenerationRequestBody, caller: GenerationCaller): Promise<{ reply: GenerationReply; task: TaskRow }> {
    const capability = GENERATION_CAPABILITY[kind];
    const model = this.deps.generations.resolveModel(body.model, [capability]);
    const input = await validateGeneration(kind, { ...body, model: model.alias } as GenerationBody, model, { ownerId: caller.ownerId, files: this.files });
    const task = await this.submit(caller, { endpoint: `mesh3d.generate.${kind}`, input } as Extract<TaskInput, { endpoint: `mesh3d.generate.${string}` }>, model);
    const recorded = await this.histories.record({ task, model, operation: kind });
    return { reply: { material_id: recorded.materialId, task_id: task.id, mesh3d_history_id: recorded.historyId }, task };
  }

  async edit(op: EditOperation, body: Record<string, unknown> & { history_id: string; model?: string }, caller: GenerationCaller): Promise<EditReply> {
    // The model is checked before the source, so a wrong alias is named even for an unknown history.
    const named = body.model !== undefined ? this.editModel(body.model, op) : undefined;
    const source = await this.histories.source(caller.ownerId, body.history_id);
    // Retargeting without a model uses the rig's.
    const { model, operation } = named ?? this.editModel(source.edit.model, op);
    const input = await validateEdit(op, body, model, operation, source.edit, { ownerId: caller.ownerId, files: this.files });
    const task = await this.submit(caller, { endpoint: `mesh3d.edit.${op}`, input } as Extract<TaskInput, { endpoint: `mesh3d.edit.${string}` }>, model);
    const recorded = await this.histories.record({ task, model, operation: op, source: source.row });
    return { material_id: recorded.materialId, task_id: task.id, history_id: recorded.historyId };
  }

  private editModel(alias: string, op: EditOperation): { model: LiveModel; operation: MeshEditOperation } {
    const model = this.deps.generations.resolveModel(alias, ['mesh_edit']);
    return { model, operation: editOperationOf(model, op) };
  }

  private async submit(caller: GenerationCaller, job: Extract<TaskInput, { endpoint: `mesh3d.${string}` }>, model: LiveModel) {
    // Every 3D call is asynchronous: the task is queued and its id answered.
    const outcome = await this.deps.generations.generate({ ...caller, ...job, model }, 'async');
    return outcome.task;
  }
}
