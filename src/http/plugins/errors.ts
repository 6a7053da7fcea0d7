import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, type ErrorShape } from '../../core/errors.ts';
import { validationError, type AjvLikeError } from '../../core/validation-errors.ts';
import { IdempotentReplay } from '../../limits/idempotency.ts';
import { sendReplay } from './admission.ts';
import { isDatabaseUnavailable } from '../../storage/database-unavailable.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Error body shape of this route; by default chosen from the URL prefix. */
    errorShape?: ErrorShape;
  }
}

function fromValidation(err: FastifyError, shape: ErrorShape): ApiError {
  const context = err.validationContext ?? 'body';
  const error = validationError(err.validation![0] as unknown as AjvLikeError, context);
  // The asset registry keeps ComfyUI's two validation codes; the field goes in details.
  if (shape === 'asset') return new ApiError(context === 'querystring' ? 'INVALID_QUERY' : 'INVALID_BODY', error.message, error.param);
  return error;
}

/** What busboy says of a multipart body it cannot parse (it has no error codes). */
const MULTIPART_PARSE_ERROR = /^(Multipart: Boundary not found|Boundary required|Unexpected end of multipart data|\w+ terminated early due to unexpected end of multipart data)$/;
/** PostgreSQL refusals of text that SQLite stores: NUL characters, invalid encodings. */
const PG_BAD_TEXT = new Set(['22021', '22P05']);
/** When a caller turned away during a database outage tries again: the pool reconnects on the first call after the database's return. */
const DATABASE_RETRY_AFTER_SECONDS = '1';

/** Maps anything thrown while handling a request to an ApiError. */
export function toApiError(err: FastifyError, shape: ErrorShape): ApiError {
  if (err instanceof ApiError) return err;
  if (err.validation) return fromValidation(err, shape);
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ApiError('invalid_json', `request body is not valid JSON: ${err.message}`);
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError('invalid_json', 'the body is empty though its Content-Type is JSON', 'body');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('request_too_large', 'request body is too large');
    case 'FST_REQ_FILE_TOO_LARGE':
      // Each route has its own limit; the route's own check names it when it can.
      return new ApiError('file_too_large', 'file is larger than the upload limit', 'file');
    case 'FST_FILES_LIMIT':
    case 'FST_PARTS_LIMIT':
    case 'FST_FIELDS_LIMIT':
      return new ApiError('invalid_request', `too many parts in the multipart body: ${err.message}`);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
      return new ApiError('unsupported_content_type', `unsupported Content-Type: ${err.message}`);
  }
  if (err.code === 'ERR_STREAM_PREMATURE_CLOSE' || err.code === 'FST_MP_PREMATURE_CLOSE' || MULTIPART_PARSE_ERROR.test(err.message)) {
    return new ApiError('invalid_request', `malformed multipart body: ${err.message}`);
  }
  if (isDatabaseUnavailable(err)) {
    return new ApiError('service_unavailable', 'the database is unavailable; try again shortly', null, {}, { 'Retry-After': DATABASE_RETRY_AFTER_SECONDS });
  }
  if (typeof err.code === 'string' && PG_BAD_TEXT.has(err.code)) {
    return new ApiError('invalid_request', 'a text value cannot be stored (it contains a NUL character or an invalid byte sequence)');
  }
  if (err instanceof SyntaxError && err.statusCode === 400) return new ApiError('invalid_json', `request body is not valid JSON: ${err.message}`);
  if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) return new ApiError('invalid_request', err.message);
  return new ApiError('internal_error', 'internal error');
}

export function errorShapeOf(request: FastifyRequest): ErrorShape {
  const configured = request.routeOptions.config?.errorShape;
  if (configured) return configured;
  const url = request.routeOptions.url ?? request.url;
  // A path under /anthropic that names no route has no route config to say so.
  if (url.startsWith('/anthropic/')) return 'anthropic';
  return url.startsWith('/api/') || url.startsWith('/upload/') ? 'asset' : 'api';
}

export function sendError(request: FastifyRequest, reply: FastifyReply, error: ApiError): FastifyReply {
  for (const [name, value] of Object.entries(error.headers)) reply.header(name, value);
  return reply.code(error.status).type('application/json; charset=utf-8').send(error.toBody(errorShapeOf(request), request.id));
}

/** The only place errors become bodies. */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    // Not an error: a multipart call that repeats an earlier one, found once its route read the body.
    if (err instanceof IdempotentReplay) return sendReplay(reply, err.answer);
    const error = toApiError(err, errorShapeOf(request));
    if (error.status >= 500) request.log.error({ err }, 'request failed');
    return sendError(request, reply, error);
  });
  app.setNotFoundHandler((request, reply) =>
    sendError(request, reply, new ApiError('route_not_found', `no route ${request.method} ${request.url.split('?')[0]}`)),
  );
}
