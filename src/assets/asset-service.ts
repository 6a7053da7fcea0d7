import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { ApiError } from '../core/errors.ts';
import { guessMimeType } from '../core/mime-type.ts';
import type { BlobStore } from '../storage/blobs/blob-store.ts';
import type { DbHandle } from '../storage/db-handle.ts';
import type { AssetFilter, AssetSort, AssetsRepo, TagCount, TagOrder } from '../storage/repos/assets-repo.ts';
import type { AssetRefRow } from '../storage/schema.ts';
import { contentKey, createHashTap } from './asset-hash.ts';
import { mergeMetadata, projectMetadata, type JsonObject } from './asset-metadata.ts';
import { serializeAsset, type AssetJson, type AssetView } from './asset-record.ts';
import { assertNoSystemTags, MISSING_TAG, rootTagOf, sortTags, tagsForLocation, withRootTag, type RootTag } from './asset-tags.ts';

/**
 * Largest accepted asset upload (2 GiB). The 20 MB limit of /v1 file uploads does not apply to
 * the registry: uploads are streamed to disk and hashed on the way, never held in memory.
 */
export const DEFAULT_MAX_ASSET_BYTES = 2 * 1024 ** 3;

const MAX_NAME_LENGTH = 512;
/** How many numbered names (`a (1).png` …) are tried for a free location before giving up. */
const MAX_RENAMES = 10_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface AssetServiceOptions {
  /** Largest accepted upload, in bytes (default DEFAULT_MAX_ASSET_BYTES). */
  maxUploadBytes?: number;
  logger?: Logger;
}

/** Content written to a temporary blob and hashed, not yet filed under its hash. */
export interface IngestedContent {
  tempKey: string;
  /** `blake3:<64 hex>`. */
  hash: string;
  size: number;
  /** First bytes, for sniffing the type. */
  head: Buffer;
}

/** What a client gives when creating a record (upload or create-from-hash). */
export interface CreateSpec {
  /** Display name; defaults to the client's file name, then to the hex digest. */
  name?: string;
  /** File name the client sent with the content (multipart filename). */
  clientFileName?: string;
  /** Content type the client's multipart part carried. */
  partMimeType?: string;
  /** Normalized, non-empty. */
  tags: string[];
  userMetadata: JsonObject;
  mimeType?: string;
  previewId?: string | null;
}

export interface Created {
  asset: AssetJson & { created_new: boolean };
  createdNew: boolean;
}

export interface ListQuery {
  includeTags: string[];
  excludeTags: string[];
  nameContains?: string;
  metadataFilter?: JsonObject;
  limit: number;
  offset: number;
  sort: AssetSort;
  order: 'asc' | 'desc';
}

export interface UpdateSpec {
  name?: string;
  userMetadata?: JsonObject;
  /** null clears the preview. */
  previewId?: string | null;
}

export interface OpenedAsset {
  asset: AssetJson;
  mimeType: string;
  size: number;
  fileName: string;
  stream: Readable;
}

export interface UploadImageSpec {
  fileName: string;
  type: RootTag;
  /** Normalized (see normalizeSubfolder). */
  subfolder: string;
  overwrite: boolean;
  partMimeType?: string;
}

export interface UploadedImage {
  name: string;
  subfolder: string;
  type: RootTag;
  asset: AssetJson;
}

export interface OutputSpec {
  userId: string;
  /** The task id; shown as job_id (and prompt_id). */
  jobId: string;
  fileName: string;
  mimeType: string;
  subfolder?: string;
}

export interface RegisterOutputSpec extends OutputSpec {
  source: Readable | Buffer;
}

/** A task output's bytes, stored under their hash before the transaction that records them (storeOutput). */
export interface StoredOutputContent {
  hash: string;
  size: number;
  /** The bytes were new to the store (dropOutput removes them when no record came to use them). */
  stored: boolean;
}

