/**
 * The lines of a batch's input file, read one at a time: each is either a request
 * `{custom_id, method: "POST", url, body}` or a malformed line (it goes to the error file), and a
 * few faults fail the whole batch (docs/batches.md, "Validation").
 */

/** The endpoints a batch runs, as OpenAI names them. */
export const BATCH_ENDPOINTS = ['/v1/chat/completions', '/v1/embeddings', '/v1/responses', '/v1/images/generations'] as const;
export type BatchEndpoint = (typeof BATCH_ENDPOINTS)[number];

export function isBatchEndpoint(value: string): value is BatchEndpoint {
  return (BATCH_ENDPOINTS as readonly string[]).includes(value);
}

/** A fault of the whole input: the batch fails with it in `errors`. */
export interface BatchValidationError {
  code: 'empty_file' | 'mismatched_url' | 'duplicate_custom_id' | 'input_file_unreadable';
  message: string;
  param: string | null;
  /** 1-based line number, when one line is at fault. */
  line: number | null;
}

export type ParsedLine =
  | { kind: 'request'; customId: string; body: Record<string, unknown> }
  | { kind: 'malformed'; customId: string | null; code: 'invalid_json_line' | 'invalid_request'; message: string }
  | { kind: 'blank' }
  | { kind: 'batch_error'; error: BatchValidationError };

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** One line of the input, numbered from 1, read against the batch's endpoint. */
export function parseLine(text: string, lineNo: number, endpoint: BatchEndpoint): ParsedLine {
  if (!text.trim()) return { kind: 'blank' };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { kind: 'malformed', customId: null, code: 'invalid_json_line', message: `line ${lineNo} is not valid JSON` };
  }
  if (!isObject(value)) return { kind: 'malformed', customId: null, code: 'invalid_json_line', message: `line ${lineNo} is not a JSON object` };
  const customId = typeof value.custom_id === 'string' && value.custom_id !== '' ? value.custom_id : null;
  const malformed = (message: string): ParsedLine => ({ kind: 'malformed', customId, code: 'invalid_request', message: `line ${lineNo}: ${message}` });
  if (customId === null) return malformed('custom_id must be a non-empty string');
  if (value.method !== 'POST') return malformed('method must be "POST"');
  if (typeof value.url !== 'string') return malformed('url must be a string');
  if (value.url !== endpoint) {
    return { kind: 'batch_error', error: { code: 'mismatched_url', message: `line ${lineNo}: url ${JSON.stringify(value.url)} is not the batch's endpoint ${endpoint}`, param: 'url', line: lineNo } };
  }
  if (!isObject(value.body)) return malformed('body must be a JSON object');
  return { kind: 'request', customId, body: value.body };
}
