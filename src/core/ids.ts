import { randomBytes, randomUUID } from 'node:crypto';

/** The time part of the ids of the current millisecond (ids are made far more often than once per millisecond). */
let prefixAt = -1;
let prefix = '';

/**
 * A new unique id that sorts by the time it was made: a UUIDv7 (48 bits of milliseconds, then
 * the random bits of a v4 from Node's entropy cache, which makes one in a fraction of the time a
 * fresh read of random bytes takes). Rows keyed by such ids go at the end of their primary-key
 * index; random ids would land on a different index page each, which a write rewrites whole.
 */
export function newUuid(): string {
  const now = Date.now();
  if (now !== prefixAt) {
    const hex = now.toString(16).padStart(12, '0');
    prefix = `${hex.slice(0, 8)}-${hex.slice(8)}-7`;
    prefixAt = now;
  }
  // A v4 is xxxxxxxx-xxxx-4xxx-…: its version digit gives way to the 7.
  return prefix + randomUUID().slice(15);
}

/** A new opaque id with a readable prefix, e.g. `tok_019ac3…`, ordered by creation time as newUuid's. */
export function newId(prefix: string): string {
  return `${prefix}_${newUuid().replaceAll('-', '')}`;
}

/** Unguessable URL-safe secret of the given entropy. */
export function newSecret(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}
