import { randomUUID } from 'node:crypto';
import { ApiError } from '../core/errors.ts';
import type { AssetFilter, AssetSort } from '../storage/repos/assets-repo.ts';
import type { AssetContentRow, AssetRefRow } from '../storage/schema.ts';
import type { AssetContext } from './asset-context.ts';
import { mergeMetadata, projectMetadata, type JsonObject } from './asset-metadata.ts';
import { MAX_RENAMES, nameParts, numberedName, numberOf } from './asset-names.ts';
import { serializeAsset, type AssetJson, type AssetView } from './asset-json.ts';
import { sortTags, type RootTag } from './asset-tags.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Which of the owner's records a listing or a tag histogram looks at. */
export interface RecordFilter {
  includeTags: string[];
  excludeTags: string[];
  nameContains?: string;
  metadataFilter?: JsonObject;
}

export interface ListQuery extends RecordFilter {
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

/** Everything a new record is made of; its location is root/subfolder/fileName. */
export interface NewRecord {
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
  /** The content row of `hash`, when the caller has not recorded it: written with the record's insert. */
  content?: AssetContentRow;
}

export function assetNotFound(id: string): ApiError {
  return new ApiError('ASSET_NOT_FOUND', `asset ${id} not found`, null, {}, {}, { id });
}

export function assetFilterOf(ownerId: string, q: RecordFilter): AssetFilter {
  return { ownerId, includeTags: q.includeTags, excludeTags: q.excludeTags, nameContains: q.nameContains, metadataFilter: q.metadataFilter };
}

/**
 * The records of the registry, owned by a user: reading them as JSON, listing, changing and
 * soft-deleting them, and creating one at a location of its own. Whether content is missing is
 * what its `missing` tag says (the sweeper keeps it true); reads do not look at the blob store.
 */
export class AssetRecords {
  private readonly ctx: AssetContext;

  constructor(ctx: AssetContext) {
    this.ctx = ctx;
  }

  /** Records with their sorted tags and preview targets. */
  private async views(ownerId: string, rows: readonly AssetRefRow[]): Promise<AssetView[]> {
    const previewIds = rows.map((r) => r.preview_id).filter((id): id is string => Boolean(id));
    const previews = new Map((await this.ctx.repo.findLiveMany(ownerId, previewIds)).map((r) => [r.id, r]));
    const tags = await this.ctx.repo.tagsOf([...rows.map((r) => r.id), ...previews.keys()]);
    return rows.map((row) => {
      const own = sortTags(tags.get(row.id) ?? []);
      const target = row.preview_id ? previews.get(row.preview_id) : row;
      return { row, tags: own, preview: target ? { row: target, tags: sortTags(tags.get(target.id) ?? []) } : undefined };
    });
  }

  /** The record's JSON (with created_new on create answers). */
  async json(ownerId: string, row: AssetRefRow): Promise<AssetJson>;
  async json(ownerId: string, row: AssetRefRow, createdNew: boolean): Promise<AssetJson & { created_new: boolean }>;
  async json(ownerId: string, row: AssetRefRow, createdNew?: boolean): Promise<AssetJson> {
    const [view] = await this.views(ownerId, [row]);
    return createdNew === undefined ? serializeAsset(view) : serializeAsset(view, createdNew);
  }

  /** The owner's live record; another user's id, a deleted record or a malformed id answers 404. */
  async liveRow(ownerId: string, id: string): Promise<AssetRefRow> {
    const row = UUID.test(id) ? await this.ctx.repo.findLive(ownerId, id) : undefined;
    if (!row) throw assetNotFound(id);
    return row;
  }

  async get(ownerId: string, id: string): Promise<AssetJson> {
    return this.json(ownerId, await this.liveRow(ownerId, id));
  }

  /** One page of the owner's live records (those whose content is missing only when asked for by tag). */
  async list(ownerId: string, q: ListQuery): Promise<{ assets: AssetJson[]; total: number; has_more: boolean }> {
    const result = await this.ctx.repo.list(assetFilterOf(ownerId, q), { limit: q.limit, offset: q.offset, sort: q.sort, order: q.order });
    const views = await this.views(ownerId, result.rows);
    return { assets: views.map((v) => serializeAsset(v)), total: result.total, has_more: q.offset + result.rows.length < result.total };
  }

  /** Whether the owner has a live record of that content whose bytes are not known to be missing. */
  async hashExists(ownerId: string, hash: string): Promise<boolean> {
    return this.ctx.repo.ownerHasHash(ownerId, hash, { present: true });
  }

