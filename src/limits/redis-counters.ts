import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { failFastOptions, redisUnavailable } from '../storage/redis-connection.ts';
import type { AdmitOutcome, AdmitRequest, LimitCounters, Settlement, SubjectLimits, SubjectSeed } from './counters.ts';
import { WINDOW_MS } from './counters.ts';

/**
 * The counters of a deployment with REDIS_URL, shared by every instance. Each operation is one
 * script run atomically by Redis (EVALSHA, loaded once) on Redis's own clock, so one limit holds
 * for the whole cluster and concurrent calls cannot both take the last credit. Keys live under
 * `<REDIS_PREFIX>:lim:<subject>:…`: rpm and tpm (GCRA arrival times, `<tat>:<limit>`), live (task
 * slots by request id, scored by when they lapse), held + heldamt + heldsum (credits of calls in
 * flight), spent:<period> (micro-credits); and `<REDIS_PREFIX>:lim:generation`, the generation of
 * the limits. An operation Redis does not answer within REDIS_TIMEOUT_MS fails with 503
 * service_unavailable: a limited call is never admitted unchecked, nor held until Redis is back.
 */

/** Shared by the scripts: the clock, key names, arrival times and dropping lapsed holds. */
const COMMON = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local W = ${WINDOW_MS}
local prefix = ARGV[1]
local function k(subject, name) return prefix .. ':lim:' .. subject .. ':' .. name end
-- The arrival time under limit of one kept under another (counters.ts arrivalUnder); now when none counts.
local function arrival_under(key, limit)
  local tat, kept_limit = string.match(redis.call('GET', key) or '', '^(.+):(.+)$')
  if not tat or tonumber(tat) <= now then return now end
  return now + (tonumber(tat) - now) * tonumber(kept_limit) / limit
end
local function keep_arrival(key, tat, limit)
  redis.call('SET', key, tat .. ':' .. limit, 'PX', math.ceil(tat - now) + 1000)
end
local function drop_lapsed(subject)
  local gone = redis.call('ZRANGEBYSCORE', k(subject, 'held'), '-inf', now)
  for _, id in ipairs(gone) do
    local amount = tonumber(redis.call('HGET', k(subject, 'heldamt'), id) or '0')
    redis.call('HDEL', k(subject, 'heldamt'), id)
    redis.call('DECRBY', k(subject, 'heldsum'), amount)
  end
  if #gone > 0 then redis.call('ZREMRANGEBYSCORE', k(subject, 'held'), '-inf', now) end
  redis.call('ZREMRANGEBYSCORE', k(subject, 'live'), '-inf', now)
