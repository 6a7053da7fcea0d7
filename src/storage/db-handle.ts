import type { Kysely } from 'kysely';
import type { Dialect } from './db.ts';
import type { Database } from './schema.ts';
import type { TransactionTail } from './transaction-batcher.ts';

/**
 * What a repository runs its queries on: the pool, or a transaction in progress (a Kysely
 * Transaction is a Kysely), so the same repository code writes inside someone else's transaction.
 */
export interface DbHandle {
  kysely: Kysely<Database>;
  dialect: Dialect;
  /** The tail of a batched transaction (transaction-batcher.ts): rows appended there are written before it commits. */
  tail?: TransactionTail;
}
