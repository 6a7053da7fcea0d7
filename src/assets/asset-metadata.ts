import type { AssetMetaRow } from '../storage/schema.ts';
import { ApiError, type ErrorCode } from '../core/errors.ts';

export type JsonObject = Record<string, unknown>;

/** JSON with object keys sorted, so equal values compare equal as text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.keys(value as JsonObject).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson((value as JsonObject)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

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

export type MetaValue = Pick<AssetMetaRow, 'val_str' | 'val_num' | 'val_bool' | 'val_json'>;

/** How one scalar is stored (and matched): strings, finite numbers, booleans, else canonical JSON. */
export function metaValueOf(value: unknown): MetaValue {
  const row: MetaValue = { val_str: null, val_num: null, val_bool: null, val_json: null };
  if (typeof value === 'string') row.val_str = value;
  else if (typeof value === 'number' && Number.isFinite(value)) row.val_num = value;
  else if (typeof value === 'boolean') row.val_bool = value ? 1 : 0;
  else row.val_json = canonicalJson(value);
  return row;
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
