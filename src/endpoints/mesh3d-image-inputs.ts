/**
 * Image inputs of 3D requests (the file object, view images and the legacy
 * four-slot form): each checked against the model's limits and turned into one reference an
 * engine reads with `RunContext.readInput`, kept in the file object's `url`.
 */
import { ApiError } from '../core/errors.ts';
import { FOUR_VIEWS, VIEW_TYPES, type Range, type ViewRule } from './mesh3d-generation-rules.ts';
import type { FileObject, ResolvedFile, ResolvedView, ViewImage } from './mesh3d.ts';

/** Where file sources lead: this gateway's files, the caller's assets, and which URLs may be fetched. */
export interface FileSourceLookup {
  /** 400 url_not_allowed for a URL the gateway would not fetch (docs/security.md). */
  checkCallerUrl(url: string, param: string): void;
  /** URL of a file of this gateway. */
  fileUrl(id: string, fileName: string): string;
  /** True when the owner has live content with this hash. */
  hasAssetHash(ownerId: string, hash: string): Promise<boolean>;
  /** The content hash of the owner's asset, or undefined when the owner has no such asset. */
  assetHash(ownerId: string, assetId: string): Promise<string | undefined>;
}

export interface ImageLimits {
  mimeTypes?: readonly string[];
  /** Pixels per side, checked when the request states width and height. */
  sides?: Range;
  /** Only public http(s) URLs (hosted upstreams fetch the image themselves). */
  publicUrlOnly?: boolean;
}

/** A file object whose `url` holds the reference an engine reads. */

const GATEWAY_FILE_PATH = /^\/?files\/([^/?#]+)\/([^/?#]+)$/;
const ASSET_HASH = /^blake3:[0-9a-f]{64}$/;
const NON_URL_SOURCES = ['path', 'file_token', 'object'] as const;

function httpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

/** Checks one file object and resolves its source (url, then path, file_token, object). */
export async function resolveImage(file: FileObject, param: string, ownerId: string, lookup: FileSourceLookup, limits: ImageLimits): Promise<ResolvedFile> {
  if (file.mimetype !== undefined && limits.mimeTypes && !limits.mimeTypes.includes(file.mimetype.toLowerCase())) {
    throw new ApiError('invalid_parameter', `${param}.mimetype must be one of ${limits.mimeTypes.join(', ')} for this model`, `${param}.mimetype`);
  }
  if (limits.sides) {
    const [min, max] = limits.sides;
    for (const side of ['width', 'height'] as const) {
      const value = file[side];
      if (value !== undefined && (value < min || value > max)) {
        throw new ApiError('invalid_parameter', `${param}.${side} must be between ${min} and ${max} pixels for this model`, `${param}.${side}`);
      }
    }
  }
  if (limits.publicUrlOnly) {
    const other = NON_URL_SOURCES.find((s) => file[s] !== undefined);
    if (other) throw new ApiError('unsupported_parameter', `this model takes images by public url only, not ${other}`, `${param}.${other}`);
  }
  if (file.url !== undefined) {
    lookup.checkCallerUrl(file.url, `${param}.url`);
    if (!httpUrl(file.url)) throw new ApiError('invalid_parameter', `${param}.url must be an http(s) URL`, `${param}.url`);
    return { ...file, url: file.url };
  }
  if (file.path !== undefined) {
    const m = GATEWAY_FILE_PATH.exec(file.path);
    if (!m) throw new ApiError('invalid_parameter', `${param}.path must be the path of a file of this gateway: /files/<id>/<name>`, `${param}.path`);
    return { ...file, url: lookup.fileUrl(m[1]!, decodeURIComponent(m[2]!)) };
  }
  if (file.file_token !== undefined) {
    const hash = file.file_token.trim().toLowerCase();
    if (!ASSET_HASH.test(hash) || !(await lookup.hasAssetHash(ownerId, hash))) {
      throw new ApiError('invalid_parameter', `${param}.file_token must be the content hash (blake3:<hex>) of one of your assets`, `${param}.file_token`);
    }
    return { ...file, url: hash };
  }
  if (file.object !== undefined) {
    const hash = await lookup.assetHash(ownerId, file.object);
    if (!hash) throw new ApiError('invalid_parameter', `${param}.object must be the id of one of your assets`, `${param}.object`);
    return { ...file, url: hash };
  }
  throw new ApiError('missing_parameter', `${param} needs one of url, path, file_token or object`, param);
}

/**
 * Checks a set of views against a model's view rule: known types the model takes, one image
 * per view, front, the count range and the model's required views. `where` names the list.
 */
export function checkViews(given: readonly { view_type: string; param: string }[], rule: ViewRule, where: string): void {
  const seen = new Set<string>();
  for (const view of given) {
    const known = (VIEW_TYPES as readonly string[]).includes(view.view_type);
    if (!known || !rule.types.includes(view.view_type)) {
      throw new ApiError('view_type_unsupported', `view ${JSON.stringify(view.view_type)} is not supported by this model (allowed: ${rule.types.join(', ')})`, `${view.param}.view_type`);
    }
    if (seen.has(view.view_type)) throw new ApiError('invalid_parameter', `only one image per view: ${view.view_type} appears twice`, `${view.param}.view_type`);
    seen.add(view.view_type);
  }
  if (!seen.has('front')) throw new ApiError('multiview_front_required', 'the views must include front', where);
  const min = Math.max(2, rule.min);
  if (given.length < min || given.length > rule.max) {
    const range = min === rule.max ? `exactly ${min}` : `${min} to ${rule.max}`;
    throw new ApiError('view_count_unsupported', `this model takes ${range} views, got ${given.length}`, where);
  }
  const missing = (rule.required ?? []).filter((t) => !seen.has(t));
  if (missing.length > 0) throw new ApiError('view_count_unsupported', `this model needs the views ${missing.join(', ')}`, where);
}

/**
 * The views of a request: `views` (view_images) when given, else the legacy four slots (front,
 * left, back, right; null for a missing view), checked (checkViews), then every file resolved.
 */
export async function resolveViews(
  views: readonly ViewImage[] | undefined,
  legacy: { param: string; slots: readonly (FileObject | null)[] | null | undefined },
  viewsParam: string,
  rule: ViewRule,
  resolve: (file: FileObject, param: string) => Promise<ResolvedFile>,
): Promise<ResolvedView[]> {
  let given: { view_type: string; file: FileObject; param: string }[];
  let where = viewsParam;
  if (views !== undefined) {
    given = views.map((v, i) => ({ ...v, param: `${viewsParam}[${i}]` }));
  } else if (legacy.slots) {
    where = legacy.param;
    if (legacy.slots.length !== FOUR_VIEWS.length) {
      throw new ApiError('invalid_parameter', `${legacy.param} must have exactly four slots (front, left, back, right; null for a missing view)`, legacy.param);
    }
    if (!legacy.slots[0]) throw new ApiError('multiview_front_required', `${legacy.param}[0] (front) cannot be empty`, `${legacy.param}[0]`);
    given = legacy.slots.flatMap((file, i) => (file ? [{ view_type: FOUR_VIEWS[i]!, file, param: `${legacy.param}[${i}]` }] : []));
  } else {
    throw new ApiError('missing_parameter', `${viewsParam} is required`, viewsParam);
  }

  checkViews(given, rule, where);
  const resolved: ResolvedView[] = [];
  for (const view of given) resolved.push({ view_type: view.view_type, file: await resolve(view.file, `${view.param}.file`) });
  return resolved;
}
