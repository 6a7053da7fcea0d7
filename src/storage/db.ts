import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import type { Logger } from 'pino';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, type MigrationProvider, type SqliteDatabase } from 'kysely';
import type { Database } from './schema.ts';
import { migrations } from './migrations/index.ts';
import { asDatabaseUnavailable } from './database-unavailable.ts';
import { SQLite } from './sqlite-driver.ts';
import { sqliteBackgroundWriter, type BackgroundWriter } from './background-writer.ts';

export type Dialect = 'sqlite' | 'postgres';

export interface Db {
  kysely: Kysely<Database>;
  dialect: Dialect;
  /** SQLite: writes no caller waits on, run off the event loop (PostgreSQL's driver is asynchronous already). */
  background?: BackgroundWriter;
  close(): Promise<void>;
}

export interface OpenDbOptions {
  /** postgres://… selects PostgreSQL; otherwise embedded SQLite under dataDir. */
  databaseUrl?: string;
  dataDir: string;
  /** PostgreSQL schema to use (tests isolate themselves in one); created when missing. */
  pgSchema?: string;
  poolSize?: number;
  /**
   * SQLite: the serving process holds DATA_DIR alone, and a second one is refused. Nothing else
   * can run tasks from the store then, so every task lease found in it is a dead process's.
   */
  exclusive?: boolean;
  /** Told of PostgreSQL connections the server dropped (an outage, a restart); the pool opens new ones on demand. */
  logger?: Logger;
}

const INT8_OID = 20;
const NUMERIC_OID = 1700;
const UNIQUE_VIOLATION = '23505';

/** Opens the store and brings its schema up to date. */
export async function openDb(opts: OpenDbOptions): Promise<Db> {
  const db = opts.databaseUrl ? await openPostgres(opts.databaseUrl, opts) : openSqlite(opts.dataDir, opts.exclusive ?? false);
  await migrateToLatest(db.kysely, opts.databaseUrl ? opts.pgSchema : undefined);
  return db;
}

function openSqlite(dataDir: string, exclusive: boolean): Db {
  fs.mkdirSync(dataDir, { recursive: true });
  const lock = exclusive ? lockDataDir(dataDir) : undefined;
  const file = path.join(dataDir, 'gengate.db');
  const database = new SQLite(file);
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = NORMAL');
  database.pragma('busy_timeout = 5000');
  database.pragma('foreign_keys = ON');
  // SQLite's own lower() folds ASCII only; case-insensitive search must fold like PostgreSQL's.
  database.function('lower', { deterministic: true }, (text: unknown) => (typeof text === 'string' ? text.toLowerCase() : text));
  const kysely = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(database) }) });
  const background = sqliteBackgroundWriter(file);
  return {
    kysely,
    dialect: 'sqlite',
    background,
    close: async () => {
      await background.close();
      await kysely.destroy();
      lock?.close();
    },
  };
}

/**
 * An exclusive lock on DATA_DIR/gengate.lock, a SQLite file written once in exclusive locking
 * mode: the operating system drops it when the process ends, even killed, so it never outlives
 * its holder. The data file itself stays open to short-lived commands (`token create`).
 */
function lockDataDir(dataDir: string): BetterSqlite3.Database {
  const lock = new SQLite(path.join(dataDir, 'gengate.lock'), { timeout: 0 });
  lock.pragma('locking_mode = EXCLUSIVE');
  try {
    lock.exec('BEGIN EXCLUSIVE; COMMIT');
  } catch (err) {
    lock.close();
    if ((err as { code?: string }).code !== 'SQLITE_BUSY') throw err;
    throw new Error(`DATA_DIR ${dataDir} is in use by another gengate process; the embedded SQLite store serves one process (several instances share PostgreSQL through DATABASE_URL)`);
  }
  return lock;
}

const STATEMENT_CACHE_SIZE = 500;

/**
 * Kysely prepares every query anew; compiling the SQL is a large part of a small query's cost,
 * so prepared statements are kept per SQL text (the queries are parameterised, so the set of
 * texts is small) and evicted oldest-first beyond the cache size.
 */
function withStatementCache(database: BetterSqlite3.Database): SqliteDatabase {
  const cache = new Map<string, BetterSqlite3.Statement>();
  return {
    close: () => database.close(),
    prepare: (sql: string) => {
      let statement = cache.get(sql);
      if (statement) return statement;
      // Kysely begins deferred transactions. One that reads and then writes fails at once with
      // SQLITE_BUSY_SNAPSHOT (no busy wait) when another connection (the background writer, another
      // process) committed between its read and its write; begun immediate, it waits its turn instead.
      statement = database.prepare(sql === 'begin' ? 'begin immediate' : sql);
      cache.set(sql, statement);
      if (cache.size > STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!);
      return statement;
    },
  };
}

