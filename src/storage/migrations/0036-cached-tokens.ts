import type { Kysely } from 'kysely';

const TABLES = ['usage_ledger', 'usage_daily'] as const;

/**
 * Input tokens an upstream read from its prompt cache and wrote to it, priced apart
 * (limits/pricing.ts); `input_tokens` of rows written from now on holds the uncached input only.
 * Earlier rows read as none cached.
 */
export async function up(db: Kysely<any>): Promise<void> {
  for (const table of TABLES) {
    await db.schema.alterTable(table).addColumn('cached_input_tokens', 'bigint', (c) => c.notNull().defaultTo(0)).execute();
    await db.schema.alterTable(table).addColumn('cache_write_tokens', 'bigint', (c) => c.notNull().defaultTo(0)).execute();
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of TABLES) {
    await db.schema.alterTable(table).dropColumn('cache_write_tokens').execute();
    await db.schema.alterTable(table).dropColumn('cached_input_tokens').execute();
  }
}
