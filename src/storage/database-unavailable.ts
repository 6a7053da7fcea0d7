/** Socket errors of a server that is down or out of reach. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
/**
 * PostgreSQL's connection exceptions (class 08), a server shutting down (57P01 admin_shutdown,
 * 57P02 crash_shutdown) or starting (57P03 cannot_connect_now), and a server with no connection
 * left to give (53300).
 */
const SERVER_CODES = new Set(['08000', '08001', '08003', '08004', '08006', '57P01', '57P02', '57P03', '53300']);
/** What the pg driver says, without a code, of a connection that died or was never made. */
const DRIVER_MESSAGES = /^Connection terminated unexpectedly$|^Connection terminated due to connection timeout$|is not queryable$|^timeout exceeded when trying to connect$/;

/**
 * The database cannot be reached now (refused or lost connection, a server shutting down or
 * starting): a caller is told to come back (503) and background work tries again later, rather
 * than anything failing for good. Only the store's driver raises it, so a refused connection to
 * anything else is never taken for it.
 */
export class DatabaseUnavailableError extends Error {
  constructor(cause: Error) {
    super('the database is unavailable', { cause });
    this.name = 'DatabaseUnavailableError';
  }
}

function lostConnection(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const { code, message, errors } = err as { code?: unknown; message?: unknown; errors?: unknown };
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || SERVER_CODES.has(code))) return true;
  if (typeof message === 'string' && DRIVER_MESSAGES.test(message)) return true;
  // A connection tried on several addresses (IPv6 and IPv4) fails with all of them at once.
  return Array.isArray(errors) && errors.length > 0 && errors.every(lostConnection);
}

/** A driver's error as the store raises it: a DatabaseUnavailableError when it means the database is out of reach. */
export function asDatabaseUnavailable(err: unknown): unknown {
  return lostConnection(err) ? new DatabaseUnavailableError(err as Error) : err;
}

/** Whether an error (or what it was caused by) means the database is out of reach for now. */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e = err; e instanceof Error; e = e.cause) if (e instanceof DatabaseUnavailableError) return true;
  return false;
}