  /** Throws 404 unless previewId is empty or names a live record of the owner. */
  async assertPreview(ownerId: string, previewId: string | null | undefined): Promise<void> {
    if (!previewId) return;
    if (!UUID.test(previewId) || !(await this.ctx.repo.findLive(ownerId, previewId))) {
      throw new ApiError('ASSET_NOT_FOUND', `preview asset ${previewId} not found`, 'preview_id', {}, {}, { preview_id: previewId });
    }
  }

  /** PUT: name, user metadata, preview. The mime type is never changed here. */
  async update(ownerId: string, id: string, spec: UpdateSpec): Promise<AssetJson> {
    if (spec.name !== undefined && !spec.name.trim()) throw new ApiError('INVALID_BODY', 'name must not be empty', 'name');
    if (spec.name === undefined && spec.userMetadata === undefined && spec.previewId === undefined) {
      throw new ApiError('INVALID_BODY', 'nothing to update: give name, user_metadata or preview_id');
    }
    const row = await this.liveRow(ownerId, id);
    if (spec.previewId !== undefined) await this.assertPreview(ownerId, spec.previewId);
    const patch: Partial<AssetRefRow> = { updated_at: this.ctx.now() };
    if (spec.name !== undefined) patch.name = spec.name.trim();
    if (spec.previewId !== undefined) patch.preview_id = spec.previewId;
    let meta;
    if (spec.userMetadata !== undefined) {
      patch.user_metadata = JSON.stringify(spec.userMetadata);
      meta = projectMetadata(row.id, mergeMetadata(JSON.parse(row.system_metadata) as JsonObject, spec.userMetadata));
    }
    await this.ctx.repo.updateRef(row.id, patch, meta);
    return this.json(ownerId, { ...row, ...patch });
  }

  /** Soft delete: the record disappears, the content stays. */
  async delete(ownerId: string, id: string): Promise<void> {
    if (!UUID.test(id) || !(await this.ctx.repo.softDelete(ownerId, id, this.ctx.now()))) throw assetNotFound(id);
  }

  /** Inserts a record; undefined when another live record of the owner took its location first. */
  async create(ownerId: string, r: NewRecord): Promise<AssetRefRow | undefined> {
    const now = this.ctx.now();
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
    return (await this.ctx.repo.insertRef(row, tags, projectMetadata(row.id, mergeMetadata(r.systemMetadata, r.userMetadata)), r.content)) ? row : undefined;
  }

  /** The highest n of the owner's `fileName (n).ext` records in the folder, 0 when none: one query, however many there are. */
  private async highestNumber(ownerId: string, root: string, subfolder: string, fileName: string): Promise<number> {
    const { stem, ext } = nameParts(fileName);
    // Longest first finds the highest number; a name like `a (1) (2).png` sorts among them, so a few are read.
    const names = await this.ctx.repo.longestNumberedNames(ownerId, root, subfolder, stem, ext, 20);
    for (const name of names) {
      const n = numberOf(fileName, name);
      if (n !== undefined) return n;
    }
    return 0;
  }

  /**
   * Creates a record at root/subfolder/fileName, or when taken at `fileName (n).ext` with n after
   * the highest taken (ComfyUI's rename), so every live record has a location of its own. stop is
   * asked after a lost race for a location: a record it answers is returned instead.
   */
  async createAtFreeLocation(
    ownerId: string,
    r: Omit<NewRecord, 'name'> & { name?: string },
    stop?: () => Promise<AssetRefRow | undefined>,
  ): Promise<{ row: AssetRefRow; created: boolean }> {
    const subfolder = r.subfolder ?? '';
    let n = 0;
    // The first insert records the content row, whether or not it finds the location free.
    let content = r.content;
    for (let attempt = 0; attempt < MAX_RENAMES; attempt++) {
      const fileName = n === 0 ? r.fileName : numberedName(r.fileName, n);
      // The insert finds a taken location itself (it inserts nothing): no lookup first.
      const row = await this.create(ownerId, { ...r, name: r.name ?? fileName, fileName, content });
      content = undefined;
      if (row) return { row, created: true };
      // The location is taken, possibly by a concurrent request creating this very record.
      const other = await stop?.();
      if (other) return { row: other, created: false };
      n = n === 0 ? (await this.highestNumber(ownerId, r.root, subfolder, r.fileName)) + 1 : n + 1;
    }
    throw new Error(`no free file name for ${r.fileName} after ${MAX_RENAMES} tries`);
  }
}
