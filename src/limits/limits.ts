/**
 * Limits a token or a user may carry: request and token rates, tasks at once, and credits over
 * a period. Credits are kept in micro-credits (integers) everywhere inside, so sums are exact.
 */
import { Type, type Static } from 'typebox';
import { ApiError } from '../core/errors.ts';

export const CREDIT_PERIODS = ['day', 'month', 'total'] as const;
export type CreditPeriod = (typeof CREDIT_PERIODS)[number];

const count = (description: string) => Type.Optional(Type.Union([Type.Integer({ minimum: 1, description }), Type.Null()]));

/** The limits of POST/PATCH /admin/tokens and PUT /admin/users/:id/limits; null removes one. */
export const LimitsPatch = Type.Object({
  requests_per_minute: count('calls per minute under /v1 and /openai/v1'),
  tokens_per_minute: count('chat and agent input + output tokens per minute'),
  concurrent_tasks: count('tasks not yet ended'),
  credits: Type.Optional(Type.Union([Type.Number({ minimum: 0, description: 'credits the period may spend' }), Type.Null()])),
  credits_period: Type.Optional(Type.Union([Type.Literal('day'), Type.Literal('month'), Type.Literal('total'), Type.Null()])),
}, { additionalProperties: false });
export type LimitsPatch = Static<typeof LimitsPatch>;

/** Limits as shown: the ones set, `credits_period` with credits (default day). */
export const LimitsView = Type.Object({
  requests_per_minute: Type.Optional(Type.Integer()),
  tokens_per_minute: Type.Optional(Type.Integer()),
  concurrent_tasks: Type.Optional(Type.Integer()),
  credits: Type.Optional(Type.Number()),
  credits_period: Type.Optional(Type.String()),
});
export type Limits = Static<typeof LimitsView>;

export const MICRO = 1_000_000;

/** Credits as stored (micro-credits, integer). */
export function toMicro(credits: number): number {
  return Math.round(credits * MICRO);
}

/** Micro-credits as shown. */
export function fromMicro(micro: number): number {
  return micro / MICRO;
}

/** The limits after a patch: a null field removes it; undefined when none is left. */
export function applyPatch(current: Limits | undefined, patch: LimitsPatch): Limits | undefined {
  const next: Record<string, unknown> = { ...current };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete next[key];
    else if (value !== undefined) next[key] = value;
  }
  if (next.credits === undefined) delete next.credits_period;
  else next.credits_period ??= 'day';
  return Object.keys(next).length > 0 ? (next as Limits) : undefined;
}

export function parseLimits(json: string | null | undefined): Limits | undefined {
  return json ? (JSON.parse(json) as Limits) : undefined;
}

/** The start of the credit period holding `at` (UTC), and the period's key. */
export function periodOf(period: CreditPeriod, at: number): { key: string; startDay: string } {
  const day = new Date(at).toISOString().slice(0, 10);
  if (period === 'day') return { key: `d${day}`, startDay: day };
  if (period === 'month') return { key: `m${day.slice(0, 7)}`, startDay: `${day.slice(0, 7)}-01` };
  return { key: 't', startDay: '0000-00-00' };
}

const CAPPED_FIELDS = ['requests_per_minute', 'tokens_per_minute', 'concurrent_tasks', 'credits'] as const;

/**
 * 400 naming `limits.<field>` when a token's limit is above its team's: a team's admin sets its
 * tokens' limits within the team's own (an administrator may set any).
 */
export function checkWithin(limits: Limits | undefined, team: Limits | undefined): void {
  if (!limits || !team) return;
  for (const field of CAPPED_FIELDS) {
    const cap = team[field];
    const value = limits[field];
    if (cap !== undefined && value !== undefined && value > cap) {
      throw new ApiError('invalid_parameter', `limits.${field} (${value}) is above the team's (${cap})`, `limits.${field}`);
    }
  }
}
