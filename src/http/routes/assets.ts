import type { FastifyReply, FastifyRequest } from 'fastify';
import type { MultipartFile } from '@fastify/multipart';
import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ApiError } from '../../core/errors.ts';
import { looksLikeAssetHash, parseAssetHash } from '../../assets/asset-hash.ts';
import { parseJsonObject, type JsonObject } from '../../assets/asset-metadata.ts';
import { normalizeTags, parseTagFields, parseTagQuery, type RootTag } from '../../assets/asset-tags.ts';
import type { IngestedContent } from '../../assets/asset-ingest.ts';
import { normalizeSubfolder, safeFileName } from '../../assets/asset-names.ts';
import type { AssetService } from '../../assets/asset-service.ts';
import type { OpenedAsset } from '../../assets/asset-view.ts';
import type { AppServices } from '../services.ts';

const security = [{ bearer: [] }];
const tags = ['assets'];

const JsonObjectSchema = Type.Object({}, { additionalProperties: true });

const Asset = Type.Object({
  id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  asset_hash: Type.String({ description: 'blake3:<64 lowercase hex>' }),
  hash: Type.String({ description: 'same as asset_hash' }),
  size: Type.Integer(),
  mime_type: Type.Optional(Type.String()),
  tags: Type.Array(Type.String(), { description: 'alphabetical' }),
  user_metadata: JsonObjectSchema,
  metadata: Type.Optional(JsonObjectSchema),
  is_immutable: Type.Boolean(),
  job_id: Type.Optional(Type.String()),
  prompt_id: Type.Optional(Type.String({ description: 'deprecated alias of job_id' })),
  preview_id: Type.Optional(Type.String()),
  preview_url: Type.Optional(Type.String()),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
});
const AssetCreated = Type.Object({ ...Asset.properties, created_new: Type.Boolean() });

const ErrorBody = Type.Object({ error: Type.Object({ code: Type.String(), message: Type.String(), details: JsonObjectSchema }) });

const IdParams = Type.Object({ id: Type.String() });

const TagFilterQuery = {
  include_tags: Type.Optional(Type.Array(Type.String(), { description: 'records with all of these tags (comma-separated or repeated)' })),
  exclude_tags: Type.Optional(Type.Array(Type.String(), { description: 'records with none of these tags' })),
  name_contains: Type.Optional(Type.String({ description: 'case-insensitive substring of the name' })),
  metadata_filter: Type.Optional(Type.String({ description: 'JSON object; equality on system metadata merged with user metadata' })),
};

const ListQuery = Type.Object({
  ...TagFilterQuery,
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 20 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 2_147_483_647, default: 0 })),
  sort: Type.Optional(Type.Enum(['name', 'created_at', 'updated_at', 'size'], { default: 'created_at' })),
  order: Type.Optional(Type.Enum(['asc', 'desc'], { default: 'desc' })),
});

const RefineQuery = Type.Object({
  ...TagFilterQuery,
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'most tags returned' })),
});

const TagsQuery = Type.Object({
  prefix: Type.Optional(Type.String({ maxLength: 256 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 2_147_483_647, default: 0 })),
  order: Type.Optional(Type.Enum(['count_desc', 'name_asc'], { default: 'count_desc' })),
});

// Required fields are checked in the handlers (requiredField) so a missing one answers INVALID_BODY /
// INVALID_QUERY like every other validation failure of the registry.
const TagsBody = Type.Object({ tags: Type.Optional(Type.Array(Type.String(), { minItems: 1, description: 'required' })) });

const ViewQuery = Type.Object({
  filename: Type.Optional(Type.String({ minLength: 1, description: 'required: a file name, or blake3:<hex> to resolve content by hash' })),
  subfolder: Type.Optional(Type.String()),
  type: Type.Optional(Type.Enum(['input', 'output', 'temp'], { default: 'output' })),
});

const FromHashBody = Type.Object({
  hash: Type.Optional(Type.String({ description: 'required: blake3:<64 hex>' })),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
  tags: Type.Optional(Type.Array(Type.String(), { minItems: 1, description: 'required' })),
  mime_type: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  preview_id: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  user_metadata: Type.Optional(JsonObjectSchema),
});

const UpdateBody = Type.Object({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
  user_metadata: Type.Optional(JsonObjectSchema),
  preview_id: Type.Optional(Type.Union([Type.String(), Type.Null()])),
}, { description: 'mime_type is not accepted here and is ignored' });

const UploadImageResult = Type.Object({ name: Type.String(), subfolder: Type.String(), type: Type.String(), asset: Asset });

function metadataFilterOf(text: string | undefined): JsonObject | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  return parseJsonObject(text, 'metadata_filter', 'INVALID_QUERY');
}

