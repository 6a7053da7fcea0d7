/**
 * How an asset's metadata value is stored in its rows, and so how a filter on it matches.
 */
import type { AssetMetaRow } from './schema.ts';

type JsonObject = Record<string, unknown>;

/** JSON with object keys sorted, so equal values compare equal as text. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.keys(value as JsonObject).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson((value as JsonObject)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
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
