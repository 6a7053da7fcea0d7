import { CompiledQuery, PostgresAdapter, type Insertable, type Kysely } from 'kysely';
import type { Database } from '../schema.ts';

/** Rows per insert statement, well under both databases' limits on bound parameters. */
export const ROWS_PER_INSERT = 500;

/** Statement texts kept per table; rows of one shape at one count reuse theirs. */
const TEXTS_PER_TABLE = 200;

/**
 * Inserts rows into `table` in as few statements as ROWS_PER_INSERT allows, on the pool or in a
 * transaction (a transaction's tail writer, TransactionTail.append).
 *
 * The statement is written here rather than by Kysely's insert builder, which makes and compiles a
 * node per value: for the rows of a task pipeline's transactions that was 4% of the gateway's CPU.
 * It means the same as the builder's: the columns are those any row gives a value (undefined is
 * no value), in the order they first appear, and a row without one of them takes its default.
 * The rows are plain values (Insertable), never SQL expressions.
 */
export function insertsInto<T extends keyof Database & string>(table: T): (db: Kysely<Database>, rows: readonly Insertable<Database[T]>[]) => Promise<void> {
  // The same text for the same shape: PostgreSQL's statement names are looked up by it (db.ts), and a string's hash is computed once.
  const texts = new Map<string, string>();
  return async (db, rows) => {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) {
      const chunk = rows.slice(i, i + ROWS_PER_INSERT) as readonly Record<string, unknown>[];
      const columns = columnsOf(chunk);
      const { parameters, whole } = parametersOf(chunk, columns);
      const key = `${postgres ? 'p' : 's'}${chunk.length}:${columns.join(',')}`;
      let text = whole ? texts.get(key) : undefined;
      if (text === undefined) {
        text = insertText(table, columns, chunk, postgres, 1);
        if (whole) {
          if (texts.size >= TEXTS_PER_TABLE) texts.delete(texts.keys().next().value!);
          texts.set(key, text);
        }
      }
      await db.executeQuery(CompiledQuery.raw(text, parameters));
    }
  };
}

/**
 * An insert of `rows` into `table` (the same statement as insertsInto's) to be part of a larger
 * one: its PostgreSQL placeholders are numbered from `firstParameter`.
 */
export function insertOf(table: keyof Database & string, rows: readonly object[], postgres: boolean, firstParameter: number): { text: string; parameters: unknown[] } {
  const values = rows as readonly Record<string, unknown>[];
  const columns = columnsOf(values);
  return { text: insertText(table, columns, values, postgres, firstParameter), parameters: parametersOf(values, columns).parameters };
}

/** The rows' values under `columns`, row by row; `whole` when no row leaves a column out. */
function parametersOf(rows: readonly Record<string, unknown>[], columns: readonly string[]): { parameters: unknown[]; whole: boolean } {
  const parameters: unknown[] = [];
  let whole = true;
  for (const row of rows) {
    for (const column of columns) {
      const value = row[column];
      if (value === undefined) whole = false;
      else parameters.push(value);
    }
  }
  return { parameters, whole };
}

function columnsOf(rows: readonly Record<string, unknown>[]): string[] {
  const columns: string[] = [];
  const seen = new Set<string>();
  for (const row of rows) {
    for (const column in row) {
      if (row[column] !== undefined && !seen.has(column)) {
        seen.add(column);
        columns.push(column);
      }
    }
  }
  return columns;
}

function quoted(identifier: string): string {
  return `"${identifier.replaceAll('"', '""')}"`;
}

/**
 * `insert into "t" ("a", "b") values ($1, $2), ($3, default)`. SQLite's placeholders are `?`, and
 * it has no `default` in a row of values: as Kysely does, a missing value is null there.
 */
function insertText(table: string, columns: readonly string[], rows: readonly Record<string, unknown>[], postgres: boolean, firstParameter: number): string {
  let n = firstParameter - 1;
  const missing = postgres ? 'default' : 'null';
  const values = rows.map((row) => `(${columns.map((column) => (row[column] === undefined ? missing : postgres ? `$${++n}` : '?')).join(', ')})`);
  return `insert into ${quoted(table)} (${columns.map(quoted).join(', ')}) values ${values.join(', ')}`;
}
