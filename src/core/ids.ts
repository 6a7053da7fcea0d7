import { randomBytes } from 'node:crypto';
import { v7 as uuidV7 } from 'uuid';

/**
 * A new unique id that sorts by the time it was made (a UUIDv7: milliseconds, then random bits).
 * Rows keyed by such ids go at the end of their primary-key index; random ids would land on a
 * different index page each, which a write then has to rewrite whole.
 */
export function newUuid(): string {
  return uuidV7();
}

/** A new opaque id with a readable prefix, e.g. `tok_019ac3…`, ordered by creation time as newUuid's. */
export function newId(prefix: string): string {
  return `${prefix}_${uuidV7().replaceAll('-', '')}`;
}

/** Unguessable URL-safe secret of the given entropy. */
export function newSecret(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}
