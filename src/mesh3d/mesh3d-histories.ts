/**
 * 3D histories and materials: one of each per generation or edit. A history follows its task:
 * its end is written in the transaction that ends the task (an end handler). A task that ended
 * before its history was recorded (the history is written after the submit) is caught up when
 * the history is recorded, and again whenever it is read.
 */
import type { LiveModel } from '../catalog/catalog.ts';
import { ApiError } from '../core/errors.ts';
import { newId } from '../core/ids.ts';
import { isTerminal } from '../core/task-state.ts';
import type { Mesh3dRepo } from '../storage/repos/mesh3d-repo.ts';
import type { Mesh3dHistoryRow, TaskRow } from '../storage/schema.ts';
import type { EndHandler } from '../tasks/task-endings.ts';
import { parseResult, type TaskResult } from '../tasks/task-record.ts';
import type { TaskService } from '../tasks/task-service.ts';
import type { RigSpec } from '../endpoints/mesh3d-edit-rules.ts';
import { familyOf } from '../endpoints/mesh3d-family.ts';
import type { EditSource } from '../endpoints/mesh3d-edit-checks.ts';

/** The output type of the 3D models a task makes (the table's output of every 3D endpoint). */
const MESH3D_OUTPUT_TYPE = '3d';

/** Whether an endpoint is a 3D generation or edit (`mesh3d.generate.<kind>`, `mesh3d.edit.<op>`). */
export function isMesh3dEndpoint(endpoint: string): boolean {
  return endpoint.startsWith('mesh3d.');
}

/** The endpoint whose result names the parts later edits choose from. */
const SEGMENTATION_ENDPOINT = 'mesh3d.edit.segmentation';
/** Which result file an edit of the history works on, in order of preference. */
const MODEL_ROLES = ['model', 'pbr_model', 'base_model'];
/** Operations whose result keeps the source's parts when the engine names none. */
const KEEPS_PARTS = new Set(['completion', 'smart_lowpoly', 'texture', 'check_riggable', 'rig', 'retarget_animation', 'convert']);
/** Operations whose result keeps the source's rig when the engine reports none. */
const KEEPS_RIG = new Set(['retarget_animation', 'convert']);

export interface RecordedHistory {
  historyId: string;
  materialId: string;
}

export interface LoadedSource {
  row: Mesh3dHistoryRow;
  edit: EditSource;
}

function stringList(value: unknown): string[] | undefined {
  return Array.isArray(value) && value.every((v) => typeof v === 'string') ? value : undefined;
}

function rigOf(value: unknown): RigSpec | undefined {
  const rig = value as Partial<RigSpec> | undefined;
  return rig && typeof rig.rig_type === 'string' && typeof rig.spec === 'string' ? (rig as RigSpec) : undefined;
}

function parsed<T>(json: string | null): T | undefined {
  return json === null ? undefined : (JSON.parse(json) as T);
}

function historyNotFound(id: string, why: string): ApiError {
  return new ApiError('history_not_found', `no usable 3D history ${id}: ${why}`, 'history_id');
}

export class Mesh3dHistories {
  private readonly deps: { repo: Mesh3dRepo; tasks: TaskService; now?: () => number };

  constructor(deps: { repo: Mesh3dRepo; tasks: TaskService; now?: () => number }) {
    this.deps = deps;
  }

  /**
   * The end handler of the 3D endpoints: the task's history takes its end (status, and on success
   * the model file, parts, rig and upstream ids) in the transaction that writes it. The history
   * is looked up there, after the end's output assets, which it reads, were written. A
   * successful segmentation also names its parts in the task's record, the same ones the
   * history keeps, so a client can pick the part_names of the edits that follow.
   */
  readonly onEnd: EndHandler = async (ending) => {
    const parts = stringList(ending.result.extra?.parts);
    if (ending.status === 'success' && ending.task.endpoint === SEGMENTATION_ENDPOINT && parts) ending.result.part_names = parts;
    return {
      write: async (db) => {
        const repo = this.deps.repo.in(db);
        const history = await repo.findHistoryByTask(ending.task.id);
        if (history) await this.follow(repo, history, { ...ending.task, status: ending.status, result: JSON.stringify(ending.result) });
      },
    };
  };

  private now(): number {
    return (this.deps.now ?? Date.now)();
  }

