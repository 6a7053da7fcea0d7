/**
 * The one table of API errors. Domain code throws ApiError with a code from
 * here; only the HTTP error plugin turns it into a body.
 */
export const ERROR_TYPES = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  409: 'conflict_error',
  413: 'invalid_request_error',
  422: 'invalid_request_error',
  429: 'rate_limit_error',
  500: 'api_error',
  502: 'upstream_error',
  503: 'api_error',
  504: 'upstream_error',
} as const;

export type ErrorStatus = keyof typeof ERROR_TYPES;

/** Stable codes with their HTTP status; a code is never reused with another status. */
export const ERROR_CODES = {
  invalid_json: 400,
  invalid_request: 400,
  invalid_parameter: 400,
  invalid_deadline: 400,
  missing_parameter: 400,
  unsupported_parameter: 400,
  unsupported_content_type: 400,
  model_capability_mismatch: 400,
  model_disabled: 400,
  // 3D request rules.
  multiview_front_required: 400,
  view_count_unsupported: 400,
  view_type_unsupported: 400,
  face_limit_out_of_range: 400,
  invalid_rigging_model_version: 400,
  empty_animation: 400,
  prompt_too_long: 400,
  history_source_unsupported: 400,
  // A URL the gateway will not fetch for a caller.
  url_not_allowed: 400,
  callback_url_not_set: 400,
  invalid_idempotency_key: 400,
  // A secret (an API key, an MCP header value) cannot be stored without GENGATE_SECRET_KEY.
  secret_key_not_configured: 400,
  missing_api_key: 401,
  invalid_api_key: 401,
  admin_required: 403,
  route_not_found: 404,
  model_not_found: 404,
  task_not_found: 404,
  token_not_found: 404,
  file_not_found: 404,
  request_not_found: 404,
  history_not_found: 404,
  resource_not_found: 404,
  skill_not_found: 404,
  agent_not_found: 404,
  document_not_found: 404,
  delivery_not_found: 404,
  previous_response_not_found: 404,
  channel_not_found: 404,
  provider_not_found: 404,
  mcp_server_not_found: 404,
  task_already_finished: 409,
  task_not_cancellable: 409,
  delivery_not_retryable: 409,
  request_already_running: 409,
  request_cancelled: 409,
  file_too_large: 413,
  request_too_large: 413,
  task_rejected: 422,
  idempotency_key_reused: 422,
  rate_limited: 429,
  too_many_tasks: 429,
  quota_exceeded: 429,
  internal_error: 500,
  task_failed: 502,
  upstream_error: 502,
  // A service the gateway needs (its database, Redis) is out of reach for now; nothing was
  // created, and Retry-After says when to come back.
  service_unavailable: 503,
  upstream_timeout: 504,
  // Asset registry codes (ComfyUI's UPPER_SNAKE names).
  INVALID_HASH: 400,
  INVALID_BODY: 400,
  INVALID_QUERY: 400,
  UNSUPPORTED_FIELD: 400,
  MISSING_FILE: 400,
  EMPTY_UPLOAD: 400,
  MISSING_INPUT: 400,
  SYSTEM_TAG_FORBIDDEN: 400,
  ASSET_NOT_FOUND: 404,
  FILE_NOT_FOUND: 404,
  HASH_MISMATCH: 409,
} as const satisfies Record<string, ErrorStatus>;

export type ErrorCode = keyof typeof ERROR_CODES;

export type ErrorShape = 'api' | 'asset' | 'envelope';

export class ApiError extends Error {
  readonly status: ErrorStatus;
  readonly type: string;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly param: string | null = null,
    /** Extra top-level fields of the error object (e.g. task_id on task_failed). */
    readonly extra: Record<string, unknown> = {},
    /** Extra response headers (e.g. Retry-After). */
    readonly headers: Record<string, string> = {},
    /** Structured detail for the asset registry body. */
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.status = ERROR_CODES[code];
    this.type = ERROR_TYPES[this.status];
  }

  /** The body in one of the three error shapes: the API's (`api`), the asset registry's (`asset`) or the upload envelope. */
  toBody(shape: ErrorShape): unknown {
    switch (shape) {
      case 'api':
        return { error: { message: this.message, type: this.type, code: this.code, param: this.param, ...this.extra } };
      case 'asset':
        return { error: { code: this.code.toUpperCase(), message: this.message, details: this.param ? { param: this.param, ...this.details } : this.details } };
      case 'envelope':
        return { code: this.status, message: this.message, data: { success: false } };
    }
  }
}

/**
 * An ApiError caused by an upstream's answer, with that answer's HTTP status (undefined: the
 * upstream never answered). Routing reads the status: another channel, a disabled channel, or
 * the end of the call.
 */
export class UpstreamApiError extends ApiError {
  constructor(
    code: ErrorCode,
    message: string,
    readonly upstreamStatus: number | undefined,
    param: string | null = null,
    headers: Record<string, string> = {},
  ) {
    super(code, message, param, {}, headers);
  }
}
