import type { MultipartFile } from '@fastify/multipart';
import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ApiError } from '../../core/errors.ts';
import { guessMimeType } from '../../core/mime-type.ts';
import type { PendingFile } from '../../files/file-service.ts';
import type { AppServices } from '../services.ts';

const UploadResult = Type.Object({
  code: Type.Number(),
  message: Type.String(),
  data: Type.Object({ success: Type.Boolean(), url: Type.Optional(Type.String()) }),
});

/** Types a browser may render in place; anything else (HTML, SVG, scripts) is served as a download. */
const INLINE_TYPE = /^(image\/(png|jpeg|webp|gif|bmp|avif)|audio\/[\w.+-]+|video\/[\w.+-]+|model\/[\w.+-]+|text\/plain|application\/(json|pdf|octet-stream))$/;

const DATA_URI = /^data:([^;,]+)?(?:;[^,]*)?;base64,/i;
const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

/** A `file` field sent as text: base64, optionally behind an image data-URI prefix. */
/** 413 naming the configured limit. */
function fileTooLarge(maxBytes: number): ApiError {
  return new ApiError('file_too_large', `file is larger than the ${+(maxBytes / 1024 / 1024).toFixed(2)} MB limit`, 'file');
}

function decodeBase64Field(value: string, maxBytes: number): { bytes: Buffer; mimeType?: string } {
  let text = value.trim();
  let mimeType: string | undefined;
  const uri = DATA_URI.exec(text);
  if (uri) {
    mimeType = uri[1]?.toLowerCase();
    if (!mimeType?.startsWith('image/')) throw new ApiError('invalid_parameter', 'a data-URI prefix is accepted for images only', 'file');
    text = text.slice(uri[0].length);
  } else if (text.startsWith('data:')) {
    throw new ApiError('invalid_parameter', 'file: malformed data URI (expected data:image/<type>;base64,<data>)', 'file');
  }
  text = text.replace(/\s+/g, '');
  if (text === '' || !BASE64.test(text)) throw new ApiError('invalid_parameter', 'file must be a binary part or a base64 string', 'file');
  const bytes = Buffer.from(text, 'base64');
  if (bytes.length > maxBytes) throw fileTooLarge(maxBytes);
  return { bytes, mimeType };
}

/** Defaults a missing extension from the content type so served files keep a useful name. */
function defaultName(id: string, mimeType: string): string {
  const ext = mimeType.split('/')[1]?.replace(/[^a-z0-9]/gi, '');
  return ext && mimeType !== 'application/octet-stream' ? `${id}.${ext}` : id;
}

/** POST /v1/files/upload. */
export const fileUploadRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  const { files, settings } = services;

  app.post('/v1/files/upload', {
    config: { errorShape: 'envelope' },
    schema: {
      tags: ['files'],
      summary: 'Upload a temporary file (multipart: file as a binary part or base64 text, fileName)',
      security: [{ bearer: [] }],
      consumes: ['multipart/form-data'],
      response: { 200: UploadResult },
    },
  }, async (request) => {
    if (!request.isMultipart()) throw new ApiError('unsupported_content_type', 'send multipart/form-data with a file part');
    let fileName: string | undefined;
    let written: PendingFile | undefined;
    let decoded: { bytes: Buffer; mimeType?: string } | undefined;
    let partMime: string | undefined;
    let partName: string | undefined;
    try {
      for await (const part of request.parts()) {
        if (part.type === 'field') {
          if (part.fieldname === 'fileName') fileName = String(part.value).trim() || undefined;
          else if (part.fieldname === 'file') {
            if (written || decoded) throw new ApiError('invalid_parameter', 'send exactly one file', 'file');
            if (part.valueTruncated) throw fileTooLarge(settings.maxFileBytes);
            decoded = decodeBase64Field(String(part.value), settings.maxFileBytes);
          }
          continue;
        }
        const filePart = part as MultipartFile;
        if (filePart.fieldname !== 'file') {
          filePart.file.resume();
          continue;
        }
        if (written || decoded) throw new ApiError('invalid_parameter', 'send exactly one file', 'file');
        partName = filePart.filename || undefined;
        partMime = filePart.mimetype && filePart.mimetype !== 'application/octet-stream' ? filePart.mimetype : undefined;
        written = await files.write(filePart.file);
        if (filePart.file.truncated) throw fileTooLarge(settings.maxFileBytes);
      }
      if (decoded) written = await files.write(decoded.bytes);
      if (!written) throw new ApiError('missing_parameter', 'file is required', 'file');
      if (written.size === 0) throw new ApiError('invalid_parameter', 'file is empty', 'file');
      const name = fileName ?? partName;
      const mimeType = decoded?.mimeType ?? partMime ?? guessMimeType(name, await files.head(written));
      const saved = await files.register(request.ctx.principal.userId, written, name ?? defaultName(`upload-${written.id.slice(0, 8)}`, mimeType), mimeType);
      return { code: 0, message: 'success', data: { success: true, url: saved.url } };
    } catch (err) {
      if (written) await files.discard(written);
      throw (err as { code?: string }).code === 'FST_REQ_FILE_TOO_LARGE' ? fileTooLarge(settings.maxFileBytes) : err;
    }
  });
};

/** The longest a served file may be cached. */
const YEAR_SECONDS = 365 * 24 * 60 * 60;

/** The public /files/… URLs (no token: the URL is the secret). */
export const servedFileRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  const { files, settings } = services;

  app.get('/files/:id/:fileName', {
    schema: { tags: ['files'], summary: 'A temporary file (no token: the URL is the secret)', params: Type.Object({ id: Type.String(), fileName: Type.String() }) },
  }, async (request, reply) => {
    const notFound = () => new ApiError('file_not_found', 'file not found or expired');
    const row = await files.find(request.params.id, request.params.fileName);
    if (!row && (await files.isExpiredOutput(request.params.id, request.params.fileName))) throw new ApiError('file_expired', 'this task output has expired and was deleted (OUTPUT_RETENTION_DAYS)');
    if (!row) throw notFound();
    // An output kept forever (or past its expiry while an asset keeps it) is cached for a year at most.
    const secondsLeft = Math.min(YEAR_SECONDS, Math.max(0, Math.floor((row.expires_at - Date.now()) / 1000)));
    const contentDisposition = `${INLINE_TYPE.test(row.mime_type) ? 'inline' : 'attachment'}; filename*=UTF-8''${encodeURIComponent(row.file_name)}`;
    const cacheControl = `private, max-age=${secondsLeft}`;
    if (settings.filesDelivery === 'redirect') {
      // The bucket's origin serves the bytes, so they cannot run script on the API's origin.
      const ttlSeconds = Math.max(1, Math.min(settings.filesRedirectTtlSeconds, secondsLeft));
      const location = await files.presignedUrl(row, { ttlSeconds, contentType: row.mime_type, contentDisposition, cacheControl });
      // Not cached: each request gets a URL of its own that is still valid.
      return reply.code(302).header('location', location).header('cache-control', 'no-store').send();
    }
    const stream = await files.read(row);
    if (!stream) throw notFound();
    return reply
      .type(row.mime_type)
      .header('content-length', row.size)
      .header('x-content-type-options', 'nosniff')
      // Uploaded bytes are served on the API's origin: never let them run script there.
      .header('content-security-policy', 'sandbox')
      .header('content-disposition', contentDisposition)
      .header('cache-control', cacheControl)
      .send(stream);
  });
};