/** `a/b`, without empty, `.` or `..` segments; throws 400 on a path that would leave its root. */
export function normalizeSubfolder(raw: string | undefined, param = 'subfolder'): string {
  if (!raw) return '';
  const parts = raw.replaceAll('\\', '/').split('/').filter((p) => p !== '' && p !== '.');
  if (parts.some((p) => p === '..' || p.includes('\0'))) throw new ApiError('INVALID_BODY', `${param} must stay inside its folder`, param);
  return parts.join('/');
}

/** The last segment of a client file name; throws 400 when nothing usable is left. */
export function safeFileName(raw: string | undefined, param = 'filename'): string {
  const name = path.posix.basename((raw ?? '').replaceAll('\\', '/')).trim();
  if (!name || name === '.' || name === '..' || name.includes('\0')) throw new ApiError('INVALID_BODY', `${param} is not a usable file name`, param);
  if (name.length > MAX_NAME_LENGTH) throw new ApiError('INVALID_BODY', `${param} is longer than ${MAX_NAME_LENGTH} characters`, param);
  return name;
}

/** ComfyUI's rename on collision: `a.png` → `a (1).png`, `a (2).png`, … */
export function numberedName(fileName: string, n: number): string {
  const ext = path.posix.extname(fileName);
  const stem = ext ? fileName.slice(0, -ext.length) : fileName;
  return `${stem} (${n})${ext}`;
}

/** A record about to be created by register: everything that can be refused is checked. */
interface PreparedRecord {
  name: string;
  /** File name asked for; numbered when its location is taken. */
  fileName: string;
  root: RootTag;
  tags: string[];
  mimeType: string | null;
}

function notFound(id: string): ApiError {
  return new ApiError('ASSET_NOT_FOUND', `asset ${id} not found`, null, {}, {}, { id });
}

/**
 * The asset registry: content stored once per blake3 hash in
 * the blob store, records owned by a user, soft delete, tags and metadata filtering.
 */
export class AssetService {
  readonly maxUploadBytes: number;
  private lastNow = 0;

  constructor(
    private readonly repo: AssetsRepo,
    private readonly blobs: BlobStore,
    private readonly opts: AssetServiceOptions = {},
  ) {
    this.maxUploadBytes = opts.maxUploadBytes ?? DEFAULT_MAX_ASSET_BYTES;
  }

  /** Milliseconds, strictly increasing within the process so creation order sorts stably. */
  private now(): number {
    this.lastNow = Math.max(Date.now(), this.lastNow + 1);
    return this.lastNow;
  }

  // ---- content -------------------------------------------------------------------------

  /** Streams content to a temporary blob while hashing it. */
  async ingest(source: Readable): Promise<IngestedContent> {
    const tap = await createHashTap(source);
    const tempKey = `assets/.incoming/${randomUUID()}`;
    try {
      await this.blobs.put(tempKey, tap.stream);
    } catch (err) {
      await this.blobs.delete(tempKey).catch(() => undefined);
      throw err;
    }
    return { tempKey, ...tap.result() };
  }

  /** Drops ingested content that will not be kept. */
  async discard(ingested: IngestedContent): Promise<void> {
    await this.blobs.delete(ingested.tempKey);
  }

  /**
   * Files ingested content under `assets/<hex>` (once per hash) and records it. Answers whether
   * the bytes were new to the store.
   */
  private async commit(ingested: IngestedContent): Promise<boolean> {
    const stored = await this.storeContent(ingested);
    await this.recordContent(ingested, stored);
    return stored;
  }

  /** Moves ingested content to `assets/<hex>` unless the store has those bytes; answers whether they were new. */
  private async storeContent(ingested: IngestedContent): Promise<boolean> {
    const key = contentKey(ingested.hash);
    if ((await this.blobs.size(key)) === undefined) {
      await this.blobs.move(ingested.tempKey, key);
      return true;
    }
    await this.blobs.delete(ingested.tempKey);
    return false;
  }

  /** The content row of stored bytes. */
  private async recordContent(content: { hash: string; size: number }, stored: boolean): Promise<void> {
    // The bytes are back: records that were marked missing are whole again.
    if (stored) await this.repo.setMissing([content.hash], false, this.now());
    await this.repo.upsertContent({ hash: content.hash, size: content.size, blob_key: contentKey(content.hash), created_at: this.now() });
  }

