/**
 * The arithmetic of the in-process limit counters (src/limits/counters.ts) on a clock of the
 * test's own: request and token rates over the minute, credits per period, task slots, and a
 * changed limit applied at once.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { arrivalUnder, gcra, MemoryLimitCounters, rateStateOf, type AdmitRequest, type RateState, type SubjectLimits } from '../../src/limits/counters.ts';

const T0 = 1_700_000_000_000;

/** Counters whose clock the test moves. */
function countersAt(start = T0) {
  const clock = { now: start };
  return { clock, counters: new MemoryLimitCounters(() => clock.now) };
}

const limitsOf = (patch: Partial<SubjectLimits>): SubjectLimits => ({ subject: 'tok:a', rpm: 0, tpm: 0, concurrent: 0, credits: -1, period: 'd2023-11-14', ...patch });

let requestSeq = 0;
const request = (subjects: SubjectLimits[], patch: Partial<AdmitRequest> = {}): AdmitRequest => ({ id: `req-${++requestSeq}`, generation: 0, subjects, tokens: 0, credits: 0, holdMs: 60_000, ...patch });

describe('gcra', () => {
  it('spaces arrivals by the window over the limit, allowing a whole minute at once', () => {
    assert.deepEqual(gcra(undefined, T0, 60, 1), { allowed: true, next: T0 + 1000, retryAfterMs: 0 });
    assert.deepEqual(gcra(T0 + 59_000, T0, 60, 1), { allowed: true, next: T0 + 60_000, retryAfterMs: 0 });
    assert.deepEqual(gcra(T0 + 60_000, T0, 60, 1), { allowed: false, next: T0 + 60_000, retryAfterMs: 1000 });
  });

  it('lets one call larger than the whole limit pass when nothing else is counted', () => {
    assert.deepEqual(gcra(undefined, T0, 100, 250), { allowed: true, next: T0 + 150_000, retryAfterMs: 0 });
    assert.equal(gcra(T0 + 1, T0, 100, 250).allowed, false);
  });
});

describe('rateStateOf and arrivalUnder', () => {
  it('tells the calls left in the window and the time until it is whole again', () => {
    assert.deepEqual(rateStateOf(60, T0 + 15_000, T0), { limit: 60, remaining: 45, resetMs: 15_000 });
    assert.deepEqual(rateStateOf(60, T0 - 5, T0), { limit: 60, remaining: 60, resetMs: 0 });
  });

  it('keeps the count of calls when the limit changes: the arrival time rescales', () => {
    // 30 calls counted under 60 a minute (30 s ahead) are 30 calls under 120 (15 s ahead) or under 30 (60 s ahead).
    const kept = { tat: T0 + 30_000, limit: 60 };
    assert.equal(arrivalUnder(kept, T0, 60), T0 + 30_000);
    assert.equal(arrivalUnder(kept, T0, 120), T0 + 15_000);
    assert.equal(arrivalUnder(kept, T0, 30), T0 + 60_000);
    assert.equal(arrivalUnder(kept, T0 + 30_000, 60), undefined, 'nothing counted any more');
    assert.equal(arrivalUnder(undefined, T0, 60), undefined);
  });
});

