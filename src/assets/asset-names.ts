/**
 * ComfyUI's naming rules for files in the registry: subfolders that stay inside their root,
 * client file names cut to their last segment, and `a (1).png` when a name is taken.
 */
import path from 'node:path';
import { ApiError } from '../core/errors.ts';

/** Longest accepted record or file name. */
export const MAX_NAME_LENGTH = 512;
/** How many numbered names (`a (1).png` …) are tried for a free location before giving up. */
export const MAX_RENAMES = 10_000;

/** `a/b`, without empty, `.` or `..` segments; throws 400 on a path that would leave its root. */
export function normalizeSubfolder(raw: string | undefined, param = 'subfolder'): string {
  if (!raw) return '';
  const parts = raw.replaceAll('\\', '/').split('/').filter((p) => p !== '' && p !== '.');
  if (parts.some((p) => p === '..' || p.includes('\0'))) throw new ApiError('INVALID_BODY', `${param} must stay inside its folder`, param);
  return parts.join('/');
}

/** The last segment of a client file name; throws 400 when nothing usable is left. */
export function safeFileName(raw: string | undefined, param = 'filename'): string {
  const name = path.posix.basename((raw ?? '').replaceAll('\\', '/')).trim();
  if (!name || name === '.' || name === '..' || name.includes('\0')) throw new ApiError('INVALID_BODY', `${param} is not a usable file name`, param);
  if (name.length > MAX_NAME_LENGTH) throw new ApiError('INVALID_BODY', `${param} is longer than ${MAX_NAME_LENGTH} characters`, param);
  return name;
}

/** A file name's stem and extension: `a.png` → `a`, `.png`. */
export function nameParts(fileName: string): { stem: string; ext: string } {
  const ext = path.posix.extname(fileName);
  return { stem: ext ? fileName.slice(0, -ext.length) : fileName, ext };
}

/** ComfyUI's rename on collision: `a.png` → `a (1).png`, `a (2).png`, … */
export function numberedName(fileName: string, n: number): string {
  const { stem, ext } = nameParts(fileName);
  return `${stem} (${n})${ext}`;
}

/** n of `numbered`, when it is `fileName`'s numbered name `a (n).png`; else undefined. */
export function numberOf(fileName: string, numbered: string): number | undefined {
  const { stem, ext } = nameParts(fileName);
  if (!numbered.startsWith(`${stem} (`) || !numbered.endsWith(`)${ext}`)) return undefined;
  const digits = numbered.slice(stem.length + 2, numbered.length - ext.length - 1);
  return /^[1-9][0-9]*$/.test(digits) ? Number(digits) : undefined;
}
