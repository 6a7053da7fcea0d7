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
  // Gone: a task output past its retention (OUTPUT_RETENTION_DAYS).
  410: 'not_found_error',
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
  tool_not_allowed: 403,
  // A console role that may not do this (a team's object beyond the caller's role in the team).
  permission_denied: 403,
  // A console request that changes something without the session's x-csrf-token.
  csrf_token_invalid: 403,
  // An OpenID Connect sign-in that failed its checks (state, nonce, PKCE) or the identity provider's.
  sign_in_failed: 401,
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
  file_expired: 410,
  batch_not_found: 404,
  tool_not_found: 404,
  team_not_found: 404,
  member_not_found: 404,
  sign_in_not_configured: 404,
  team_exists: 409,
  provider_not_found: 404,
  mcp_server_not_found: 404,
  task_already_finished: 409,
  task_not_cancellable: 409,
  delivery_not_retryable: 409,
  request_already_running: 409,
  request_cancelled: 409,
  batch_not_cancellable: 409,
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

export type ErrorShape = 'api' | 'asset' | 'envelope' | 'anthropic';

/** Anthropic's error types by HTTP status (the /anthropic surface); another status is invalid_request_error below 500, api_error from it. */
const ANTHROPIC_ERROR_TYPES: Partial<Record<number, string>> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  502: 'api_error',
  503: 'overloaded_error',
  504: 'api_error',
  529: 'overloaded_error',
};

/** The error type Anthropic's API names for an HTTP status. */
export function anthropicErrorType(status: number): string {
  return ANTHROPIC_ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
}

export class ApiError extends Error {
  readonly status: ErrorStatus;
  readonly type: string;
  readonly code: ErrorCode;
  readonly param: string | null;
  readonly extra: Record<string, unknown>;
  readonly headers: Record<string, string>;
  readonly details: Record<string, unknown>;

  constructor(
    code: ErrorCode,
    message: string,
    param: string | null = null,
    /** Extra top-level fields of the error object (e.g. task_id on task_failed). */
    extra: Record<string, unknown> = {},
    /** Extra response headers (e.g. Retry-After). */
    headers: Record<string, string> = {},
    /** Structured detail for the asset registry body. */
    details: Record<string, unknown> = {},
  ) {
    super(message);
    this.code = code;
    this.param = param;
    this.extra = extra;
    this.headers = headers;
    this.details = details;
    this.status = ERROR_CODES[code];
    this.type = ERROR_TYPES[this.status];
  }

  /**
   * The body in one of the error shapes: the API's (`api`), the asset registry's (`asset`), the
   * upload envelope, or Anthropic's (`anthropic`, with the request id when given).
   */
  toBody(shape: ErrorShape, requestId?: string): unknown {
    switch (shape) {
      case 'api':
        return { error: { message: this.message, type: this.type, code: this.code, param: this.param, ...this.extra } };
      case 'asset':
        return { error: { code: this.code.toUpperCase(), message: this.message, details: this.param ? { param: this.param, ...this.details } : this.details } };
      case 'envelope':
        return { code: this.status, message: this.message, data: { success: false } };
      case 'anthropic':
        return { type: 'error', error: { type: anthropicErrorType(this.status), message: this.message }, ...(requestId === undefined ? {} : { request_id: requestId }) };
    }
  }
}

/**
 * An ApiError caused by an upstream's answer, with that answer's HTTP status (undefined: the
 * upstream never answered). Routing reads the status: another channel, a disabled channel, or
 * the end of the call.
 */
export class UpstreamApiError extends ApiError {
  readonly upstreamStatus: number | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    upstreamStatus: number | undefined,
    param: string | null = null,
    headers: Record<string, string> = {},
  ) {
    super(code, message, param, {}, headers);
    this.upstreamStatus = upstreamStatus;
  }
}
