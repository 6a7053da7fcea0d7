/** Row types of every table; timestamps are milliseconds since the epoch. */
export interface Database {
  users: UserRow;
  api_tokens: ApiTokenRow;
  settings: SettingRow;
  files: FileRow;
  asset_contents: AssetContentRow;
  asset_refs: AssetRefRow;
  asset_tags: AssetTagRow;
  asset_meta: AssetMetaRow;
}

export interface UserRow {
  id: string;
  created_at: number;
}

export interface ApiTokenRow {
  id: string;
  user_id: string;
  name: string | null;
  /** sha256 hex of the plain token; the plain token is never stored. */
  token_hash: string;
  created_at: number;
}

/** Operator settings changed at run time (e.g. the task callback). */
export interface SettingRow {
  key: string;
  value: string;
  updated_at: number;
}

export interface FileRow {
  id: string;
  user_id: string;
  file_name: string;
  mime_type: string;
  size: number;
  blob_key: string;
  created_at: number;
  expires_at: number;
}

/** Asset content, stored once per hash in the blob store under `blob_key`. */
export interface AssetContentRow {
  /** `blake3:<64 hex>`. */
  hash: string;
  size: number;
  blob_key: string;
  created_at: number;
}

/** An asset record: a user's reference to content, with its name, place and metadata. */
export interface AssetRefRow {
  id: string;
  owner_id: string;
  name: string;
  asset_hash: string;
  size: number;
  mime_type: string | null;
  /** File name and subfolder under which /api/view finds the record (type comes from its tags). */
  file_name: string;
  subfolder: string;
  /**
   * input, output or temp: the root the record lives under (set when it is created). A live
   * record's root + subfolder + file_name is unique per owner.
   */
  root: string | null;
  preview_id: string | null;
  /** JSON object. */
  user_metadata: string;
  /** JSON object written by the service. */
  system_metadata: string;
  job_id: string | null;
  is_immutable: number;
  created_at: number;
  updated_at: number;
  /** Set by a soft delete. */
  deleted_at: number | null;
}

export interface AssetTagRow {
  ref_id: string;
  tag: string;
  origin: 'manual' | 'automatic';
  added_at: number;
}

/** One value of the merged metadata (system merged with user) of a record, for filtering. */
export interface AssetMetaRow {
  ref_id: string;
  key: string;
  /** Position within an array value; 0 for scalars. */
  ordinal: number;
  val_str: string | null;
  val_num: number | null;
  val_bool: number | null;
  val_json: string | null;
}