  /** Records the history and the material of a submitted task; an edit's chain keeps its root generation's family. */
  async record(spec: { task: TaskRow; model: LiveModel; operation: string; source?: Mesh3dHistoryRow }): Promise<RecordedHistory> {
    const { task, model, source } = spec;
    const now = this.now();
    const history: Mesh3dHistoryRow = {
      id: newId('hist'),
      owner_id: task.owner_id,
      material_id: newId('mat'),
      task_id: task.id,
      source_history_id: source?.id ?? null,
      operation: spec.operation,
      model: model.alias,
      provider: model.providerCode,
      model_version: model.defaultRealModelName,
      base_provider: source?.base_provider ?? model.providerCode,
      base_model_version: source?.base_model_version ?? model.defaultRealModelName,
      status: task.status,
      model_ref: null,
      parts: null,
      rig: null,
      upstream: null,
      created_at: now,
      updated_at: now,
    };
    await this.deps.repo.insert(history, { id: history.material_id, owner_id: history.owner_id, history_id: history.id, task_id: task.id, created_at: now });
    // The task may have ended before the history existed, when its event found nothing to update.
    const latest = await this.deps.tasks.load(task.id);
    if (latest) await this.follow(this.deps.repo, history, latest);
    return { historyId: history.id, materialId: history.material_id };
  }

  /**
   * The owner's history as an edit source. Unknown, another user's, not (yet) successful or
   * without a model file: 404 history_not_found.
   */
  async source(ownerId: string, historyId: string): Promise<LoadedSource> {
    const stored = await this.deps.repo.findHistory(historyId);
    if (!stored || stored.owner_id !== ownerId) throw historyNotFound(historyId, 'it does not exist');
    const task = await this.deps.tasks.load(stored.task_id);
    const row = task ? await this.follow(this.deps.repo, stored, task) : stored;
    if (row.status !== 'success') throw historyNotFound(historyId, `its task is ${row.status}, not success`);
    if (!row.model_ref) throw historyNotFound(historyId, 'its result has no model file');
    const parts = parsed<string[]>(row.parts);
    const rig = parsed<RigSpec>(row.rig);
    const upstream = parsed<Record<string, unknown>>(row.upstream);
    return {
      row,
      edit: {
        id: row.id,
        taskId: row.task_id,
        model: row.model,
        operation: row.operation,
        modelRef: row.model_ref,
        base: familyOf({ providerCode: row.base_provider, defaultRealModelName: row.base_model_version }),
        taskInput: task ? (JSON.parse(task.input) as Record<string, unknown>) : {},
        ...(parts ? { parts } : {}),
        ...(rig ? { rig } : {}),
        ...(upstream ? { upstream } : {}),
      },
    };
  }

  /**
   * Brings the history up to its task: status, and on success the model file, parts, rig and
   * upstream ids. `repo` reads and writes through the transaction of the task's end, if any.
   */
  private async follow(repo: Mesh3dRepo, row: Mesh3dHistoryRow, task: TaskRow): Promise<Mesh3dHistoryRow> {
    if (row.status === task.status || isTerminal(row.status)) return row;
    let next: Mesh3dHistoryRow = { ...row, status: task.status, upstream: task.saved_state, updated_at: this.now() };
    if (task.status === 'success') next = { ...next, ...(await this.resultOf(repo, row, task)) };
    await repo.updateResult(row.id, {
      status: next.status,
      model_ref: next.model_ref,
      parts: next.parts,
      rig: next.rig,
      upstream: next.upstream,
      updated_at: next.updated_at,
    });
    return next;
  }

  private async resultOf(repo: Mesh3dRepo, row: Mesh3dHistoryRow, task: TaskRow): Promise<Pick<Mesh3dHistoryRow, 'model_ref' | 'parts' | 'rig'>> {
    const result = parseResult(task);
    const extra = result.extra ?? {};
    const source = row.source_history_id ? await repo.findHistory(row.source_history_id) : undefined;
    const input = JSON.parse(task.input) as Record<string, unknown>;
    const parts = stringList(extra.parts) ?? (KEEPS_PARTS.has(row.operation) ? parsed<string[]>(source?.parts ?? null) : undefined);
    const requestedRig = row.operation === 'rig' ? rigOf({ rig_type: input.rig_type, spec: input.spec }) : undefined;
    const rig = rigOf(extra.rig) ?? requestedRig ?? (KEEPS_RIG.has(row.operation) ? parsed<RigSpec>(source?.rig ?? null) : undefined);
    return {
      // A result without a model file of its own (a riggability check) stands for its source's model.
      model_ref: (await this.modelFileOf(repo, task, result)) ?? source?.model_ref ?? null,
      parts: parts ? JSON.stringify(parts) : null,
      rig: rig ? JSON.stringify(rig) : null,
    };
  }

  /** The content hash of the task's model output, found among the output assets the task registered. */
  private async modelFileOf(repo: Mesh3dRepo, task: TaskRow, result: TaskResult): Promise<string | undefined> {
    const models = (result.output_content ?? []).filter((o) => o.type === MESH3D_OUTPUT_TYPE && o.filename);
    const chosen = MODEL_ROLES.map((role) => models.find((o) => o.role === role)).find((o) => o !== undefined) ?? models[0];
    if (!chosen) return undefined;
    const assets = await repo.taskOutputAssets(task.owner_id, task.id);
    return assets.find((a) => (JSON.parse(a.systemMetadata) as { filename?: string }).filename === chosen.filename)?.hash;
  }
}
