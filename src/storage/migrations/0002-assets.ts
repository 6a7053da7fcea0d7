import type { Kysely } from 'kysely';

/**
 * The asset registry: content stored once per blake3 hash, records (references) owned by a
 * user and soft-deleted, their tags, and the merged metadata projected into rows for filtering.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('asset_contents')
    .addColumn('hash', 'text', (c) => c.primaryKey())
    .addColumn('size', 'bigint', (c) => c.notNull())
    .addColumn('blob_key', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('asset_refs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('owner_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('asset_hash', 'text', (c) => c.notNull().references('asset_contents.hash'))
    .addColumn('size', 'bigint', (c) => c.notNull())
    .addColumn('mime_type', 'text')
    .addColumn('file_name', 'text', (c) => c.notNull())
    .addColumn('subfolder', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('preview_id', 'text')
    .addColumn('user_metadata', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('system_metadata', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('job_id', 'text')
    .addColumn('is_immutable', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('deleted_at', 'bigint')
    .execute();
  await db.schema.createIndex('asset_refs_owner').on('asset_refs').columns(['owner_id', 'deleted_at', 'created_at']).execute();
  await db.schema.createIndex('asset_refs_hash').on('asset_refs').columns(['asset_hash', 'owner_id']).execute();
  await db.schema.createIndex('asset_refs_location').on('asset_refs').columns(['owner_id', 'file_name', 'subfolder']).execute();

  await db.schema
    .createTable('asset_tags')
    .addColumn('ref_id', 'text', (c) => c.notNull().references('asset_refs.id').onDelete('cascade'))
    .addColumn('tag', 'text', (c) => c.notNull())
    // `manual` (set by a client) or `automatic` (e.g. `missing`, set by the service).
    .addColumn('origin', 'text', (c) => c.notNull())
    .addColumn('added_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('asset_tags_pk', ['ref_id', 'tag'])
    .execute();
  await db.schema.createIndex('asset_tags_tag').on('asset_tags').columns(['tag', 'ref_id']).execute();

  await db.schema
    .createTable('asset_meta')
    .addColumn('ref_id', 'text', (c) => c.notNull().references('asset_refs.id').onDelete('cascade'))
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('ordinal', 'integer', (c) => c.notNull())
    .addColumn('val_str', 'text')
    .addColumn('val_num', 'double precision')
    .addColumn('val_bool', 'integer')
    .addColumn('val_json', 'text')
    .addPrimaryKeyConstraint('asset_meta_pk', ['ref_id', 'key', 'ordinal'])
    .execute();
  await db.schema.createIndex('asset_meta_str').on('asset_meta').columns(['key', 'val_str']).execute();
  await db.schema.createIndex('asset_meta_num').on('asset_meta').columns(['key', 'val_num']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['asset_meta', 'asset_tags', 'asset_refs', 'asset_contents']) await db.schema.dropTable(table).execute();
}
