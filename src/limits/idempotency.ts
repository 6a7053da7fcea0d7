import { createHash } from 'node:crypto';
import { pipeline, Transform, type Readable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { ApiError } from '../core/errors.ts';
import type { IdempotencyRepo, IdempotencyScope } from '../storage/repos/idempotency-repo.ts';

/** How long a key and its answer are kept. */
const KEEP_MS = 24 * 60 * 60 * 1000;
const KEY = /^[\x20-\x7e]{1,255}$/;
/** Answers made before anything was created (503: Redis did not answer the limit check); the key may be used again. */
const NOT_KEPT = new Set([400, 401, 403, 404, 429, 503]);
/** A retry looks for the first call's answer this often while that call runs. */
const POLL_MS = 100;

export type IdempotentStart =
  /** This call is the first under the key: it runs, and its answer is kept. */
  | { kind: 'first'; at: IdempotencyScope; createdAt: number }
  /** The first call's answer, to replay. */
  | { kind: 'replay'; status: number; contentType: string | null; body: string };

/** The key of a POST, or undefined without one; 400 invalid_idempotency_key when malformed. */
export function idempotencyKeyOf(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  const key = Array.isArray(header) ? header[0] : header;
  if (key === undefined || !KEY.test(key)) throw new ApiError('invalid_idempotency_key', 'Idempotency-Key must be 1 to 255 printable ASCII characters', 'Idempotency-Key');
  return key;
}

/** The hash a retry's body is compared with. */
export function bodyHashOf(body: unknown): string {
  return createHash('sha256').update(body === undefined ? '' : JSON.stringify(body)).digest('hex');
}

/**
 * The hash of a multipart body, taken while its parts are read: every part in order, with its
 * name, its content type, its file name and the digest of its value or bytes. File bytes are
 * hashed as they stream by, never held. The boundary (a client's pick for each request) is not in it.
 */
export class FormFingerprint {
  private readonly parts: Promise<string>[] = [];

  field(name: string, mimeType: string, value: unknown): void {
    const digest = createHash('sha256').update(typeof value === 'string' ? value : JSON.stringify(value)).digest('hex');
    this.parts.push(Promise.resolve(JSON.stringify(['field', name, mimeType, digest])));
  }

  /** The file's bytes to read in place of `bytes`: the same bytes, hashed on their way through. */
  file(name: string, fileName: string, mimeType: string, bytes: Readable): Readable {
    const hash = createHash('sha256');
    const tap = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        hash.update(chunk);
        done(null, chunk);
      },
    });
    const part = new Promise<string>((resolve, reject) => {
      pipeline(bytes, tap, (err) => (err ? reject(err) : resolve(JSON.stringify(['file', name, mimeType, fileName, hash.digest('hex')]))));
    });
    // A part the reader gave up on fails the digest, if it is ever asked for; never an unhandled rejection.
    part.catch(() => undefined);
    this.parts.push(part);
    return tap;
  }

  /** The body's hash, once every part has been read through. */
  async digest(): Promise<string> {
    const hash = createHash('sha256');
    for (const part of await Promise.all(this.parts)) hash.update(`${part}\n`);
    return hash.digest('hex');
  }
}

/** Raised where a call learns, once its body is read, that it repeats an earlier call: the earlier answer is sent instead of its own. */
export class IdempotentReplay extends Error {
  readonly answer: Extract<IdempotentStart, { kind: 'replay' }>;

  constructor(answer: Extract<IdempotentStart, { kind: 'replay' }>) {
    super('the answer of an earlier call under the same Idempotency-Key');
    this.answer = answer;
  }
}

/**
 * Idempotency keys: the first call under a key runs and its answer is kept 24 hours; a retry
 * with the same body replays it (waiting while the first still runs, so a sync retry answers as
 * the first will), a retry with another body is 422. Kept in the database, so every instance sees them.
 */
export class IdempotencyService {
  private timer: NodeJS.Timeout | undefined;

  private readonly repo: IdempotencyRepo;
  private readonly opts: {
      /** How long a first call may run before a retry takes its key over (its instance died). */
      abandonAfterMs: number;
      now?: () => number;
    };

  constructor(
    repo: IdempotencyRepo,
    opts: {
      /** How long a first call may run before a retry takes its key over (its instance died). */
      abandonAfterMs: number;
      now?: () => number;
    },
  ) {
    this.repo = repo;
    this.opts = opts;
  }

  private now(): number {
    return (this.opts.now ?? Date.now)();
  }

  async start(userId: string, scope: string, key: string, bodyHash: string): Promise<IdempotentStart> {
    const at = { user_id: userId, scope, key };
    for (;;) {
      const now = this.now();
      if (await this.repo.claim({ ...at, body_hash: bodyHash, state: 'running', status_code: null, content_type: null, response: null, created_at: now, expires_at: now + KEEP_MS })) {
        return { kind: 'first', at, createdAt: now };
      }
      const row = await this.repo.find(at);
      if (!row) continue;
      if (row.expires_at <= now || (row.state === 'running' && row.created_at + this.opts.abandonAfterMs <= now)) {
        await this.repo.release(at, row.created_at);
        continue;
      }
      if (row.body_hash !== bodyHash) throw new ApiError('idempotency_key_reused', 'this Idempotency-Key was used with another body', 'Idempotency-Key');
      if (row.state === 'done') return { kind: 'replay', status: row.status_code ?? 200, contentType: row.content_type, body: row.response ?? '' };
      await delay(POLL_MS);
    }
  }

  /** Keeps the first call's answer, or frees the key when the answer created nothing (400/401/403/404/429/503). */
  async finish(at: IdempotencyScope, createdAt: number, status: number, contentType: string | null, body: string | undefined): Promise<void> {
    if (NOT_KEPT.has(status) || body === undefined) await this.repo.release(at, createdAt);
    else await this.repo.complete(at, { status_code: status, content_type: contentType, response: body });
  }

  /** Drops keys past their 24 hours, now and every hour. */
  startSweep(onError: (err: unknown) => void): void {
    const sweep = () => void this.repo.deleteExpired(this.now()).catch(onError);
    this.timer = setInterval(sweep, 60 * 60 * 1000);
    this.timer.unref();
    sweep();
  }

  stopSweep(): void {
    clearInterval(this.timer);
  }
}
