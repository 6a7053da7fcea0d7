import type { AssetRefRow } from '../storage/schema.ts';
import { MISSING_TAG, rootTagOf } from './asset-tags.ts';
import type { JsonObject } from './asset-metadata.ts';

/** A record as the service hands it around: the row, its tags (sorted) and what its preview points at. */
export interface AssetView {
  row: AssetRefRow;
  tags: string[];
  /** The preview target: the record named by preview_id, else the record itself. */
  preview?: { row: AssetRefRow; tags: string[] };
}

/** The asset record as JSON; unset fields are left out. */
export interface AssetJson {
  id: string;
  name: string;
  /** `blake3:<64 hex>` (ComfyUI's early field name). */
  asset_hash: string;
  /** Same value as asset_hash (ComfyUI's later field name). */
  hash: string;
  size: number;
  mime_type?: string;
  tags: string[];
  user_metadata: JsonObject;
  /** System metadata, read-only. */
  metadata?: JsonObject;
  is_immutable: boolean;
  job_id?: string;
  /** Deprecated alias of job_id. */
  prompt_id?: string;
  preview_id?: string;
  preview_url?: string;
  created_at: string;
  updated_at: string;
  /** Only on create answers. */
  created_new?: boolean;
}

const PREVIEWABLE = /^(image|video|audio|text)\//;

/**
 * `/api/view?type=…&filename=…[&subfolder=…]` for the preview target (
 * rule 2): its own file name and subfolder, the type from its tags. None when the target has
 * no input/output/temp tag or its content is missing; a record without preview_id previews
 * itself only when it is an image, video, audio or text file.
 */
export function previewUrlOf(view: AssetView): string | undefined {
  const target = view.preview;
  if (!target) return undefined;
  if (target.row.id === view.row.id && !view.row.preview_id && !PREVIEWABLE.test(view.row.mime_type ?? '')) return undefined;
  if (target.tags.includes(MISSING_TAG)) return undefined;
  // The record's own location root, while it still carries that tag (records from before
  // roots were stored fall back to their tags).
  const type = target.row.root ? (target.tags.includes(target.row.root) ? target.row.root : undefined) : rootTagOf(target.tags);
  if (!type) return undefined;
  let url = `/api/view?type=${type}&filename=${encodeURIComponent(target.row.file_name)}`;
  if (target.row.subfolder) url += `&subfolder=${encodeURIComponent(target.row.subfolder)}`;
  return url;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function parseObject(text: string): JsonObject {
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as JsonObject) : {};
  } catch {
    return {};
  }
}

/** The record's JSON: tags sorted, null fields omitted, prompt_id mirrors job_id. */
export function serializeAsset(view: AssetView): AssetJson;
export function serializeAsset(view: AssetView, createdNew: boolean): AssetJson & { created_new: boolean };
export function serializeAsset(view: AssetView, createdNew?: boolean): AssetJson {
  const { row } = view;
  const metadata = parseObject(row.system_metadata);
  const full: Record<keyof AssetJson, unknown> = {
    id: row.id,
    name: row.name,
    asset_hash: row.asset_hash,
    hash: row.asset_hash,
    size: Number(row.size),
    mime_type: row.mime_type ?? undefined,
    tags: [...view.tags],
    user_metadata: parseObject(row.user_metadata),
    metadata: Object.keys(metadata).length > 0 ? metadata : undefined,
    is_immutable: Boolean(row.is_immutable),
    job_id: row.job_id ?? undefined,
    prompt_id: row.job_id ?? undefined,
    preview_id: row.preview_id ?? undefined,
    preview_url: previewUrlOf(view),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    created_new: createdNew,
  };
  // Unset fields are left out of the JSON (rule 4).
  return Object.fromEntries(Object.entries(full).filter(([, v]) => v !== undefined && v !== null && v !== '')) as unknown as AssetJson;
}