end
`;

/**
 * ARGV: prefix, generation, id, tokens, credits, holdMs, n, then per subject: subject, rpm, tpm,
 * credits limit (-1: none), period. Answers {1, limit, remaining, resetMs}, {0, code,
 * retryAfterS, limit, remaining, resetMs} (limit 0 when no subject limits requests), or {2,
 * generation} when the limits are of an older generation.
 */
const ADMIT = COMMON + `
local generation = tonumber(redis.call('GET', prefix .. ':lim:generation') or '0')
if generation ~= tonumber(ARGV[2]) then return { 2, generation } end
local id, tokens, credits, hold, n = ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local rl, rr, rs = 0, -1, 0
local plan = {}
for i = 0, n - 1 do
  local b = 8 + i * 5
  local subject, rpm, tpm, climit, period = ARGV[b], tonumber(ARGV[b + 1]), tonumber(ARGV[b + 2]), tonumber(ARGV[b + 3]), ARGV[b + 4]
  local step = { subject = subject, rpm_limit = rpm, tpm_limit = tpm }
  if rpm > 0 then
    local tat = arrival_under(k(subject, 'rpm'), rpm)
    local interval = W / rpm
    local nxt = tat + interval
    local allowed = not (nxt - now > W and tat > now)
    local shown = allowed and nxt or tat
    local remaining = math.max(0, math.floor((W - math.max(0, shown - now)) / interval))
    if rr < 0 or remaining < rr then rl, rr, rs = rpm, remaining, math.max(0, shown - now) end
    if not allowed then return { 0, 'rate_limited', math.max(1, math.ceil((nxt - W - now) / 1000)), rl, rr, rs } end
    step.rpm = nxt
  end
  if tpm > 0 and tokens > 0 then
    local tat = arrival_under(k(subject, 'tpm'), tpm)
    local nxt = tat + (W / tpm) * tokens
    if nxt - now > W and tat > now then return { 0, 'rate_limited', math.max(1, math.ceil((nxt - W - now) / 1000)), rl, math.max(rr, 0), rs } end
    step.tpm = nxt
  end
  if climit >= 0 then
    drop_lapsed(subject)
    local used = tonumber(redis.call('GET', k(subject, 'spent:' .. period)) or '0') + tonumber(redis.call('GET', k(subject, 'heldsum')) or '0')
    if used + credits > climit then return { 0, 'quota_exceeded', 0, rl, math.max(rr, 0), rs } end
  end
  plan[#plan + 1] = step
end
for _, step in ipairs(plan) do
  if step.rpm then keep_arrival(k(step.subject, 'rpm'), step.rpm, step.rpm_limit) end
  if step.tpm then keep_arrival(k(step.subject, 'tpm'), step.tpm, step.tpm_limit) end
  if credits > 0 then
    redis.call('ZADD', k(step.subject, 'held'), now + hold, id)
    redis.call('HSET', k(step.subject, 'heldamt'), id, credits)
    redis.call('INCRBY', k(step.subject, 'heldsum'), credits)
  end
end
return { 1, rl, math.max(rr, 0), rs }
`;

/** ARGV: prefix, id, holdMs, n, then per subject: subject, limit. Answers 1 when every slot was free. */
const BEGIN_TASK = COMMON + `
local id, hold, n = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
for i = 0, n - 1 do
  local subject, limit = ARGV[5 + i * 2], tonumber(ARGV[6 + i * 2])
  redis.call('ZREMRANGEBYSCORE', k(subject, 'live'), '-inf', now)
  if redis.call('ZCARD', k(subject, 'live')) >= limit then return 0 end
end
for i = 0, n - 1 do redis.call('ZADD', k(ARGV[5 + i * 2], 'live'), now + hold, id) end
return 1
`;

/**
 * ARGV: prefix, ledgerId, reservationId, cost, tokensDelta, task (0/1), n, then per subject:
 * subject, tpm, credits limit (-1: none), period, period ttl seconds (0: none). A ledger id
 * settles once: the marker is set in the same script.
 */
const SETTLE = COMMON + `
if not redis.call('SET', prefix .. ':settled:' .. ARGV[2], 1, 'NX', 'EX', 172800) then return 0 end
local rid, cost, delta, task, n = ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6] == '1', tonumber(ARGV[7])
for i = 0, n - 1 do
  local b = 8 + i * 5
  local subject, tpm, climit, period, ttl = ARGV[b], tonumber(ARGV[b + 1]), tonumber(ARGV[b + 2]), ARGV[b + 3], tonumber(ARGV[b + 4])
  if task then redis.call('ZREM', k(subject, 'live'), rid) end
  local amount = redis.call('HGET', k(subject, 'heldamt'), rid)
  if amount then
    redis.call('HDEL', k(subject, 'heldamt'), rid)
    redis.call('ZREM', k(subject, 'held'), rid)
    redis.call('DECRBY', k(subject, 'heldsum'), tonumber(amount))
  end
  if climit >= 0 and cost > 0 then
    redis.call('INCRBY', k(subject, 'spent:' .. period), cost)
    if ttl > 0 then redis.call('EXPIRE', k(subject, 'spent:' .. period), ttl) end
  end
  if tpm > 0 and delta ~= 0 then
    local tat = arrival_under(k(subject, 'tpm'), tpm)
    -- Tokens used beyond the estimate count from now when the estimate's own time has passed already (a long call).
    if tat > now or delta > 0 then
      local nxt = tat + (W / tpm) * delta
      if nxt > now then keep_arrival(k(subject, 'tpm'), nxt, tpm) else redis.call('DEL', k(subject, 'tpm')) end
    end
  end
end
return 1
`;

/** ARGV: prefix, subject, period, spent, period ttl seconds, holdMs, then pairs of live request id and credits held. */
const SEED = COMMON + `
local subject, period, spent, ttl, hold = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6])
redis.call('SET', k(subject, 'spent:' .. period), spent)
if ttl > 0 then redis.call('EXPIRE', k(subject, 'spent:' .. period), ttl) end
redis.call('DEL', k(subject, 'live'), k(subject, 'held'), k(subject, 'heldamt'), k(subject, 'heldsum'))
local sum = 0
for i = 7, #ARGV, 2 do
  local id, amount = ARGV[i], tonumber(ARGV[i + 1])
  redis.call('ZADD', k(subject, 'live'), now + hold, id)
  if amount > 0 then
    redis.call('ZADD', k(subject, 'held'), now + hold, id)
    redis.call('HSET', k(subject, 'heldamt'), id, amount)
    sum = sum + amount
  end