  /**
   * After a failure past commit(): content this request stored is removed again when no record
   * refers to it, so a refused upload leaves nothing behind.
   */
  private async releaseIfUnreferenced(hash: string, stored: boolean): Promise<void> {
    if (!stored) return;
    try {
      if (await this.repo.deleteUnreferencedContent(hash)) await this.blobs.delete(contentKey(hash));
    } catch (err) {
      this.opts.logger?.warn({ err, hash }, 'could not remove unreferenced asset content');
    }
  }

  /** Commits the content, runs fn, and releases the content again when fn fails. */
  private async withCommitted<T>(ingested: IngestedContent, fn: () => Promise<T>): Promise<T> {
    const stored = await this.commit(ingested);
    try {
      return await fn();
    } catch (err) {
      await this.releaseIfUnreferenced(ingested.hash, stored);
      throw err;
    }
  }

  /**
   * Brings the `missing` tag of records in line with the blob store for the given contents
   * (all known contents when omitted). Answers how many records changed.
   */
  async checkMissing(hashes?: readonly string[]): Promise<number> {
    const list = [...new Set(hashes ?? (await this.repo.allContentHashes()))];
    if (list.length === 0) return 0;
    const present: string[] = [];
    const absent: string[] = [];
    await Promise.all(list.map(async (hash) => ((await this.blobs.size(contentKey(hash))) === undefined ? absent : present).push(hash)));
    const marked = await this.repo.hashesMarkedMissing(list);
    const now = this.now();
    let changed = 0;
    const toMark = absent;
    const toClear = present.filter((h) => marked.has(h));
    if (toMark.length > 0) changed += await this.repo.setMissing(toMark, true, now);
    if (toClear.length > 0) changed += await this.repo.setMissing(toClear, false, now);
    if (changed > 0) this.opts.logger?.warn({ missing: toMark.length, restored: toClear.length }, 'asset content check changed records');
    return changed;
  }

  // ---- reading -------------------------------------------------------------------------

  /** Records with their sorted tags and preview targets. */
  private async views(ownerId: string, rows: readonly AssetRefRow[]): Promise<AssetView[]> {
    const previewIds = rows.map((r) => r.preview_id).filter((id): id is string => Boolean(id));
    const previews = new Map((await this.repo.findLiveMany(ownerId, previewIds)).map((r) => [r.id, r]));
    const tags = await this.repo.tagsOf([...rows.map((r) => r.id), ...previews.keys()]);
    return rows.map((row) => {
      const own = sortTags(tags.get(row.id) ?? []);
      const target = row.preview_id ? previews.get(row.preview_id) : row;
      return { row, tags: own, preview: target ? { row: target, tags: sortTags(tags.get(target.id) ?? []) } : undefined };
    });
  }

  private async view(ownerId: string, row: AssetRefRow): Promise<AssetView> {
    return (await this.views(ownerId, [row]))[0];
  }

  private async liveRow(ownerId: string, id: string): Promise<AssetRefRow> {
    const row = UUID.test(id) ? await this.repo.findLive(ownerId, id) : undefined;
    if (!row) throw notFound(id);
    return row;
  }

  /** The owner's record; another user's id or a deleted record answers 404. */
  async get(ownerId: string, id: string): Promise<AssetJson> {
    let row = await this.liveRow(ownerId, id);
    if ((await this.checkMissing([row.asset_hash])) > 0) row = await this.liveRow(ownerId, id);
    return serializeAsset(await this.view(ownerId, row));
  }

  private filterOf(ownerId: string, q: Pick<ListQuery, 'includeTags' | 'excludeTags' | 'nameContains' | 'metadataFilter'>): AssetFilter {
    return { ownerId, includeTags: q.includeTags, excludeTags: q.excludeTags, nameContains: q.nameContains, metadataFilter: q.metadataFilter };
  }

