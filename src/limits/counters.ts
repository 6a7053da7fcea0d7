/**
 * The counters behind limits, per subject (a token `tok:<id>` or a user `usr:<id>`): request and
 * token rates as GCRA (a theoretical arrival time per subject: O(1), a burst of the whole
 * minute allowed), tasks not yet ended, credits held by calls in flight and credits spent per
 * period. Two implementations with one meaning: in this process (embedded, rebuilt from the
 * database at start) and in Redis (one atomic script per admission, shared by every instance).
 * They also keep the generation of the limits (bumped by every change through the admin API), so
 * an instance that holds limits read before a change learns of it at its next admission.
 */

export const WINDOW_MS = 60_000;

/** The limits of one subject as the counters need them; 0 means not limited. */
export interface SubjectLimits {
  subject: string;
  rpm: number;
  tpm: number;
  concurrent: number;
  /** Micro-credits the period may spend; -1 when credits are not limited. */
  credits: number;
  /** Key of the current credit period (limits.ts periodOf). */
  period: string;
}

export interface AdmitRequest {
  /** The request id: the key its credit reservation is held (and released) under. */
  id: string;
  /** The generation of the limits `subjects` were read at; an older one than the counters' is refused as stale. */
  generation: number;
  subjects: SubjectLimits[];
  /** Estimated input tokens of a chat or agent call. */
  tokens: number;
  /** Micro-credits to hold until the call or its task ends. */
  credits: number;
  /** A reservation nobody settled by then (its process died) is dropped. */
  holdMs: number;
}

/** The request rate of the most constrained subject, for the x-ratelimit headers. */
export interface RateState {
  limit: number;
  remaining: number;
  resetMs: number;
}

export type AdmitOutcome =
  | { ok: true; rate: RateState | undefined }
  | { ok: false; code: 'rate_limited' | 'quota_exceeded'; retryAfterS: number; rate: RateState | undefined }
  /** The limits changed since the request's were read: nothing was counted; read them again. */
  | { ok: false; code: 'stale'; generation: number };

/** What a call or task ending gives back and spends. */
export interface Settlement {
  /** The ledger row's id: settling twice under it changes nothing. */
  ledgerId: string;
  /** The request id its admission held credits and its task slot under. */
  reservationId: string;
  subjects: SubjectLimits[];
  /** Micro-credits spent, counted in `period` of each subject (the period the call began in). */
  cost: number;
  /** Actual tokens minus the admission's estimate, for the token rate. */
  tokensDelta: number;
  /** The call held a task slot. */
  task: boolean;
}

/** A subject's state read from the database, when its limits are set (or the process starts). */
export interface SubjectSeed {
  subject: string;
  period: string;
  spent: number;
  /** Request ids of its live tasks and the credits each holds. */
  live: { id: string; held: number }[];
}

export interface LimitCounters {
  /** Counts a call against every subject's limits, or none when one is over (or the limits are stale). */
  admit(request: AdmitRequest): Promise<AdmitOutcome>;
  /** Records that limits were changed: answers the new generation. */
  limitsChanged(): Promise<number>;
  /** Takes a task slot under `id` for every subject, or none when one is full. */
  beginTask(id: string, subjects: SubjectLimits[], holdMs: number): Promise<boolean>;
  settle(settlement: Settlement): Promise<void>;
  seed(seed: SubjectSeed, holdMs: number): Promise<void>;
  close(): Promise<void>;
}

/** A GCRA arrival time with the limit it was counted under. */
export interface KeptArrival {
  tat: number;
  limit: number;
}

/**
 * The arrival time under `limit` of one kept under another: the calls (or tokens) it counts stay
 * as many, so a changed limit applies at once, raised (room again) or lowered (the calls already
 * made may be over it). Undefined when nothing is counted any more.
 */
export function arrivalUnder(kept: KeptArrival | undefined, now: number, limit: number): number | undefined {
  if (!kept || kept.tat <= now) return undefined;
  return kept.limit === limit ? kept.tat : now + ((kept.tat - now) * kept.limit) / limit;
}

/** The outcome of one GCRA step: the new arrival time when allowed. */
export function gcra(tat: number | undefined, now: number, limit: number, cost: number): { allowed: boolean; next: number; retryAfterMs: number } {
  const start = Math.max(tat ?? now, now);
  const interval = WINDOW_MS / limit;
  const next = start + interval * cost;
  // A single call larger than the whole limit passes when nothing else is counted, or it never could.
  if (next - now > WINDOW_MS && start > now) return { allowed: false, next: start, retryAfterMs: next - WINDOW_MS - now };
  return { allowed: true, next, retryAfterMs: 0 };
}

/** Calls left in the window and the time until it is whole again, after an arrival time. */
export function rateStateOf(limit: number, tat: number, now: number): RateState {
  const used = Math.max(0, tat - now);
  return { limit, remaining: Math.max(0, Math.floor((WINDOW_MS - used) / (WINDOW_MS / limit))), resetMs: used };
}

interface SubjectState {
  rpm?: KeptArrival;
  tpm?: KeptArrival;
  /** Live task slots: request id -> when the slot lapses. */
  live: Map<string, number>;
  /** Credits held: request id -> amount and when it lapses. */
  held: Map<string, { amount: number; until: number }>;
  heldSum: number;
  spent: Map<string, number>;
}

