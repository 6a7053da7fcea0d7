import { randomBytes, randomUUID } from 'node:crypto';

/** A new opaque id with a readable prefix, e.g. `tok_3f9c…`. */
export function newId(prefix: string): string {
  return `${prefix}_${randomUUID().replaceAll('-', '')}`;
}

/** Unguessable URL-safe secret of the given entropy. */
export function newSecret(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}
