import type { Insertable } from 'kysely';
import type { Database } from '../schema.ts';
import type { TailWrite } from '../transaction-batcher.ts';

/** Rows per insert of a tail writer, well under both databases' limits on bound parameters. */
const ROWS_PER_INSERT = 500;

/** A tail writer that inserts its rows into `table`, as few statements as ROWS_PER_INSERT allows. */
export function insertsInto<T extends keyof Database & string>(table: T): TailWrite<Insertable<Database[T]>> {
  return async (trx, rows) => {
    for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) await trx.insertInto(table).values(rows.slice(i, i + ROWS_PER_INSERT) as never).execute();
  };
}
