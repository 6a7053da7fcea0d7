/**
 * What a call costs under its model's prices (GENGATE_CONFIG `models.<alias>.pricing`, in credits):
 * estimated from the request at admission, computed from what it used at its end.
 */
import type { ModelPricing } from '../config/settings.ts';
import type { ChatUsage } from '../providers/spec.ts';
import { toMicro } from './limits.ts';

/** A call's tokens as they are priced: the input split by how the upstream's prompt cache served it. */
export interface TokenUsage {
  /** Input neither read from nor written to the prompt cache. */
  inputTokens: number;
  /** Input read from the prompt cache. */
  cachedInputTokens: number;
  /** Input written to the prompt cache. */
  cacheWriteTokens: number;
  outputTokens: number;
}

/** What a call used, the quantities prices apply to. */
export interface Consumption extends TokenUsage {
  images: number;
  seconds: number;
  characters: number;
}

export const NO_TOKENS: TokenUsage = { inputTokens: 0, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 0 };
export const NOTHING_USED: Consumption = { ...NO_TOKENS, images: 0, seconds: 0, characters: 0 };

/** A count an upstream reported, or 0 when it sent none or something else (a relayed answer is not checked field by field). */
function countOf(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.round(value) : 0;
}

/**
 * A chat usage split for pricing: `prompt_tokens` holds the cached and cache-write tokens
 * (providers/spec.ts), so the uncached input is what remains of it.
 */
export function tokenUsageOf(usage: ChatUsage): TokenUsage {
  const prompt = countOf(usage.prompt_tokens);
  const cachedInputTokens = Math.min(prompt, countOf(usage.prompt_tokens_details?.cached_tokens));
  const cacheWriteTokens = Math.min(prompt - cachedInputTokens, countOf(usage.prompt_tokens_details?.cache_write_tokens));
  return { inputTokens: prompt - cachedInputTokens - cacheWriteTokens, cachedInputTokens, cacheWriteTokens, outputTokens: countOf(usage.completion_tokens) };
}

/** All the input tokens of a usage, cached or not (what tokens_per_minute counts). */
export function promptTokensOf(tokens: TokenUsage): number {
  return tokens.inputTokens + tokens.cachedInputTokens + tokens.cacheWriteTokens;
}

/**
 * The cost in micro-credits; a call of a model without prices costs nothing. Input read from or
 * written to the prompt cache costs the input price when its own price is not set.
 */
export function costOf(pricing: ModelPricing | undefined, used: Consumption): number {
  if (!pricing) return 0;
  const inputPrice = pricing.input_per_million ?? 0;
  const credits =
    (pricing.per_request ?? 0) +
    (inputPrice * used.inputTokens) / 1_000_000 +
    ((pricing.cached_input_per_million ?? inputPrice) * used.cachedInputTokens) / 1_000_000 +
    ((pricing.cache_write_per_million ?? inputPrice) * used.cacheWriteTokens) / 1_000_000 +
    ((pricing.output_per_million ?? 0) * used.outputTokens) / 1_000_000 +
    (pricing.per_image ?? 0) * used.images +
    (pricing.per_second ?? 0) * used.seconds +
    ((pricing.per_1k_characters ?? 0) * used.characters) / 1000;
  return toMicro(credits);
}

const CHARS_PER_TOKEN = 4;
/** Seconds a video or audio call is assumed to make when its request names no length. */
const DEFAULT_SECONDS = 5;

function textLength(content: unknown): number {
  if (typeof content === 'string') return content.length;
  if (!Array.isArray(content)) return 0;
  let length = 0;
  for (const part of content) if (part && typeof part === 'object' && typeof (part as { text?: unknown }).text === 'string') length += (part as { text: string }).text.length;
  return length;
}

/** Input tokens of a chat or agent body, estimated from its text (4 characters a token). */
export function estimateInputTokens(body: Record<string, unknown>): number {
  let chars = 0;
  if (Array.isArray(body.messages)) for (const m of body.messages) chars += textLength((m as { content?: unknown })?.content);
  chars += textLength(body.input) + textLength(body.instructions) + textLength(body.prompt);
  return Math.ceil(chars / CHARS_PER_TOKEN);
}

function firstNumber(body: Record<string, unknown>, names: readonly string[]): number | undefined {
  for (const name of names) if (typeof body[name] === 'number') return body[name] as number;
  return undefined;
}

function firstText(body: Record<string, unknown>, names: readonly string[]): string {
  for (const name of names) if (typeof body[name] === 'string') return body[name] as string;
  return '';
}

/** The seconds of media a task input names (duration and its spellings). */
export function secondsOf(input: Record<string, unknown>): number | undefined {
  return firstNumber(input, ['duration', 'duration_seconds', 'seconds']);
}

/** The characters a speech input reads out. */
export function charactersOf(input: Record<string, unknown>): number {
  return firstText(input, ['text', 'input']).length;
}

/** What a request body will use, as well as admission can tell: the most it asks for. */
export function estimateOf(pricing: ModelPricing | undefined, body: Record<string, unknown>): number {
  if (!pricing) return 0;
  return costOf(pricing, {
    ...NO_TOKENS,
    inputTokens: estimateInputTokens(body),
    outputTokens: firstNumber(body, ['max_tokens', 'max_completion_tokens', 'max_output_tokens']) ?? 0,
    images: firstNumber(body, ['n', 'num_images', 'batch_size']) ?? 1,
    seconds: secondsOf(body) ?? (pricing.per_second ? DEFAULT_SECONDS : 0),
    characters: charactersOf(body),
  });
}

/** The prices as `billing_mode` of /v1/models/list. */
export function billingModeOf(pricing: ModelPricing): ModelPricing & { currency: 'credits' } {
  return { currency: 'credits', ...pricing };
}