  /**
   * One page of the owner's live records. Content marked missing is checked first (it may be
   * back), then the page's content; a change re-reads the page.
   */
  async list(ownerId: string, q: ListQuery): Promise<{ assets: AssetJson[]; total: number; has_more: boolean }> {
    await this.checkMissing(await this.repo.missingHashesOf(ownerId));
    const filter = this.filterOf(ownerId, q);
    const page = { limit: q.limit, offset: q.offset, sort: q.sort, order: q.order };
    let result = await this.repo.list(filter, page);
    if ((await this.checkMissing(result.rows.map((r) => r.asset_hash))) > 0) result = await this.repo.list(filter, page);
    const views = await this.views(ownerId, result.rows);
    return { assets: views.map((v) => serializeAsset(v)), total: result.total, has_more: q.offset + result.rows.length < result.total };
  }

  /** Tag usage over the owner's live records (`missing` counts records whose content is gone). */
  async listTags(ownerId: string, q: { prefix?: string; limit: number; offset: number; order: TagOrder }): Promise<{ tags: TagCount[]; total: number; has_more: boolean }> {
    await this.checkMissing(await this.repo.liveHashesOf(ownerId));
    const prefix = q.prefix?.trim().toLowerCase() || undefined;
    const { rows, total } = await this.repo.tagCounts({ ownerId, includeTags: [], excludeTags: [] }, { prefix, order: q.order, limit: q.limit, offset: q.offset });
    return { tags: rows, total, has_more: q.offset + rows.length < total };
  }

  /** Tag histogram over the records a listing with these filters would look at. */
  async refineTags(ownerId: string, q: Pick<ListQuery, 'includeTags' | 'excludeTags' | 'nameContains' | 'metadataFilter'> & { limit: number }): Promise<Record<string, number>> {
    await this.checkMissing(await this.repo.liveHashesOf(ownerId));
    const { rows } = await this.repo.tagCounts(this.filterOf(ownerId, q), { order: 'count_desc', limit: q.limit, offset: 0 });
    return Object.fromEntries(rows.filter((r) => r.count > 0).map((r) => [r.name, r.count]));
  }

  /** Whether the owner has live content with that hash whose bytes are present. */
  async hashExists(ownerId: string, hash: string): Promise<boolean> {
    if (!(await this.repo.ownerHasHash(ownerId, hash))) return false;
    if ((await this.blobs.size(contentKey(hash))) !== undefined) return true;
    await this.checkMissing([hash]);
    return false;
  }

  private async open(ownerId: string, row: AssetRefRow): Promise<OpenedAsset> {
    const stream = await this.blobs.open(contentKey(row.asset_hash));
    if (!stream) {
      await this.checkMissing([row.asset_hash]);
      throw new ApiError('FILE_NOT_FOUND', `the content of asset ${row.id} is missing`, null, {}, {}, { id: row.id });
    }
    return { asset: serializeAsset(await this.view(ownerId, row)), mimeType: row.mime_type ?? 'application/octet-stream', size: Number(row.size), fileName: row.file_name, stream };
  }

  /** The bytes of the owner's record. */
  async openContent(ownerId: string, id: string): Promise<OpenedAsset> {
    return this.open(ownerId, await this.liveRow(ownerId, id));
  }

  /**
   * /api/view: `filename=blake3:<hex>` resolves to the owner's newest live, non-temp record of
   * that content; otherwise file name + subfolder + type (a tag of the record).
   */
  async openView(ownerId: string, q: { hash?: string; filename: string; subfolder: string; type: RootTag }): Promise<OpenedAsset> {
    const row = q.hash
      ? await this.repo.findNewestByHash(ownerId, q.hash, ['temp', MISSING_TAG])
      : await this.repo.findAtLocation(ownerId, q.filename, q.subfolder, q.type);
    if (!row) throw new ApiError('FILE_NOT_FOUND', `file ${q.filename} not found`, null, {}, {}, { filename: q.filename });
    return this.open(ownerId, row);
  }