end
redis.call('SET', k(subject, 'heldsum'), sum)
return 1
`;

interface LimitScripts {
  limitsAdmit(...args: (string | number)[]): Promise<(string | number)[]>;
  limitsBeginTask(...args: (string | number)[]): Promise<number>;
  limitsSettle(...args: (string | number)[]): Promise<number>;
  limitsSeed(...args: (string | number)[]): Promise<number>;
}

/** How long a period's spending is kept after it began: past its end, with a margin. */
function periodTtlSeconds(period: string): number {
  if (period.startsWith('d')) return 3 * 86_400;
  if (period.startsWith('m')) return 40 * 86_400;
  return 0;
}

function unavailable(err: unknown): never {
  throw redisUnavailable('the limits cannot be checked', err);
}

export class RedisLimitCounters implements LimitCounters {
  private readonly redis: Redis & LimitScripts;
  private readonly prefix: string;

  private constructor(
    redis: Redis & LimitScripts,
    prefix: string,
  ) {
    this.redis = redis;
    this.prefix = prefix;
  }

  static async connect(opts: { url: string; prefix: string; timeoutMs: number; logger: Logger }): Promise<RedisLimitCounters> {
    const redis = new Redis(opts.url, { ...failFastOptions(opts.timeoutMs), connectionName: `${opts.prefix}:limits`, lazyConnect: true });
    redis.on('error', (err: Error) => opts.logger.warn({ err }, 'redis limits connection error'));
    // defineCommand sends EVALSHA, and the script itself only when Redis does not know it yet.
    redis.defineCommand('limitsAdmit', { numberOfKeys: 0, lua: ADMIT });
    redis.defineCommand('limitsBeginTask', { numberOfKeys: 0, lua: BEGIN_TASK });
    redis.defineCommand('limitsSettle', { numberOfKeys: 0, lua: SETTLE });
    redis.defineCommand('limitsSeed', { numberOfKeys: 0, lua: SEED });
    await redis.connect();
    return new RedisLimitCounters(redis as Redis & LimitScripts, opts.prefix);
  }

  async admit(request: AdmitRequest): Promise<AdmitOutcome> {
    const args: (string | number)[] = [this.prefix, request.generation, request.id, request.tokens, request.credits, request.holdMs, request.subjects.length];
    for (const s of request.subjects) args.push(s.subject, s.rpm, s.tpm, s.credits, s.period);
    const answer = await this.redis.limitsAdmit(...args).catch(unavailable);
    if (answer[0] === 2) return { ok: false, code: 'stale', generation: Number(answer[1]) };
    if (answer[0] === 1) {
      const [, limit, remaining, resetMs] = answer as number[];
      return { ok: true, rate: limit! > 0 ? { limit: limit!, remaining: remaining!, resetMs: resetMs! } : undefined };
    }
    const [, code, retryAfterS, limit, remaining, resetMs] = answer;
    return {
      ok: false,
      code: code as 'rate_limited' | 'quota_exceeded',
      retryAfterS: Number(retryAfterS),
      rate: Number(limit) > 0 ? { limit: Number(limit), remaining: Number(remaining), resetMs: Number(resetMs) } : undefined,
    };
  }

  async limitsChanged(): Promise<number> {
    return this.redis.incr(`${this.prefix}:lim:generation`);
  }

  async beginTask(id: string, subjects: SubjectLimits[], holdMs: number): Promise<boolean> {
    const limited = subjects.filter((s) => s.concurrent > 0);
    if (limited.length === 0) return true;
    const args: (string | number)[] = [this.prefix, id, holdMs, limited.length];
    for (const s of limited) args.push(s.subject, s.concurrent);
    return (await this.redis.limitsBeginTask(...args).catch(unavailable)) === 1;
  }

  async settle(settlement: Settlement): Promise<void> {
    const args: (string | number)[] = [this.prefix, settlement.ledgerId, settlement.reservationId, settlement.cost, settlement.tokensDelta, settlement.task ? 1 : 0, settlement.subjects.length];
    for (const s of settlement.subjects) args.push(s.subject, s.tpm, s.credits, s.period, periodTtlSeconds(s.period));
    await this.redis.limitsSettle(...args).catch(unavailable);
  }

  async seed(seed: SubjectSeed, holdMs: number): Promise<void> {
    const args: (string | number)[] = [this.prefix, seed.subject, seed.period, seed.spent, periodTtlSeconds(seed.period), holdMs];
    for (const l of seed.live) args.push(l.id, l.held);
    await this.redis.limitsSeed(...args).catch(unavailable);
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
