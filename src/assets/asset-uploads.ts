import { ApiError } from '../core/errors.ts';
import { guessMimeType } from '../core/mime-type.ts';
import type { AssetRefRow } from '../storage/schema.ts';
import type { AssetContext } from './asset-context.ts';
import type { AssetIngest, IngestedContent } from './asset-ingest.ts';
import type { JsonObject } from './asset-metadata.ts';
import { MAX_NAME_LENGTH, MAX_RENAMES, numberedName, safeFileName } from './asset-names.ts';
import type { AssetJson } from './asset-json.ts';
import type { AssetRecords } from './asset-records.ts';
import { assertNoSystemTags, MISSING_TAG, rootTagOf, tagsForLocation, withRootTag, type RootTag } from './asset-tags.ts';

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

/** A record about to be created by register: everything that can be refused is checked. */
interface PreparedRecord {
  name: string;
  /** File name asked for; numbered when its location is taken. */
  fileName: string;
  root: RootTag;
  tags: string[];
  mimeType: string | null;
}

/**
 * Records clients create: POST /api/assets (upload, or a hash of content they have),
 * POST /api/assets/from-hash and ComfyUI's POST /upload/image. Nothing is stored when a
 * request is refused.
 */
export class AssetUploads {
  private readonly ctx: AssetContext;
  private readonly content: AssetIngest;
  private readonly records: AssetRecords;

  constructor(
    ctx: AssetContext,
    content: AssetIngest,
    records: AssetRecords,
  ) {
    this.ctx = ctx;
    this.content = content;
    this.records = records;
  }

  /**
   * Everything about a new record that can be refused, checked before any content is stored:
   * tags, preview, name and file name. The root tag is added when the tags lack one.
   */
  private async prepare(ownerId: string, content: { hash: string; head?: Buffer }, spec: CreateSpec): Promise<PreparedRecord> {
    assertNoSystemTags(spec.tags);
    if (spec.tags.length === 0) throw new ApiError('INVALID_BODY', 'tags must be a non-empty list', 'tags');
    await this.records.assertPreview(ownerId, spec.previewId);
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
        patch.updated_at = this.ctx.now();
        await this.ctx.repo.updateRef(existing.id, patch);
      }
      return { asset: await this.records.json(ownerId, { ...existing, ...patch }, false), createdNew: false };
    };
    const sameRecord = () => this.ctx.repo.findLiveByHashAndName(ownerId, content.hash, p.name);
    const userHad = await this.ctx.repo.ownerHasHash(ownerId, content.hash);
    if (userHad) {
      const existing = await sameRecord();
      if (existing) return reuse(existing);
    }
    const { row, created } = await this.records.createAtFreeLocation(ownerId, {
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
    return { asset: await this.records.json(ownerId, row, !userHad), createdNew: !userHad };
  }

  /**
   * POST /api/assets: files the ingested content under its hash and registers it. A supplied
   * hash that differs from the content's answers 409 HASH_MISMATCH; empty content 400.
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
      await this.content.discard(ingested);
      throw err;
    }
    return this.content.withCommitted(ingested, () => this.register(ownerId, ingested, prepared, spec, 'upload'));
  }

  /** A new record for content the user already has (POST /api/assets/from-hash, or upload with only a hash). */
  async createFromHash(ownerId: string, hash: string, spec: CreateSpec): Promise<Created> {
    if (!(await this.records.hashExists(ownerId, hash))) {
      throw new ApiError('ASSET_NOT_FOUND', `no content with hash ${hash}`, 'hash', {}, {}, { hash });
    }
    const prepared = await this.prepare(ownerId, { hash }, spec);
    const size = await this.ctx.repo.contentSize(hash);
    return this.register(ownerId, { hash, size: size ?? 0 }, prepared, spec, 'hash');
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
      await this.content.discard(ingested);
      throw err;
    }
    const sniffed = guessMimeType(spec.fileName, ingested.head);
    const mimeType = sniffed !== 'application/octet-stream' ? sniffed : spec.partMimeType ?? null;
    return this.content.withCommitted(ingested, async () => {
      let name = spec.fileName;
      let row: AssetRefRow | undefined;
      for (let n = 1, attempt = 0; n <= MAX_RENAMES + 1 && attempt <= 2 * MAX_RENAMES; attempt++) {
        const existing = await this.ctx.repo.findOccupant(ownerId, spec.type, spec.subfolder, name);
        if (existing) {
          if (existing.asset_hash === ingested.hash || spec.overwrite) {
            row = existing;
            break;
          }
          name = numberedName(spec.fileName, n++);
          continue;
        }
        row = await this.records.create(ownerId, {
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
        if (row) return { name, subfolder: spec.subfolder, type: spec.type, asset: await this.records.json(ownerId, row) };
        // Another upload took the name meanwhile: look at it again.
      }
      if (!row) throw new Error(`no free file name for ${spec.fileName} after ${MAX_RENAMES} tries`);
      if (row.asset_hash !== ingested.hash) {
        const patch: Partial<AssetRefRow> = { asset_hash: ingested.hash, size: ingested.size, mime_type: mimeType, updated_at: this.ctx.now() };
        await this.ctx.repo.updateRef(row.id, patch);
        await this.ctx.repo.removeTags(row.id, [MISSING_TAG]);
        row = { ...row, ...patch };
      }
      await this.ctx.repo.addTags(row.id, tags, 'manual', this.ctx.now());
      return { name, subfolder: spec.subfolder, type: spec.type, asset: await this.records.json(ownerId, row) };
    });
  }
}