  // ---- writing -------------------------------------------------------------------------

  private async assertPreview(ownerId: string, previewId: string | null | undefined): Promise<void> {
    if (!previewId) return;
    if (!UUID.test(previewId) || !(await this.repo.findLive(ownerId, previewId))) {
      throw new ApiError('ASSET_NOT_FOUND', `preview asset ${previewId} not found`, 'preview_id', {}, {}, { preview_id: previewId });
    }
  }

  private async createRecord(ownerId: string, r: {
    hash: string;
    size: number;
    name: string;
    fileName: string;
    subfolder?: string;
    root: RootTag;
    mimeType: string | null;
    tags: readonly string[];
    userMetadata: JsonObject;
    systemMetadata: JsonObject;
    jobId?: string;
    previewId?: string | null;
  }): Promise<AssetRefRow | undefined> {
    const now = this.now();
    const row: AssetRefRow = {
      id: randomUUID(),
      owner_id: ownerId,
      name: r.name,
      asset_hash: r.hash,
      size: r.size,
      mime_type: r.mimeType,
      file_name: r.fileName,
      subfolder: r.subfolder ?? '',
      root: r.root,
      preview_id: r.previewId ?? null,
      user_metadata: JSON.stringify(r.userMetadata),
      system_metadata: JSON.stringify(r.systemMetadata),
      job_id: r.jobId ?? null,
      is_immutable: 0,
      created_at: now,
      updated_at: now,
      deleted_at: null,
    };
    const tags = r.tags.map((tag) => ({ tag, origin: 'manual' as const, added_at: now }));
    // Undefined when another live record of the owner took the location first.
    return (await this.repo.insertRef(row, tags, projectMetadata(row.id, mergeMetadata(r.systemMetadata, r.userMetadata)))) ? row : undefined;
  }

  /**
   * Creates a record at the first free location root/subfolder/fileName, `fileName (n).ext`
   * when taken (ComfyUI's rename), so every live record has a location of its own. stop is
   * asked after a lost race for a location: a record it answers is returned instead.
   */
  private async createAtFreeLocation(
    ownerId: string,
    r: Omit<Parameters<AssetService['createRecord']>[1], 'name'> & { name?: string },
    stop?: () => Promise<AssetRefRow | undefined>,
  ): Promise<{ row: AssetRefRow; created: boolean }> {
    const subfolder = r.subfolder ?? '';
    let n = 0;
    for (let attempt = 0; n <= MAX_RENAMES && attempt <= 2 * MAX_RENAMES; attempt++) {
      const fileName = n === 0 ? r.fileName : numberedName(r.fileName, n);
      const occupied = await this.repo.findOccupant(ownerId, r.root, subfolder, fileName);
      if (!occupied) {
        const row = await this.createRecord(ownerId, { ...r, name: r.name ?? fileName, fileName });
        if (row) return { row, created: true };
      }
      // The location is taken, possibly by a concurrent request creating this very record.
      const other = await stop?.();
      if (other) return { row: other, created: false };
      // Taken by another record: the next number; lost a race for a free name: look again.
      if (occupied) n++;
    }
    throw new Error(`no free file name for ${r.fileName} after ${MAX_RENAMES} tries`);
  }

  /**
   * Everything about a new record that can be refused, checked before any content is stored:
   * tags, preview, name and file name. The root tag is added when the tags lack one.
   */
  private async prepare(ownerId: string, content: { hash: string; head?: Buffer }, spec: CreateSpec): Promise<PreparedRecord> {
    assertNoSystemTags(spec.tags);
    if (spec.tags.length === 0) throw new ApiError('INVALID_BODY', 'tags must be a non-empty list', 'tags');
    await this.assertPreview(ownerId, spec.previewId);
    const tags = withRootTag(spec.tags);
    const hex = content.hash.slice('blake3:'.length);
    const name = (spec.name?.trim() || spec.clientFileName?.trim() || hex).slice(0, MAX_NAME_LENGTH);
    const fileName = spec.clientFileName ? safeFileName(spec.clientFileName) : name.replaceAll('/', '_');
    const sniffed = guessMimeType(spec.name ?? spec.clientFileName, content.head);
    const mimeType = spec.mimeType || spec.partMimeType || (sniffed !== 'application/octet-stream' ? sniffed : null);
    return { name, fileName, root: rootTagOf(tags)!, tags, mimeType };
  }

