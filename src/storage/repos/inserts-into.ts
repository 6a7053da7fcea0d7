import type { Insertable, Kysely } from 'kysely';
import type { Database } from '../schema.ts';

/** Rows per insert statement, well under both databases' limits on bound parameters. */
export const ROWS_PER_INSERT = 500;

/**
 * Inserts rows into `table` in as few statements as ROWS_PER_INSERT allows, on the pool or in a
 * transaction (a transaction's tail writer, TransactionTail.append).
 */
export function insertsInto<T extends keyof Database & string>(table: T): (db: Kysely<Database>, rows: readonly Insertable<Database[T]>[]) => Promise<void> {
  return async (db, rows) => {
    for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) await db.insertInto(table).values(rows.slice(i, i + ROWS_PER_INSERT) as never).execute();
  };
}
