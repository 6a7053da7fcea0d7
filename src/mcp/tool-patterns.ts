/**
 * Which MCP tools a token and a user may list and call: lists of patterns where `*` stands for
 * any run of characters (`gengate__*`, `everything__echo`, `*`). No list means `*`.
 */
import { Type, type Static } from 'typebox';

/** A list of patterns as the admin API takes it. */
export const McpToolPatterns = Type.Array(Type.String({ minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9_.*-]+$' }), { maxItems: 200 });
export type McpToolPatterns = Static<typeof McpToolPatterns>;

/** What a token or user may use when nothing was set. */
export const EVERY_TOOL: readonly string[] = ['*'];

/** Whether `name` matches `pattern`, `*` matching any run of characters. */
export function patternMatches(pattern: string, name: string): boolean {
  const pieces = pattern.split('*');
  if (pieces.length === 1) return pattern === name;
  const first = pieces[0]!;
  const last = pieces[pieces.length - 1]!;
  if (!name.startsWith(first) || name.length < first.length + last.length || !name.endsWith(last)) return false;
  let at = first.length;
  const end = name.length - last.length;
  for (const piece of pieces.slice(1, -1)) {
    const found = name.indexOf(piece, at);
    if (found < 0 || found + piece.length > end) return false;
    at = found + piece.length;
  }
  return true;
}

/** Whether any pattern of the list matches `name`. */
export function allowedBy(patterns: readonly string[], name: string): boolean {
  return patterns.some((pattern) => patternMatches(pattern, name));
}

/** A stored list (JSON), or `*` when there is none. */
export function storedPatterns(json: string | null | undefined): readonly string[] {
  return json ? (JSON.parse(json) as string[]) : EVERY_TOOL;
}
