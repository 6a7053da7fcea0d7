import type { Kysely } from 'kysely';

/**
 * 3D histories and materials: every generation and edit records a history,
 * which later edits name as their source, and the material its result belongs to.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('mesh3d_histories')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('owner_id', 'text', (c) => c.notNull())
    .addColumn('material_id', 'text', (c) => c.notNull())
    .addColumn('task_id', 'text', (c) => c.notNull())
    .addColumn('source_history_id', 'text')
    .addColumn('operation', 'text', (c) => c.notNull())
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('model_version', 'text', (c) => c.notNull())
    .addColumn('base_provider', 'text', (c) => c.notNull())
    .addColumn('base_model_version', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('model_ref', 'text')
    .addColumn('parts', 'text')
    .addColumn('rig', 'text')
    .addColumn('upstream', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('mesh3d_histories_task').on('mesh3d_histories').column('task_id').unique().execute();
  await db.schema.createIndex('mesh3d_histories_owner_created').on('mesh3d_histories').columns(['owner_id', 'created_at']).execute();

  await db.schema
    .createTable('mesh3d_materials')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('owner_id', 'text', (c) => c.notNull())
    .addColumn('history_id', 'text', (c) => c.notNull())
    .addColumn('task_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('mesh3d_materials_owner_created').on('mesh3d_materials').columns(['owner_id', 'created_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('mesh3d_materials').execute();
  await db.schema.dropTable('mesh3d_histories').execute();
}