describe('MemoryLimitCounters', () => {
  it('admits as many calls as the request rate allows in a minute, then refuses with the seconds to wait', async () => {
    const { clock, counters } = countersAt();
    const limits = [limitsOf({ rpm: 3 })];
    const rates: (RateState | undefined | false)[] = [];
    for (let i = 0; i < 3; i++) {
      const outcome = await counters.admit(request(limits));
      assert.equal(outcome.ok, true);
      rates.push(outcome.ok && outcome.rate);
    }
    assert.deepEqual(rates, [{ limit: 3, remaining: 2, resetMs: 20_000 }, { limit: 3, remaining: 1, resetMs: 40_000 }, { limit: 3, remaining: 0, resetMs: 60_000 }]);
    assert.deepEqual(await counters.admit(request(limits)), { ok: false, code: 'rate_limited', retryAfterS: 20, rate: { limit: 3, remaining: 0, resetMs: 60_000 } });
    // One interval later there is room for one call again, and one only.
    clock.now += 20_000;
    assert.equal((await counters.admit(request(limits))).ok, true);
    assert.equal((await counters.admit(request(limits))).ok, false);
  });

  it('applies a raised or lowered request rate to the calls already counted', async () => {
    const { counters } = countersAt();
    for (let i = 0; i < 3; i++) assert.equal((await counters.admit(request([limitsOf({ rpm: 3 })]))).ok, true);
    // Three calls made: room for three more under six a minute.
    const raised = await counters.admit(request([limitsOf({ rpm: 6 })]));
    assert.deepEqual(raised, { ok: true, rate: { limit: 6, remaining: 2, resetMs: 40_000 } });
    // Four calls made are two minutes' worth under a lowered limit of two a minute: the next may come in 90 s.
    const lowered = await counters.admit(request([limitsOf({ rpm: 2 })]));
    assert.deepEqual(lowered, { ok: false, code: 'rate_limited', retryAfterS: 90, rate: { limit: 2, remaining: 0, resetMs: 120_000 } });
  });

  it('counts estimated tokens against the token rate, and the settled difference after the call', async () => {
    const { counters } = countersAt();
    const limits = [limitsOf({ tpm: 1000 })];
    assert.equal((await counters.admit(request(limits, { tokens: 600 }))).ok, true);
    assert.deepEqual(await counters.admit(request(limits, { tokens: 500 })), { ok: false, code: 'rate_limited', retryAfterS: 6, rate: undefined });
    // The call used 200 tokens fewer than estimated: those are given back.
    await counters.settle({ ledgerId: 'l1', reservationId: 'r1', subjects: limits, cost: 0, tokensDelta: -200, task: false });
    assert.equal((await counters.admit(request(limits, { tokens: 500 }))).ok, true);
    assert.equal((await counters.admit(request(limits, { tokens: 1 }))).ok, true);
    assert.equal((await counters.admit(request(limits, { tokens: 100 }))).ok, false);
  });

  it('counts the tokens a call used beyond its estimate even when the estimate\'s time has passed by its end', async () => {
    const { clock, counters } = countersAt();
    const limits = [limitsOf({ tpm: 1000 })];
    // 10 tokens estimated: counted for 600 ms.
    assert.equal((await counters.admit(request(limits, { tokens: 10 }))).ok, true);
    clock.now += 5_000;
    // The call took 5 s and used 1500 tokens: a minute and a half's worth from now.
    await counters.settle({ ledgerId: 'l1', reservationId: 'r1', subjects: limits, cost: 0, tokensDelta: 1490, task: false });
    assert.deepEqual(await counters.admit(request(limits, { tokens: 1 })), { ok: false, code: 'rate_limited', retryAfterS: 30, rate: undefined });
    // A call that used fewer tokens than estimated after that time gives nothing back: nothing of it is counted any more.
    clock.now += 90_000;
    await counters.settle({ ledgerId: 'l2', reservationId: 'r2', subjects: limits, cost: 0, tokensDelta: -5, task: false });
    assert.equal((await counters.admit(request(limits, { tokens: 1000 }))).ok, true);
  });

  it('holds credits while a call is in flight, spends its cost in its period, and refuses what would go over', async () => {
    const { counters } = countersAt();
    const limits = [limitsOf({ credits: 10_000_000 })];
    const first = request(limits, { credits: 6_000_000 });
    assert.equal((await counters.admit(first)).ok, true);
    assert.deepEqual(await counters.admit(request(limits, { credits: 5_000_000 })), { ok: false, code: 'quota_exceeded', retryAfterS: 0, rate: undefined });
    // It cost less than held: the rest is free again.
    await counters.settle({ ledgerId: 'l1', reservationId: first.id, subjects: limits, cost: 4_000_000, tokensDelta: 0, task: false });
    assert.equal((await counters.admit(request(limits, { credits: 5_000_000 }))).ok, true);
    assert.equal((await counters.admit(request(limits, { credits: 1_000_001 }))).ok, false);
    // A new period starts with nothing spent (only the 5 credits still held count).
    assert.equal((await counters.admit(request([limitsOf({ credits: 10_000_000, period: 'd2023-11-15' })], { credits: 5_000_000 }))).ok, true);
  });

  it('drops a credit hold nobody settled once its time is up', async () => {
    const { clock, counters } = countersAt();
    const limits = [limitsOf({ credits: 1_000_000 })];
    assert.equal((await counters.admit(request(limits, { credits: 1_000_000, holdMs: 5000 }))).ok, true);
    assert.equal((await counters.admit(request(limits, { credits: 1 }))).ok, false);
    clock.now += 5000;
    assert.equal((await counters.admit(request(limits, { credits: 1 }))).ok, true);
  });

  it('counts nothing when one subject of several is over its limit', async () => {
    const { counters } = countersAt();
    const token = limitsOf({ subject: 'tok:a', rpm: 10 });
    const user = limitsOf({ subject: 'usr:u', credits: 0 });
    assert.equal((await counters.admit(request([token, user], { credits: 1 }))).ok, false);
    // The token's rate was left untouched by the refused call: its first admission has the whole minute.
    assert.deepEqual(await counters.admit(request([token])), { ok: true, rate: { limit: 10, remaining: 9, resetMs: 6000 } });
  });

  it('refuses a request read under an older generation of the limits, and counts nothing for it', async () => {
    const { counters } = countersAt();
    assert.equal(await counters.limitsChanged(), 1);
    assert.deepEqual(await counters.admit(request([limitsOf({ rpm: 1 })], { generation: 0 })), { ok: false, code: 'stale', generation: 1 });
    assert.equal((await counters.admit(request([limitsOf({ rpm: 1 })], { generation: 1 }))).ok, true);
  });

  it('gives task slots up to the concurrency, back when a task settles or its hold lapses', async () => {
    const { clock, counters } = countersAt();
    const limits = [limitsOf({ concurrent: 2 })];
    assert.equal(await counters.beginTask('t1', limits, 10_000), true);
    assert.equal(await counters.beginTask('t2', limits, 20_000), true);
    assert.equal(await counters.beginTask('t3', limits, 10_000), false);
    await counters.settle({ ledgerId: 'l1', reservationId: 't2', subjects: limits, cost: 0, tokensDelta: 0, task: true });
    assert.equal(await counters.beginTask('t3', limits, 10_000), true);
    assert.equal(await counters.beginTask('t4', limits, 10_000), false);
    clock.now += 10_000;
    assert.equal(await counters.beginTask('t4', limits, 10_000), true);
  });

  it('starts from a seed: what the period spent and the credits its live tasks hold', async () => {
    const { counters } = countersAt();
    await counters.seed({ subject: 'tok:a', period: 'd2023-11-14', spent: 3_000_000, live: [{ id: 't1', held: 2_000_000 }, { id: 't2', held: 0 }] }, 60_000);
    const limits = [limitsOf({ credits: 10_000_000, concurrent: 2 })];
    assert.equal((await counters.admit(request(limits, { credits: 5_000_000 }))).ok, true);
    assert.equal((await counters.admit(request(limits, { credits: 1 }))).ok, false);
    assert.equal(await counters.beginTask('t3', limits, 60_000), false, 'both slots are the seeded tasks');
  });
});
