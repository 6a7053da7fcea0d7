import type { Logger } from 'pino';
import { SettingsError, type ProviderSettings } from '../config/settings.ts';
import type { Metadata } from 'sharp';
import { loadSharp } from './load-sharp.ts';
import { TaskFailedError, TaskRejectedError, type EngineDeclaration, type GeneratedFile, type GenerationEngine, type RunContext } from './spec.ts';
import type { UpstreamClient, UpstreamClientOptions, UpstreamResponse } from './upstream-client.ts';

/** What an adapter factory gets: its provider's settings, the key from the environment, the transport defaults. */
export interface AdapterContext {
  /** Provider code (catalog providerCode). */
  provider: string;
  settings: ProviderSettings;
  baseURL: string | undefined;
  /** Read from the environment variable settings.api_key_env names; never logged. */
  apiKey: string | undefined;
  /** UpstreamClient options from the settings (timeout, concurrency, retry); adapters add their headers. */
  client: Omit<UpstreamClientOptions, 'baseURL'>;
  pollIntervalMs: number;
  maxWaitMs: number;
  fetch: typeof fetch;
  logger: Logger;
}

export type AdapterFactory = (ctx: AdapterContext) => GenerationEngine;

/**
 * A URL an upstream can fetch for a reference in a request. http(s) URLs, the gateway's own file
 * URLs among them (public), go as they are; a data URI or an asset hash is read and
 * published as a gateway file first.
 */
export async function fetchableUrl(ref: string, ctx: RunContext, fallbackName: string): Promise<string> {
  const trimmed = ref.trim();
  if (/^https?:\/\//i.test(trimmed)) return trimmed;
  const file = await ctx.readInput(trimmed);
  return ctx.publish(file.data, /\.[a-z0-9]+$/i.test(file.fileName) ? file.fileName : fallbackName, file.mimeType);
}

/** A result file fetched from an upstream's storage. */
export interface DownloadedFile {
  data: Buffer;
  /** The Content-Type the storage sent, without parameters; empty when it sent none. */
  mimeType: string;
}

/**
 * Fetches a result file by its absolute URL (upstream URLs expire, so results are kept). `client`
 * should carry no credentials: result URLs usually point at another host, a CDN.
 */
export async function downloadFile(client: UpstreamClient, url: string, signal: AbortSignal): Promise<DownloadedFile> {
  const res = await client.request({ path: url, signal });
  return { data: res.body, mimeType: (res.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase() };
}

/** The JSON of an upstream reply; a body that is not JSON fails the task naming the call. */
export function replyJson(res: UpstreamResponse, provider: string, call: string): unknown {
  try {
    return JSON.parse(res.body.toString('utf8'));
  } catch {
    throw new TaskFailedError(`${provider} answered ${call} with a body that is not JSON`, res.body.toString('utf8').slice(0, 2000));
  }
}

/** Refuses a task of a provider whose key variable (api_key_env) is not set. */
export function checkApiKey(ctx: AdapterContext): void {
  if (!ctx.apiKey) throw new TaskRejectedError(`provider ${ctx.provider} has no API key (set the variable named by api_key_env)`);
}

/** An adapter setting from GENGATE_CONFIG providers.<code>.options; a wrong type stops the start. */
export function stringOption(ctx: AdapterContext, name: string): string | undefined {
  const value = ctx.settings.options?.[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '') throw new SettingsError(`GENGATE_CONFIG providers.${ctx.provider}.options.${name}: expected a non-empty string`);
  return value;
}

/** A numeric adapter setting (see stringOption). */
export function numberOption(ctx: AdapterContext, name: string): number | undefined {
  const value = ctx.settings.options?.[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) throw new SettingsError(`GENGATE_CONFIG providers.${ctx.provider}.options.${name}: expected a positive number`);
  return value;
}

/**
 * The declaration of an adapter that serves these endpoints and reads every field of their
 * requests (what its mapping does not send it reports as dropped).
 */
export function servesEndpoints(endpoints: Iterable<string>): EngineDeclaration {
  return Object.fromEntries([...endpoints].map((endpoint) => [endpoint, {}]));
}

/** Image formats an upstream's reply may hold: their MIME types and file extensions. */
const IMAGE_TYPES: Record<string, { mime: string; ext: string }> = {
  png: { mime: 'image/png', ext: 'png' },
  jpeg: { mime: 'image/jpeg', ext: 'jpg' },
  webp: { mime: 'image/webp', ext: 'webp' },
  gif: { mime: 'image/gif', ext: 'gif' },
};

/**
 * A generated image file from the bytes of an upstream's reply, its type and size read from the
 * image itself; `reply` names the reply in a failure (e.g. "OpenAI images reply").
 */
export async function imageFile(data: Buffer, index: number, reply: string): Promise<GeneratedFile> {
  const sharp = await loadSharp();
  let meta: Metadata;
  try {
    meta = await sharp(data).metadata();
  } catch {
    throw new TaskFailedError(`${reply}: image ${index + 1} is not a readable image`);
  }
  const kind = meta.format ? IMAGE_TYPES[meta.format] : undefined;
  if (!kind || !meta.width || !meta.height) throw new TaskFailedError(`${reply}: image ${index + 1} is a ${meta.format ?? 'unknown'} file, not PNG, JPEG or WebP`);
  return {
    type: 'image',
    data,
    fileName: `image-${index + 1}.${kind.ext}`,
    mimeType: kind.mime,
    mediaSize: { type: 'image', width: meta.width, height: meta.height, status: 1 },
  };
}