  /**
   * Upload and create-from-hash share this: the same content under the same name again returns
   * the existing record (mime_type filled only when it was empty, preview_id applied);
   * otherwise a new record at a location of its own (the file name numbered when taken).
   * created_new says whether the content was new to this user; a request that loses a race
   * to create the same record gets the winner's record with created_new false.
   */
  private async register(ownerId: string, content: { hash: string; size: number }, p: PreparedRecord, spec: CreateSpec, source: string): Promise<Created> {
    const reuse = async (existing: AssetRefRow): Promise<Created> => {
      const patch: Partial<AssetRefRow> = {};
      if (!existing.mime_type && spec.mimeType) patch.mime_type = spec.mimeType;
      if (spec.previewId !== undefined && spec.previewId !== existing.preview_id) patch.preview_id = spec.previewId;
      if (Object.keys(patch).length > 0) {
        patch.updated_at = this.now();
        await this.repo.updateRef(existing.id, patch);
      }
      const row = { ...existing, ...patch };
      return { asset: serializeAsset(await this.view(ownerId, row), false), createdNew: false };
    };
    const sameRecord = () => this.repo.findLiveByHashAndName(ownerId, content.hash, p.name);
    const userHad = await this.repo.ownerHasHash(ownerId, content.hash);
    if (userHad) {
      const existing = await sameRecord();
      if (existing) return reuse(existing);
    }
    const { row, created } = await this.createAtFreeLocation(ownerId, {
      hash: content.hash,
      size: content.size,
      name: p.name,
      fileName: p.fileName,
      root: p.root,
      mimeType: p.mimeType,
      tags: p.tags,
      userMetadata: spec.userMetadata,
      // The file name the client gave, also when the stored one is numbered.
      systemMetadata: { source, filename: p.fileName },
      previewId: spec.previewId,
    }, sameRecord);
    if (!created) return reuse(row);
    return { asset: serializeAsset(await this.view(ownerId, row), !userHad), createdNew: !userHad };
  }

  /**
   * POST /api/assets: files the ingested content under its hash and registers it. A supplied
   * hash that differs from the content's answers 409 HASH_MISMATCH; empty content 400. Nothing
   * is stored when the request is refused.
   */
  async upload(ownerId: string, ingested: IngestedContent, spec: CreateSpec & { expectedHash?: string }): Promise<Created> {
    let prepared: PreparedRecord;
    try {
      if (spec.expectedHash && spec.expectedHash !== ingested.hash) {
        throw new ApiError('HASH_MISMATCH', 'the supplied hash differs from the hash of the uploaded content', 'hash', {}, {}, { expected: spec.expectedHash, actual: ingested.hash });
      }
      if (ingested.size === 0) throw new ApiError('EMPTY_UPLOAD', 'the uploaded file is empty', 'file');
      prepared = await this.prepare(ownerId, ingested, spec);
    } catch (err) {
      await this.discard(ingested);
      throw err;
    }
    return this.withCommitted(ingested, () => this.register(ownerId, ingested, prepared, spec, 'upload'));
  }

  /** A new record for content the user already has (POST /api/assets/from-hash, or upload with only a hash). */
  async createFromHash(ownerId: string, hash: string, spec: CreateSpec): Promise<Created> {
    if (!(await this.hashExists(ownerId, hash))) {
      throw new ApiError('ASSET_NOT_FOUND', `no content with hash ${hash}`, 'hash', {}, {}, { hash });
    }
    const prepared = await this.prepare(ownerId, { hash }, spec);
    const size = await this.blobs.size(contentKey(hash));
    return this.register(ownerId, { hash, size: size ?? 0 }, prepared, spec, 'hash');
  }

