/**
 * OpenAI's Files and Batch APIs under /openai/v1: `/files` (upload for batches, list, read,
 * content, delete) and `/batches` (create, read, list, cancel). Files and batches are the
 * caller's own: another user's are 404.
 */
import type { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import type { MultipartFile } from '@fastify/multipart';
import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ApiError } from '../../core/errors.ts';
import { BATCH_ENDPOINTS } from '../../batches/batch-input.ts';
import { OPENAI_FILE_MAX_BYTES, UPLOAD_PURPOSES, type WrittenFile } from '../../batches/openai-files.ts';
import type { OpenAiFileRow } from '../../storage/schema.ts';
import type { AppServices } from '../services.ts';

const security = [{ bearer: [] }];
const tags = ['openai'];
const FileId = Type.Object({ file_id: Type.String({ minLength: 1 }) });
const BatchId = Type.Object({ batch_id: Type.String({ minLength: 1 }) });

const CreateBatchBody = Type.Object({
  input_file_id: Type.String({ minLength: 1, description: 'a file uploaded with purpose batch' }),
  endpoint: Type.String({ description: `one of ${BATCH_ENDPOINTS.join(', ')}` }),
  completion_window: Type.Literal('24h'),
  metadata: Type.Optional(Type.Union([Type.Record(Type.String({ maxLength: 64 }), Type.String({ maxLength: 512 }), { maxProperties: 16 }), Type.Null()])),
});

/** A file's bytes as a download under its name. */
function sendContent(reply: FastifyReply, { row, stream }: { row: OpenAiFileRow; stream: Readable }): FastifyReply {
  return reply
    .type('application/octet-stream')
    .header('content-length', String(row.bytes))
    .header('content-disposition', `attachment; filename="${row.filename.replace(/["\\\r\n]/g, '_')}"`)
    .send(stream);
}

const tooLarge = () => new ApiError('file_too_large', `file is larger than the ${OPENAI_FILE_MAX_BYTES / 1024 / 1024} MB limit`, 'file');

export const openAiBatchRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  const { openaiFiles: files, batches } = services;

  app.post('/files', {
    schema: {
      tags,
      summary: 'Upload a file for a batch (multipart: `file` and `purpose: batch`), up to 200 MB, streamed to the blob store',
      security,
      consumes: ['multipart/form-data'],
    },
  }, async (request) => {
    if (!request.isMultipart()) throw new ApiError('unsupported_content_type', 'send multipart/form-data with a file part and purpose');
    let purpose: string | undefined;
    let written: WrittenFile | undefined;
    let filename = 'upload.jsonl';
    try {
      for await (const part of request.parts({ limits: { fileSize: OPENAI_FILE_MAX_BYTES, files: 1 } })) {
        if (part.type === 'field') {
          if (part.fieldname === 'purpose') purpose = String(part.value);
          continue;
        }
        const file = part as MultipartFile;
        if (file.fieldname !== 'file' || written) {
          file.file.resume();
          throw new ApiError('invalid_parameter', 'send one file, in the part named file', 'file');
        }
        try {
          written = await files.write(file.file);
        } catch (err) {
          throw (err as { code?: string }).code === 'FST_REQ_FILE_TOO_LARGE' ? tooLarge() : err;
        }
        filename = file.filename || filename;
      }
      if (purpose === undefined) throw new ApiError('missing_parameter', 'purpose is required', 'purpose');
      if (!(UPLOAD_PURPOSES as readonly string[]).includes(purpose)) throw new ApiError('invalid_parameter', `purpose must be one of ${UPLOAD_PURPOSES.join(', ')}`, 'purpose');
      if (!written) throw new ApiError('missing_parameter', 'file is required', 'file');
      return await files.register(request.ctx.principal.userId, written, filename, purpose);
    } catch (err) {
      if (written) await files.discard(written);
      throw err;
    }
  });

  app.get('/files', {
    schema: {
      tags,
      summary: 'Your files, newest first',
      security,
      querystring: Type.Object({
        purpose: Type.Optional(Type.String()),
        limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000 })),
        after: Type.Optional(Type.String({ description: 'the id of the last file of the previous page' })),
      }),
    },
  }, async (request) => files.list(request.ctx.principal.userId, request.query));

  app.get('/files/:file_id', { schema: { tags, summary: 'One of your files', security, params: FileId } },
    async (request) => files.find(request.ctx.principal.userId, request.params.file_id).then((row) => files.objectOf(row)));

  app.get('/files/:file_id/content', { schema: { tags, summary: 'The bytes of one of your files (a batch\'s output: JSON lines)', security, params: FileId } },
    async (request, reply) => sendContent(reply, await files.content(request.ctx.principal.userId, request.params.file_id)));

  app.delete('/files/:file_id', { schema: { tags, summary: 'Delete one of your files', security, params: FileId } },
    async (request) => files.delete(request.ctx.principal.userId, request.params.file_id));

  app.post('/batches', {
    schema: { tags, summary: 'Run the requests of an uploaded file as a batch', description: 'docs/batches.md', security, body: CreateBatchBody },
  }, async (request) => batches.create(request.ctx.principal, request.body));

  app.get('/batches', {
    schema: {
      tags,
      summary: 'Your batches, newest first',
      security,
      querystring: Type.Object({
        after: Type.Optional(Type.String({ description: 'the id of the last batch of the previous page' })),
        limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
      }),
    },
  }, async (request) => batches.list(request.ctx.principal.userId, request.query));

  app.get('/batches/:batch_id', { schema: { tags, summary: 'One of your batches', security, params: BatchId } },
    async (request) => batches.retrieve(request.ctx.principal.userId, request.params.batch_id));

  app.post('/batches/:batch_id/cancel', {
    schema: { tags, summary: 'Cancel a batch: no more lines start; running lines finish', security, params: BatchId },
  }, async (request) => batches.cancel(request.ctx.principal.userId, request.params.batch_id));
};

/** Every user's batches and their files, for the console's batches page (the admin group's). */
export const adminBatchRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  app.get('/admin/batches', {
    schema: {
      tags: ['admin'],
      summary: 'Every user\'s batches, newest first, each with its user_id',
      security,
      querystring: Type.Object({
        after: Type.Optional(Type.String({ description: 'the id of the last batch of the previous page' })),
        limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
      }),
    },
  }, async (request) => services.batches.list(undefined, request.query));

  app.get('/admin/files/:file_id/content', { schema: { tags: ['admin'], summary: 'The bytes of any user\'s file of /openai/v1/files', security, params: FileId } },
    async (request, reply) => sendContent(reply, await services.openaiFiles.content(undefined, request.params.file_id)));
};
