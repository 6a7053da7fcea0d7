import { TERMINAL_STATUSES } from '../../core/task-state.ts';
import type { DbHandle } from '../db-handle.ts';
import type { Mesh3dHistoryRow, Mesh3dMaterialRow } from '../schema.ts';

export type HistoryResultPatch = Pick<Mesh3dHistoryRow, 'status' | 'model_ref' | 'parts' | 'rig' | 'upstream' | 'updated_at'>;

/** An output file a task registered as its owner's asset (tag output, job_id = task id). */
export interface TaskOutputAsset {
  hash: string;
  /** JSON system metadata; its `filename` is the file name the task gave the output. */
  systemMetadata: string;
}

/** SQL for 3D histories and materials. */
export class Mesh3dRepo {
  private readonly db: DbHandle;

  constructor(db: DbHandle) {
    this.db = db;
  }

  /** The same queries through `db`, a transaction in progress. */
  in(db: DbHandle): Mesh3dRepo {
    return new Mesh3dRepo(db);
  }

  /** Stores a history and its material together. */
  async insert(history: Mesh3dHistoryRow, material: Mesh3dMaterialRow): Promise<void> {
    await this.db.kysely.transaction().execute(async (trx) => {
      await trx.insertInto('mesh3d_histories').values(history).execute();
      await trx.insertInto('mesh3d_materials').values(material).execute();
    });
  }

  async findHistory(id: string): Promise<Mesh3dHistoryRow | undefined> {
    return this.db.kysely.selectFrom('mesh3d_histories').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async findHistoryByTask(taskId: string): Promise<Mesh3dHistoryRow | undefined> {
    return this.db.kysely.selectFrom('mesh3d_histories').selectAll().where('task_id', '=', taskId).executeTakeFirst();
  }

  /** Records the task's newer status (and what it ended with); an ended history is never changed again. */
  async updateResult(id: string, patch: HistoryResultPatch): Promise<void> {
    await this.db.kysely
      .updateTable('mesh3d_histories')
      .set(patch)
      .where('id', '=', id)
      .where('status', 'not in', [...TERMINAL_STATUSES])
      .execute();
  }

  /** The live output assets of the owner's task, oldest first. */
  async taskOutputAssets(ownerId: string, taskId: string): Promise<TaskOutputAsset[]> {
    const rows = await this.db.kysely
      .selectFrom('asset_refs')
      .select(['asset_hash', 'system_metadata'])
      .where('owner_id', '=', ownerId)
      .where('job_id', '=', taskId)
      .where('deleted_at', 'is', null)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map((r) => ({ hash: r.asset_hash, systemMetadata: r.system_metadata }));
  }
}
