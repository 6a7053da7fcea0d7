/**
 * A JSON Schema (ajv) refusal as the contract's 400: the route bodies' (http/plugins/errors.ts)
 * and the MCP tools' arguments alike name the field in `param`.
 */
import { ApiError } from './errors.ts';

/** What is read of an ajv error. */
export interface AjvLikeError {
  keyword: string;
  instancePath: string;
  message?: string;
  params: Record<string, unknown>;
}

/** `/messages/0/role` → `messages[0].role`. */
function fieldPath(pointer: string, child?: string): string {
  const parts = pointer.split('/').slice(1).map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'));
  if (child !== undefined) parts.push(child);
  return parts.reduce((acc, part) => (/^\d+$/.test(part) ? `${acc}[${part}]` : acc ? `${acc}.${part}` : part), '');
}

/** The 400 of the first refusal of a value checked as `context` (`body`, `querystring`, …). */
export function validationError(first: AjvLikeError, context: string): ApiError {
  if (first.keyword === 'required') {
    const param = fieldPath(first.instancePath, String(first.params.missingProperty));
    return new ApiError('missing_parameter', `${param} is required`, param);
  }
  if (first.keyword === 'additionalProperties') {
    const param = fieldPath(first.instancePath, String(first.params.additionalProperty));
    return new ApiError('unsupported_parameter', `${param} is not a supported parameter`, param);
  }
  // A fault of the whole body (not an object, none at all) names the body.
  const param = fieldPath(first.instancePath) || (context === 'body' ? 'body' : null);
  const allowed = first.keyword === 'enum' ? `: one of ${(first.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}` : '';
  const where = param ?? (context === 'body' ? 'request body' : context);
  return new ApiError('invalid_parameter', `${where} ${first.message ?? 'is invalid'}${allowed}`, param);
}
