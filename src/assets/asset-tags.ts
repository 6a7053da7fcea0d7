import { ApiError } from '../core/errors.ts';

/** Tags the service sets itself; clients can neither add nor remove them. */
export const SYSTEM_TAGS: ReadonlySet<string> = new Set(['missing']);
export const MISSING_TAG = 'missing';
/** Tags that say where a record lives for /api/view (the `type` of ComfyUI's view). */
export const ROOT_TAGS = ['input', 'output', 'temp'] as const;
export type RootTag = (typeof ROOT_TAGS)[number];

const MAX_TAG_LENGTH = 256;

/** Trimmed, lower-cased, de-duplicated (first occurrence kept), empty ones dropped. */
export function normalizeTags(tags: readonly unknown[], param = 'tags'): string[] {
  const out: string[] = [];
  for (const raw of tags) {
    if (typeof raw !== 'string') throw new ApiError('INVALID_BODY', `${param} must be strings`, param);
    const tag = raw.trim().toLowerCase();
    if (!tag) continue;
    if (tag.length > MAX_TAG_LENGTH) throw new ApiError('INVALID_BODY', `${param}: a tag is longer than ${MAX_TAG_LENGTH} characters`, param);
    if (!out.includes(tag)) out.push(tag);
  }
  return out;
}

/** Throws 400 SYSTEM_TAG_FORBIDDEN when a client names a system tag. */
export function assertNoSystemTags(tags: readonly string[], param = 'tags'): void {
  const bad = tags.filter((t) => SYSTEM_TAGS.has(t));
  if (bad.length > 0) throw new ApiError('SYSTEM_TAG_FORBIDDEN', `${bad.join(', ')} is set by the service and cannot be given`, param, {}, {}, { tags: bad });
}

/**
 * Multipart `tags` values: each repeated field may be a JSON array string, a comma-separated
 * string or a single tag.
 */
export function parseTagFields(values: readonly string[]): string[] {
  const items: unknown[] = [];
  for (const value of values) {
    const text = value.trim();
    if (!text) continue;
    if (text.startsWith('[')) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        throw new ApiError('INVALID_BODY', 'tags: not a valid JSON array', 'tags');
      }
      if (!Array.isArray(parsed)) throw new ApiError('INVALID_BODY', 'tags: expected a JSON array of strings', 'tags');
      items.push(...parsed);
      continue;
    }
    items.push(...text.split(','));
  }
  return normalizeTags(items);
}

/** Query tag lists (`include_tags`, `exclude_tags`): comma-separated or repeated. */
export function parseTagQuery(values: readonly string[] | undefined): string[] {
  if (!values) return [];
  return normalizeTags(values.flatMap((v) => v.split(',')), 'tags');
}

/**
 * Tags derived from where a file lives: `input/sub/a.png` → input, sub. A subfolder segment
 * that is a system tag (`missing`) answers 400 SYSTEM_TAG_FORBIDDEN, one longer than a tag may
 * be 400 INVALID_BODY.
 */
export function tagsForLocation(type: RootTag, subfolder: string): string[] {
  const tags = normalizeTags([type, ...subfolder.split('/')], 'subfolder');
  assertNoSystemTags(tags, 'subfolder');
  return tags;
}

/** The view `type` of a record, from its tags (input before output before temp). */
export function rootTagOf(tags: readonly string[]): RootTag | undefined {
  return ROOT_TAGS.find((root) => tags.includes(root));
}

/** Client-created records land under `input` unless their tags already say where they live. */
export function withRootTag(tags: readonly string[]): string[] {
  return rootTagOf(tags) ? [...tags] : ['input', ...tags];
}

/** Sorted copy: tags are returned in alphabetical order everywhere. */
export function sortTags(tags: Iterable<string>): string[] {
  return [...tags].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}