async function openPostgres(url: string, opts: OpenDbOptions): Promise<Db> {
  // Loaded only here: an embedded (SQLite) gateway does not keep the driver in memory.
  const { default: pg } = await import('pg');
  // Millisecond timestamps are int8; read them as numbers like SQLite does.
  const types = {
    getTypeParser: (oid: number, format?: 'text' | 'binary') =>
      oid === INT8_OID || oid === NUMERIC_OID ? Number : pg.types.getTypeParser(oid, format as 'text'),
  };
  const schema = opts.pgSchema;
  if (schema) {
    const admin = new pg.Client({ connectionString: url });
    // A connection lost meanwhile fails the query awaited below; unheard, its error event would end the process.
    admin.on('error', () => undefined);
    await admin.connect();
    try {
      await admin.query(`CREATE SCHEMA IF NOT EXISTS "${schema.replaceAll('"', '')}"`);
    } catch (err) {
      // IF NOT EXISTS does not cover another session creating the schema at the same moment (two
      // instances starting at once): that one fails on the catalog's unique index, and the schema is there.
      if ((err as { code?: string }).code !== UNIQUE_VIOLATION) throw err;
    } finally {
      await admin.end();
    }
  }
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.poolSize ?? 10,
    types,
    ...(schema ? { options: `-c search_path="${schema.replaceAll('"', '')}"` } : {}),
  });
  const names = new Map<string, string>();
  // A connection the server drops (PostgreSQL stopped, restarted or out of reach) emits an error
  // event on its client, and on the pool too while idle; an error event nobody listens to ends
  // the process. The queries in flight fail on their own, the pool discards the dead connection
  // and opens new ones on demand, so the process serves again once the server is back.
  pool.on('error', () => undefined); // the client's own listener has told it
  pool.on('connect', (client) => {
    client.on('error', (err) => opts.logger?.warn({ err }, 'PostgreSQL connection lost'));
    prepareStatements(client, names);
    raiseUnavailable(client);
  });
  const connect = () => pool.connect().catch((err: unknown) => Promise.reject(asDatabaseUnavailable(err)));
  const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool: { connect, end: () => pool.end() } }) });
  return { kysely, dialect: 'postgres', close: () => kysely.destroy() };
}

/** Distinct statement texts given a name; multi-row inserts of every size beyond them stay unnamed. */
const NAMED_STATEMENTS_MAX = 500;

/**
 * PostgreSQL parses and plans an unnamed statement on every call; a named one once per
 * connection. The queries are parameterised, so their texts are few: each gets a name (from a
 * hash of its text, the same on every connection), shared in `names` by the pool's connections.
 */
function prepareStatements(client: { query: (...args: never[]) => unknown }, names: Map<string, string>): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  client.query = ((text: unknown, values?: unknown, ...rest: unknown[]) => {
    if (typeof text === 'string' && Array.isArray(values) && values.length > 0 && rest.length === 0) {
      let name = names.get(text);
      if (name === undefined && names.size < NAMED_STATEMENTS_MAX) {
        name = `g${createHash('sha1').update(text).digest('hex').slice(0, 24)}`;
        names.set(text, name);
      }
      if (name !== undefined) return query({ name, text, values });
    }
    return query(text, values, ...rest);
  }) as typeof client.query;
}

/** A query that fails because the connection is gone rejects with a DatabaseUnavailableError. */
function raiseUnavailable(client: { query: (...args: never[]) => unknown }): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  client.query = ((...args: unknown[]) => {
    const result = query(...args);
    return result instanceof Promise ? result.catch((err: unknown) => Promise.reject(asDatabaseUnavailable(err))) : result;
  }) as typeof client.query;
}

const provider: MigrationProvider = { getMigrations: async () => migrations };

async function migrateToLatest(kysely: Kysely<Database>, schema: string | undefined): Promise<void> {
  // The migration bookkeeping lives beside the tables, so schemas sharing a database stay independent.
  // Unordered: a store created before a lower-numbered migration was added still takes it on upgrade.
  const migrator = new Migrator({ db: kysely, provider, allowUnorderedMigrations: true, ...(schema ? { migrationTableSchema: schema } : {}) });
  for (let attempt = 1; ; attempt++) {
    const { error, results } = await migrator.migrateToLatest();
    if (!error) return;
    const message = (error as Error).message;
    // The migrator looks for its tables among every schema's tables; another store's schema or
    // table dropped meanwhile fails that look ("schema … does not exist", "relation
    // "<schema>.<table>" does not exist") and says nothing of ours: look again.
    const gone = /^(?:schema "([^"]*)"|relation "([^".]*)\.[^"]*") does not exist$/.exec(message);
    const otherStoreGone = gone !== null && (gone[1] ?? gone[2]) !== schema;
    // Two instances starting at once both create the migrator's tables; the one that loses looks again.
    const createdMeanwhile = message.includes('pg_type_typname_nsp_index');
    if ((otherStoreGone || createdMeanwhile) && attempt < 5) continue;
    const failed = results?.find((r) => r.status === 'Error');
    throw new Error(`database migration ${failed?.migrationName ?? ''} failed: ${message}`);
  }
}
