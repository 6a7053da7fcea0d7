import { performance } from 'node:perf_hooks';

/**
 * Keeps a burst of new calls from holding the event loop. Thousands of calls arriving at once
 * (streams opened together) would each be set up, a few hundred microseconds apiece, in one turn
 * of the loop, while the chunks of streams already under way wait in their sockets for the whole
 * burst. Once new calls have taken `budgetMs` of a turn, later ones wait, in arrival order, for
 * the next turn, which lets as many go on as its own budget allows: between two turns the loop
 * relays whatever arrived meanwhile. A call that finds the turn short and nobody waiting goes on
 * at once.
 */
export class TurnPacer {
  readonly #budgetMs: number;
  readonly #now: () => number;
  readonly #waiting: (() => void)[] = [];
  /** Where the waiting start in #waiting (shifting each one out would copy the rest). */
  #head = 0;
  /** When the first call of this turn went on; -1 before one did. */
  #turnStartedAt = -1;
  #scheduled = false;

  constructor(budgetMs: number, now: () => number = () => performance.now()) {
    this.#budgetMs = budgetMs;
    this.#now = now;
  }

  /** Undefined when the call may go on now, else what resolves when its turn comes. */
  enter(): Promise<void> | undefined {
    if (this.#head === this.#waiting.length && this.#withinTurn()) return undefined;
    return new Promise<void>((resolve) => {
      this.#waiting.push(resolve);
      this.#schedule();
    });
  }

  /** Calls waiting for a turn. */
  get waiting(): number {
    return this.#waiting.length - this.#head;
  }

  #withinTurn(): boolean {
    const now = this.#now();
    if (this.#turnStartedAt < 0) {
      this.#turnStartedAt = now;
      this.#schedule();
      return true;
    }
    return now - this.#turnStartedAt < this.#budgetMs;
  }

  /** The next turn begins after this turn's I/O (setImmediate runs after the loop's poll phase). */
  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(this.#nextTurn);
  }

  /** A new turn: waiting calls go on while it lasts. */
  readonly #nextTurn = (): void => {
    this.#scheduled = false;
    this.#turnStartedAt = -1;
    if (this.#head === this.#waiting.length) return;
    this.#turnStartedAt = this.#now();
    this.#schedule();
    this.#releaseNext();
  };

  /**
   * Lets the first waiting call go on if the turn has time left. The next is looked at once the
   * released call's setup has run: a tick queued from a microtask runs after every microtask, the
   * ones the call goes on to queue included.
   */
  readonly #releaseNext = (): void => {
    if (this.#head === this.#waiting.length || this.#now() - this.#turnStartedAt >= this.#budgetMs) return;
    const next = this.#waiting[this.#head]!;
    this.#head += 1;
    if (this.#head === this.#waiting.length) {
      this.#waiting.length = 0;
      this.#head = 0;
    }
    next();
    queueMicrotask(this.#afterSetup);
  };

  readonly #afterSetup = (): void => {
    process.nextTick(this.#releaseNext);
  };
}