function filtersOf(q: { include_tags?: string[]; exclude_tags?: string[]; name_contains?: string; metadata_filter?: string }) {
  return {
    includeTags: parseTagQuery(q.include_tags),
    excludeTags: parseTagQuery(q.exclude_tags),
    nameContains: q.name_contains?.trim() || undefined,
    metadataFilter: metadataFilterOf(q.metadata_filter),
  };
}

function requiredField<T>(value: T | undefined, name: string, code: 'INVALID_BODY' | 'INVALID_QUERY' = 'INVALID_BODY'): T {
  if (value === undefined) throw new ApiError(code, `${name} is required`, name);
  return value;
}

function tagsOfBody(list: unknown[] | undefined): string[] {
  const out = normalizeTags(requiredField(list, 'tags'));
  if (out.length === 0) throw new ApiError('INVALID_BODY', 'tags must hold at least one non-empty tag', 'tags');
  return out;
}

function sendFile(reply: FastifyReply, opened: OpenedAsset, disposition: 'inline' | 'attachment'): FastifyReply {
  return reply
    .type(opened.mimeType)
    .header('content-length', opened.size)
    .header('x-content-type-options', 'nosniff')
    .header('content-disposition', `${disposition}; filename*=UTF-8''${encodeURIComponent(opened.fileName)}`)
    .send(opened.stream);
}

interface ParsedMultipart {
  fields: Map<string, string[]>;
  ingested?: IngestedContent;
  fileName?: string;
  mimeType?: string;
}

/**
 * Reads a multipart request: the one file part named `fileField` is streamed to a temporary
 * blob while hashed; text fields are collected. A rejected field (`rejectFields`) or an
 * oversized file stops storing, drains the rest and fails once the body has been read.
 */
async function readMultipart(request: FastifyRequest, assets: AssetService, fileField: string, rejectFields: readonly string[] = []): Promise<ParsedMultipart> {
  if (!request.isMultipart()) throw new ApiError('unsupported_content_type', 'send multipart/form-data');
  const out: ParsedMultipart = { fields: new Map() };
  let failure: ApiError | undefined;
  try {
    // throwFileSizeLimit is read by @fastify/multipart though its types leave it out; the size check is ours below.
    const options = { limits: { fileSize: assets.maxUploadBytes }, throwFileSizeLimit: false } as Parameters<FastifyRequest['parts']>[0];
    for await (const part of request.parts(options)) {
      if (part.type === 'field') {
        if (rejectFields.includes(part.fieldname)) failure ??= new ApiError('UNSUPPORTED_FIELD', `${part.fieldname} cannot be given: the server assigns it`, part.fieldname, {}, {}, { field: part.fieldname });
        if (part.valueTruncated) failure ??= new ApiError('INVALID_BODY', `${part.fieldname} is too long`, part.fieldname);
        const values = out.fields.get(part.fieldname) ?? [];
        values.push(String(part.value));
        out.fields.set(part.fieldname, values);
        continue;
      }
      const file = part as MultipartFile;
      if (file.fieldname !== fileField || out.ingested || failure) {
        if (file.fieldname === fileField && out.ingested) failure ??= new ApiError('INVALID_BODY', `send exactly one ${fileField}`, fileField);
        file.file.resume();
        continue;
      }
      out.fileName = file.filename || undefined;
      out.mimeType = file.mimetype && file.mimetype !== 'application/octet-stream' ? file.mimetype : undefined;
      out.ingested = await assets.ingest.ingest(file.file);
      if (file.file.truncated) {
        failure ??= new ApiError('file_too_large', `${fileField} is larger than the ${assets.maxUploadBytes} byte limit of the asset registry`, fileField);
      }
    }
  } catch (err) {
    if (out.ingested) await assets.ingest.discard(out.ingested);
    throw err;
  }
  if (failure) {
    if (out.ingested) await assets.ingest.discard(out.ingested);
    throw failure;
  }
  return out;
}

function lastField(fields: Map<string, string[]>, name: string): string | undefined {
  const values = fields.get(name);
  const value = values?.[values.length - 1]?.trim();
  return value ? value : undefined;
}

