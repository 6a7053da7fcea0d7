import type { SelectQueryBuilder } from 'kysely';

/**
 * Whether a claim's candidates query finds a row, asked before the claim's UPDATE on SQLite. An
 * UPDATE takes SQLite's write lock whatever it changes, so a poll that finds nothing to claim would
 * otherwise queue behind the ledger writer thread's transaction (busy_timeout: sleeps of one
 * millisecond and more, the event loop stopped all the while); a read waits for no writer (WAL).
 */
export async function anyCandidate<DB, TB extends keyof DB, O>(candidates: SelectQueryBuilder<DB, TB, O>): Promise<boolean> {
  return (await candidates.executeTakeFirst()) !== undefined;
}