  /** PUT: name, user metadata, preview. The mime type is never changed here. */
  async update(ownerId: string, id: string, spec: UpdateSpec): Promise<AssetJson> {
    if (spec.name !== undefined && !spec.name.trim()) throw new ApiError('INVALID_BODY', 'name must not be empty', 'name');
    if (spec.name === undefined && spec.userMetadata === undefined && spec.previewId === undefined) {
      throw new ApiError('INVALID_BODY', 'nothing to update: give name, user_metadata or preview_id');
    }
    const row = await this.liveRow(ownerId, id);
    if (spec.previewId !== undefined) await this.assertPreview(ownerId, spec.previewId);
    const patch: Partial<AssetRefRow> = { updated_at: this.now() };
    if (spec.name !== undefined) patch.name = spec.name.trim();
    if (spec.previewId !== undefined) patch.preview_id = spec.previewId;
    let meta;
    if (spec.userMetadata !== undefined) {
      patch.user_metadata = JSON.stringify(spec.userMetadata);
      meta = projectMetadata(row.id, mergeMetadata(JSON.parse(row.system_metadata) as JsonObject, spec.userMetadata));
    }
    await this.repo.updateRef(row.id, patch, meta);
    return serializeAsset(await this.view(ownerId, { ...row, ...patch }));
  }

  /** Soft delete: the record disappears, the content stays. */
  async delete(ownerId: string, id: string): Promise<void> {
    if (!UUID.test(id) || !(await this.repo.softDelete(ownerId, id, this.now()))) throw notFound(id);
  }

  async addTags(ownerId: string, id: string, tags: string[]): Promise<{ added: string[]; already_present: string[]; total_tags: string[] }> {
    assertNoSystemTags(tags);
    const row = await this.liveRow(ownerId, id);
    const now = this.now();
    const added = await this.repo.addTags(row.id, tags, 'manual', now);
    if (added.length > 0) await this.repo.updateRef(row.id, { updated_at: now });
    const all = (await this.repo.tagsOf([row.id])).get(row.id) ?? [];
    return { added: sortTags(added), already_present: sortTags(tags.filter((t) => !added.includes(t))), total_tags: sortTags(all) };
  }

  async removeTags(ownerId: string, id: string, tags: string[]): Promise<{ removed: string[]; not_present: string[]; total_tags: string[] }> {
    assertNoSystemTags(tags);
    const row = await this.liveRow(ownerId, id);
    const removed = await this.repo.removeTags(row.id, tags);
    if (removed.length > 0) await this.repo.updateRef(row.id, { updated_at: this.now() });
    const all = (await this.repo.tagsOf([row.id])).get(row.id) ?? [];
    return { removed: sortTags(removed), not_present: sortTags(tags.filter((t) => !removed.includes(t))), total_tags: sortTags(all) };
  }

