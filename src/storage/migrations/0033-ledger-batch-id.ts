import type { Kysely } from 'kysely';

/** The batch a ledger row's call ran for (GET /admin/requests?batch_id=); null outside batches. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('usage_ledger').addColumn('batch_id', 'text').execute();
  await db.schema.createIndex('usage_ledger_batch').on('usage_ledger').columns(['batch_id', 'created_at', 'id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('usage_ledger_batch').execute();
  await db.schema.alterTable('usage_ledger').dropColumn('batch_id').execute();
}