/** The asset registry: /api/assets, /api/tags, /api/view, /upload/image. */
export const assetRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  const { assets } = services;

  app.head('/api/assets/hash/:hash', {
    config: { swagger: { exposeHeadRoute: true } },
    schema: { tags, security, summary: 'Whether content with this hash exists among your assets (200 / 404)', params: Type.Object({ hash: Type.String() }) },
  }, async (request, reply) => {
    const hash = parseAssetHash(request.params.hash);
    if (!(await assets.records.hashExists(request.ctx.principal.userId, hash))) throw new ApiError('ASSET_NOT_FOUND', `no content with hash ${hash}`, null, {}, {}, { hash });
    return reply.code(200).send();
  });

  app.get('/api/assets', {
    schema: { tags, security, summary: 'List your assets', querystring: ListQuery, response: { 200: Type.Object({ assets: Type.Array(Asset), total: Type.Integer(), has_more: Type.Boolean() }), 400: ErrorBody } },
  }, async (request) => {
    const q = request.query;
    return assets.records.list(request.ctx.principal.userId, {
      ...filtersOf(q),
      limit: q.limit ?? 20,
      offset: q.offset ?? 0,
      sort: q.sort ?? 'created_at',
      order: q.order ?? 'desc',
    });
  });

  app.get('/api/assets/tags/refine', {
    schema: { tags, security, summary: 'Tag histogram over the assets a listing with these filters returns', querystring: RefineQuery, response: { 200: Type.Object({ tag_counts: Type.Record(Type.String(), Type.Integer()) }) } },
  }, async (request) => ({
    tag_counts: await assets.tags.refine(request.ctx.principal.userId, { ...filtersOf(request.query), limit: request.query.limit ?? 100 }),
  }));

  app.post('/api/assets/from-hash', {
    schema: { tags, security, summary: 'Create an asset from content you already have, by hash', body: FromHashBody, response: { 201: AssetCreated, 404: ErrorBody } },
  }, async (request, reply) => {
    const body = request.body;
    const hash = parseAssetHash(requiredField(body.hash, 'hash'));
    const created = await assets.uploads.createFromHash(request.ctx.principal.userId, hash, {
      name: body.name,
      tags: tagsOfBody(body.tags),
      userMetadata: (body.user_metadata ?? {}) as JsonObject,
      mimeType: body.mime_type,
      previewId: body.preview_id,
    });
    return reply.code(201).send(created.asset);
  });

  app.post('/api/assets', {
    schema: {
      tags,
      security,
      summary: 'Upload an asset (multipart: file, tags, name, user_metadata, hash, mime_type, preview_id); 201 new content, 200 content you already had',
      consumes: ['multipart/form-data'],
      response: { 200: AssetCreated, 201: AssetCreated },
    },
  }, async (request, reply) => {
    const userId = request.ctx.principal.userId;
    const form = await readMultipart(request, assets, 'file', ['id']);
    const { fields, ingested } = form;
    try {
      const tagValues = fields.get('tags') ?? [];
      const tagList = parseTagFields(tagValues);
      if (tagList.length === 0) throw new ApiError('INVALID_BODY', 'tags must be a non-empty list', 'tags');
      const hashText = lastField(fields, 'hash');
      const metadataText = lastField(fields, 'user_metadata');
      const spec = {
        name: lastField(fields, 'name'),
        clientFileName: form.fileName,
        partMimeType: form.mimeType,
        tags: tagList,
        userMetadata: metadataText ? parseJsonObject(metadataText, 'user_metadata') : {},
        mimeType: lastField(fields, 'mime_type'),
        previewId: lastField(fields, 'preview_id'),
        expectedHash: hashText ? parseAssetHash(hashText) : undefined,
      };
      if (spec.name && spec.name.length > 512) throw new ApiError('INVALID_BODY', 'name is longer than 512 characters', 'name');
      let created;
      if (ingested) {
        created = await assets.uploads.upload(userId, ingested, spec);
      } else if (spec.expectedHash) {
        if (!(await assets.records.hashExists(userId, spec.expectedHash))) throw new ApiError('MISSING_INPUT', 'no file was sent and no content with that hash is known', 'file');
        created = await assets.uploads.createFromHash(userId, spec.expectedHash, spec);
      } else {
        throw new ApiError('MISSING_FILE', 'file is required', 'file');
      }
      return reply.code(created.createdNew ? 201 : 200).send(created.asset);
    } catch (err) {
      // upload() files or discards the content itself; anything thrown before it leaves the temp blob.
      if (ingested) await assets.ingest.discard(ingested).catch(() => undefined);
      throw err;
    }
  });

  app.get('/api/assets/:id', {
    schema: { tags, security, summary: 'One of your assets', params: IdParams, response: { 200: Asset, 404: ErrorBody } },
  }, async (request) => assets.records.get(request.ctx.principal.userId, request.params.id));

  app.get('/api/assets/:id/content', {
    schema: {
      tags,
      security,
      summary: 'The bytes of an asset, with its recorded mime type',
      params: IdParams,
      querystring: Type.Object({ disposition: Type.Optional(Type.Enum(['inline', 'attachment'], { default: 'attachment' })) }),
    },
  }, async (request, reply) => {
    const opened = await assets.view.openContent(request.ctx.principal.userId, request.params.id);
    return sendFile(reply, opened, request.query.disposition ?? 'attachment');
  });

  app.put('/api/assets/:id', {
    schema: { tags, security, summary: 'Change name, user metadata or preview; mime_type is never changed here', params: IdParams, body: UpdateBody, response: { 200: Asset, 404: ErrorBody } },
  }, async (request) => {
    const body = request.body;
    if (body.name === undefined && body.user_metadata === undefined && body.preview_id === undefined) {
      throw new ApiError('INVALID_BODY', 'give at least one of name, user_metadata, preview_id');
    }
    return assets.records.update(request.ctx.principal.userId, request.params.id, {
      name: body.name,
      userMetadata: body.user_metadata as JsonObject | undefined,
      previewId: body.preview_id === '' ? null : body.preview_id,
    });
  });

  app.delete('/api/assets/:id', {
    schema: { tags, security, summary: 'Delete an asset (soft delete: the content is kept)', params: IdParams },
  }, async (request, reply) => {
    await assets.records.delete(request.ctx.principal.userId, request.params.id);
    return reply.code(204).send();
  });

  app.post('/api/assets/:id/tags', {
    schema: {
      tags,
      security,
      summary: 'Add tags to an asset',
      params: IdParams,
      body: TagsBody,
      response: { 200: Type.Object({ added: Type.Array(Type.String()), already_present: Type.Array(Type.String()), total_tags: Type.Array(Type.String()) }) },
    },
  }, async (request) => assets.tags.add(request.ctx.principal.userId, request.params.id, tagsOfBody(request.body.tags)));

  app.delete('/api/assets/:id/tags', {
    schema: {
      tags,
      security,
      summary: 'Remove tags from an asset',
      params: IdParams,
      body: TagsBody,
      response: { 200: Type.Object({ removed: Type.Array(Type.String()), not_present: Type.Array(Type.String()), total_tags: Type.Array(Type.String()) }) },
    },
  }, async (request) => assets.tags.remove(request.ctx.principal.userId, request.params.id, tagsOfBody(request.body.tags)));

  app.get('/api/tags', {
    schema: {
      tags,
      security,
      summary: 'Tags of your assets with usage counts',
      querystring: TagsQuery,
      response: { 200: Type.Object({ tags: Type.Array(Type.Object({ name: Type.String(), count: Type.Integer() })), total: Type.Integer(), has_more: Type.Boolean() }) },
    },
  }, async (request) => {
    const q = request.query;
    return assets.tags.list(request.ctx.principal.userId, { prefix: q.prefix, limit: q.limit ?? 100, offset: q.offset ?? 0, order: q.order ?? 'count_desc' });
  });

  app.get('/api/view', {
    schema: { tags, security, summary: 'A file by name, subfolder and type, or by filename=blake3:<hex>; served with its recorded mime type', querystring: ViewQuery },
  }, async (request, reply) => {
    const q = request.query;
    const filename = requiredField(q.filename, 'filename', 'INVALID_QUERY');
    const opened = await assets.view.openView(request.ctx.principal.userId, {
      hash: looksLikeAssetHash(filename) ? parseAssetHash(filename, 'filename') : undefined,
      filename,
      subfolder: normalizeSubfolder(q.subfolder),
      type: (q.type ?? 'output') as RootTag,
    });
    return sendFile(reply, opened, 'inline');
  });

  app.post('/upload/image', {
    schema: {
      tags,
      security,
      summary: 'Upload an image (multipart: image, type input|output|temp, subfolder, overwrite); it is registered as an asset in place',
      consumes: ['multipart/form-data'],
      response: { 200: UploadImageResult },
    },
  }, async (request) => {
    const form = await readMultipart(request, assets, 'image');
    const { fields, ingested } = form;
    if (!ingested) throw new ApiError('MISSING_FILE', 'image is required', 'image');
    try {
      const type = lastField(form.fields, 'type') ?? 'input';
      if (type !== 'input' && type !== 'output' && type !== 'temp') throw new ApiError('INVALID_BODY', 'type must be one of input, output, temp', 'type');
      const overwrite = lastField(fields, 'overwrite');
      return await assets.uploads.uploadImage(request.ctx.principal.userId, ingested, {
        fileName: safeFileName(form.fileName, 'image'),
        type,
        subfolder: normalizeSubfolder(lastField(fields, 'subfolder')),
        overwrite: overwrite === 'true' || overwrite === '1',
        partMimeType: form.mimeType,
      });
    } catch (err) {
      await assets.ingest.discard(ingested).catch(() => undefined);
      throw err;
    }
  });
};