  /**
   * POST /upload/image: the image lives at type/subfolder/name and is registered there with
   * tags from that path. Without overwrite a taken name becomes `name (1).ext` (identical
   * content at the name is reused, as ComfyUI does); with overwrite the record there gets
   * the new content.
   */
  async uploadImage(ownerId: string, ingested: IngestedContent, spec: UploadImageSpec): Promise<UploadedImage> {
    let tags: string[];
    try {
      if (ingested.size === 0) throw new ApiError('EMPTY_UPLOAD', 'the uploaded image is empty', 'image');
      tags = tagsForLocation(spec.type, spec.subfolder);
    } catch (err) {
      await this.discard(ingested);
      throw err;
    }
    const sniffed = guessMimeType(spec.fileName, ingested.head);
    const mimeType = sniffed !== 'application/octet-stream' ? sniffed : spec.partMimeType ?? null;
    return this.withCommitted(ingested, async () => {
      let name = spec.fileName;
      let row: AssetRefRow | undefined;
      for (let n = 1, attempt = 0; n <= MAX_RENAMES + 1 && attempt <= 2 * MAX_RENAMES; attempt++) {
        const existing = await this.repo.findOccupant(ownerId, spec.type, spec.subfolder, name);
        if (existing) {
          if (existing.asset_hash === ingested.hash || spec.overwrite) {
            row = existing;
            break;
          }
          name = numberedName(spec.fileName, n++);
          continue;
        }
        row = await this.createRecord(ownerId, {
          hash: ingested.hash,
          size: ingested.size,
          name,
          fileName: name,
          subfolder: spec.subfolder,
          root: spec.type,
          mimeType,
          tags,
          userMetadata: {},
          systemMetadata: { source: 'upload_image', filename: name, ...(spec.subfolder ? { subfolder: spec.subfolder } : {}) },
        });
        if (row) return { name, subfolder: spec.subfolder, type: spec.type, asset: serializeAsset(await this.view(ownerId, row)) };
        // Another upload took the name meanwhile: look at it again.
      }
      if (!row) throw new Error(`no free file name for ${spec.fileName} after ${MAX_RENAMES} tries`);
      if (row.asset_hash !== ingested.hash) {
        const patch: Partial<AssetRefRow> = { asset_hash: ingested.hash, size: ingested.size, mime_type: mimeType, updated_at: this.now() };
        await this.repo.updateRef(row.id, patch);
        await this.repo.removeTags(row.id, [MISSING_TAG]);
        row = { ...row, ...patch };
      }
      await this.repo.addTags(row.id, tags, 'manual', this.now());
      return { name, subfolder: spec.subfolder, type: spec.type, asset: serializeAsset(await this.view(ownerId, row)) };
    });
  }

  /** Stores a task output's bytes under their hash; recordOutput records them in the transaction that ends the task. */
  async storeOutput(source: Readable | Buffer): Promise<StoredOutputContent> {
    const ingested = await this.ingest(Buffer.isBuffer(source) ? Readable.from([source]) : source);
    return { hash: ingested.hash, size: ingested.size, stored: await this.storeContent(ingested) };
  }

  /**
   * Registers stored output bytes as the user's asset, writing through `db` (the transaction that
   * ends the task): tag `output`, job_id = the task id. A file name already taken under
   * output/subfolder is numbered (`a (1).png`).
   */
  async recordOutput(db: DbHandle, content: StoredOutputContent, spec: OutputSpec): Promise<void> {
    await this.writingThrough(this.repo.in(db)).createOutputRecord(content, spec);
  }

  /** Removes output bytes that no record came to use (the task's end was not written). */
  async dropOutput(content: StoredOutputContent): Promise<void> {
    if (content.stored && !(await this.repo.hasContent(content.hash))) await this.blobs.delete(contentKey(content.hash));
  }

  /** storeOutput and recordOutput in a transaction of their own, for an output that ends no task. */
  async registerOutput(spec: RegisterOutputSpec): Promise<AssetJson> {
    const content = await this.storeOutput(spec.source);
    try {
      const row = await this.repo.transaction((repo) => this.writingThrough(repo).createOutputRecord(content, spec));
      return serializeAsset(await this.view(spec.userId, row));
    } catch (err) {
      await this.dropOutput(content);
      throw err;
    }
  }

  /** This service writing through another repository (one bound to a transaction). */
  private writingThrough(repo: AssetsRepo): AssetService {
    return new AssetService(repo, this.blobs, this.opts);
  }

  private async createOutputRecord(content: StoredOutputContent, spec: OutputSpec): Promise<AssetRefRow> {
    const fileName = safeFileName(spec.fileName, 'fileName');
    const subfolder = normalizeSubfolder(spec.subfolder);
    await this.recordContent(content, content.stored);
    const { row } = await this.createAtFreeLocation(spec.userId, {
      hash: content.hash,
      size: content.size,
      fileName,
      subfolder,
      root: 'output',
      mimeType: spec.mimeType || null,
      tags: ['output'],
      userMetadata: {},
      systemMetadata: { source: 'output', filename: fileName, ...(subfolder ? { subfolder } : {}) },
      jobId: spec.jobId,
    });
    return row;
  }
}