/** The embedded counters: exact within the one process that serves an embedded store. */
export class MemoryLimitCounters implements LimitCounters {
  private readonly states = new Map<string, SubjectState>();
  private generation = 0;

  private readonly now: () => number;

  constructor(now: () => number = Date.now) {
    this.now = now;
  }

  private state(subject: string): SubjectState {
    let state = this.states.get(subject);
    if (!state) {
      state = { live: new Map(), held: new Map(), heldSum: 0, spent: new Map() };
      this.states.set(subject, state);
    }
    return state;
  }

  private dropLapsed(state: SubjectState, now: number): void {
    for (const [id, hold] of state.held) if (hold.until <= now) {
      state.held.delete(id);
      state.heldSum -= hold.amount;
    }
    for (const [id, until] of state.live) if (until <= now) state.live.delete(id);
  }

  async admit(request: AdmitRequest): Promise<AdmitOutcome> {
    if (request.generation !== this.generation) return { ok: false, code: 'stale', generation: this.generation };
    const now = this.now();
    let rate: RateState | undefined;
    const steps: { state: SubjectState; rpm?: KeptArrival; tpm?: KeptArrival }[] = [];
    for (const limits of request.subjects) {
      const state = this.state(limits.subject);
      const step: { state: SubjectState; rpm?: KeptArrival; tpm?: KeptArrival } = { state };
      if (limits.rpm > 0) {
        const tat = arrivalUnder(state.rpm, now, limits.rpm);
        const r = gcra(tat, now, limits.rpm, 1);
        const current = rateStateOf(limits.rpm, r.allowed ? r.next : Math.max(tat ?? now, now), now);
        if (!rate || current.remaining < rate.remaining) rate = current;
        if (!r.allowed) return { ok: false, code: 'rate_limited', retryAfterS: Math.max(1, Math.ceil(r.retryAfterMs / 1000)), rate };
        step.rpm = { tat: r.next, limit: limits.rpm };
      }
      if (limits.tpm > 0 && request.tokens > 0) {
        const r = gcra(arrivalUnder(state.tpm, now, limits.tpm), now, limits.tpm, request.tokens);
        if (!r.allowed) return { ok: false, code: 'rate_limited', retryAfterS: Math.max(1, Math.ceil(r.retryAfterMs / 1000)), rate };
        step.tpm = { tat: r.next, limit: limits.tpm };
      }
      if (limits.credits >= 0) {
        this.dropLapsed(state, now);
        if ((state.spent.get(limits.period) ?? 0) + state.heldSum + request.credits > limits.credits) return { ok: false, code: 'quota_exceeded', retryAfterS: 0, rate };
      }
      steps.push(step);
    }
    for (const { state, rpm, tpm } of steps) {
      if (rpm !== undefined) state.rpm = rpm;
      if (tpm !== undefined) state.tpm = tpm;
      if (request.credits > 0) {
        state.held.set(request.id, { amount: request.credits, until: now + request.holdMs });
        state.heldSum += request.credits;
      }
    }
    return { ok: true, rate };
  }

  async limitsChanged(): Promise<number> {
    return ++this.generation;
  }

  async beginTask(id: string, subjects: SubjectLimits[], holdMs: number): Promise<boolean> {
    const now = this.now();
    const limited = subjects.filter((s) => s.concurrent > 0);
    for (const limits of limited) {
      const state = this.state(limits.subject);
      this.dropLapsed(state, now);
      if (state.live.size >= limits.concurrent) return false;
    }
    for (const limits of limited) this.state(limits.subject).live.set(id, now + holdMs);
    return true;
  }

  async settle(settlement: Settlement): Promise<void> {
    const now = this.now();
    for (const limits of settlement.subjects) {
      const state = this.state(limits.subject);
      if (settlement.task) state.live.delete(settlement.reservationId);
      const hold = state.held.get(settlement.reservationId);
      if (hold) {
        state.held.delete(settlement.reservationId);
        state.heldSum -= hold.amount;
      }
      if (limits.credits >= 0 && settlement.cost > 0) state.spent.set(limits.period, (state.spent.get(limits.period) ?? 0) + settlement.cost);
      if (limits.tpm > 0 && settlement.tokensDelta !== 0) {
        // Tokens used beyond the estimate count from now when the estimate's own time has passed already (a long call).
        const tat = arrivalUnder(state.tpm, now, limits.tpm) ?? (settlement.tokensDelta > 0 ? now : undefined);
        if (tat !== undefined) state.tpm = { tat: tat + (WINDOW_MS / limits.tpm) * settlement.tokensDelta, limit: limits.tpm };
      }
    }
  }

  async seed(seed: SubjectSeed, holdMs: number): Promise<void> {
    const state = this.state(seed.subject);
    const until = this.now() + holdMs;
    state.spent.set(seed.period, seed.spent);
    state.live = new Map(seed.live.map((l) => [l.id, until]));
    state.held = new Map(seed.live.filter((l) => l.held > 0).map((l) => [l.id, { amount: l.held, until }]));
    state.heldSum = seed.live.reduce((sum, l) => sum + l.held, 0);
  }

  async close(): Promise<void> {}
}
