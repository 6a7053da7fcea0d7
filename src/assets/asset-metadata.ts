import type { AssetMetaRow } from '../storage/schema.ts';
import { ApiError, type ErrorCode } from '../core/errors.ts';
import { metaValueOf } from '../storage/meta-value.ts';

export type JsonObject = Record<string, unknown>;

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Parses a JSON object given as text (multipart field, query parameter). */
export function parseJsonObject(text: string, param: string, code: ErrorCode = 'INVALID_BODY'): JsonObject {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new ApiError(code, `${param} must be JSON: ${(err as Error).message}`, param);
  }
  if (!isJsonObject(parsed)) throw new ApiError(code, `${param} must be a JSON object`, param);
  return parsed;
}

/** System metadata merged with user metadata; user keys win. */
export function mergeMetadata(system: JsonObject, user: JsonObject): JsonObject {
  return { ...system, ...user };
}

/**
 * Rows of the merged metadata of a record: one per scalar, one per array element (with its
 * position). Null values are not stored, so filtering on `null` means "key absent".
 */
export function projectMetadata(refId: string, merged: JsonObject): AssetMetaRow[] {
  const rows: AssetMetaRow[] = [];
  for (const [key, value] of Object.entries(merged)) {
    if (value === null || value === undefined) continue;
    const items = Array.isArray(value) ? value : [value];
    items.forEach((item, ordinal) => {
      if (item === null || item === undefined) return;
      rows.push({ ref_id: refId, key, ordinal, ...metaValueOf(item) });
    });
  }
  return rows;
}
