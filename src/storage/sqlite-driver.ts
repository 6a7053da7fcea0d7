import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

/**
 * The SQLite driver for this Node version. better-sqlite3 12 is a classic addon, compiled at
 * install for one Node ABI, and aborts the process on Node 24 when a collected statement
 * unregisters its cleanup hook; 13 is a prebuilt Node-API addon that runs on Node 22 and later
 * but not on Node 20. Both have the same API; 13 is installed under the name better-sqlite3-napi.
 */
const NODE_MAJOR = Number(process.versions.node.split('.')[0]);
const require = createRequire(import.meta.url);

const DRIVER = NODE_MAJOR >= 22 ? 'better-sqlite3-napi' : 'better-sqlite3';

export const SQLite = require(DRIVER) as typeof BetterSqlite3;
/** Where the driver's module is, for a worker thread to load the same one. */
export const SQLITE_DRIVER_PATH = require.resolve(DRIVER);
