/**
 * The embedded engine's statements, one after the other (src/storage/time-limits.ts says why), in
 * three lanes:
 *
 * - URGENT: the ingest worker's statements (a `prioritized()` store) go before the others waiting,
 *   so that API load, which can keep several statements queued at any moment, never starves
 *   ingestion; but not more than URGENT_TURNS_IN_A_ROW times in a row while others wait, so a
 *   batch's statements cannot hold the API back for the whole batch either.
 * - SHORT and LONG: the other statements, by what the same statement text (its values apart) cost
 *   the engine lately. A short one (a counter read, a cached statistic's miss) goes before the long
 *   ones waiting (a dated statistic, a deep findings page), but not more than SHORT_TURNS_IN_A_ROW
 *   times in a row while a long one waits: the requests that cost milliseconds answer in
 *   milliseconds while the engine is busy, and a long statement waits for a bounded few of them.
 *   A statement never seen goes in the long lane; within a lane, the order is the order of arrival.
 */

/**
 * Of the turns taken while other statements wait, the prioritized lane has at most this many in a
 * row: API statements (milliseconds each) interleave with a batch's statements instead of waiting
 * behind the whole batch, and the batch still has two thirds of the engine while API load keeps
 * statements queued.
 */
export const URGENT_TURNS_IN_A_ROW = 2;

/** A statement whose text lately cost the engine at most this (ms, a moving average) is short. */
export const SHORT_MS = 25;

/** Of the other statements' turns taken while a long one waits, short ones have at most this many in a row. */
export const SHORT_TURNS_IN_A_ROW = 4;

/** Statement texts whose cost is remembered; past this the oldest is forgotten (texts are the code's, values bound). */
const REMEMBERED_SHAPES = 2000;

/** The weight of the latest run in a text's moving average. */
const LATEST_WEIGHT = 0.3;

export class Turns {
  #busy = false;
  readonly #urgent: (() => void)[] = [];
  readonly #short: (() => void)[] = [];
  readonly #long: (() => void)[] = [];
  #urgentInARow = 0;
  #shortInARow = 0;
  /** What each statement text cost the engine lately (ms, moving average). */
  readonly #cost = new Map<string, number>();

  /**
   * Starts `start` when the engine is free and it is this statement's turn, unless `signal` fired
   * first; the answer settles when `start`'s does or when `signal` fires. `shape`: the statement's
   * text without its values ('' for no shape: a long statement).
   */
  take<R>(signal: AbortSignal | undefined, start: () => Promise<R>, urgent = false, shape = ''): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      let settled = false;
      const settle = (done: () => void) => {
        signal?.removeEventListener('abort', giveUp);
        if (!settled) {
          settled = true;
          done();
        }
      };
      const giveUp = () => settle(() => reject(new Error('time limit reached before the engine answered')));
      signal?.addEventListener('abort', giveUp, { once: true });
      const run = () => {
        // Its time ran out while it waited: it never reaches the engine.
        if (signal?.aborted) return this.#next();
        const started = performance.now();
        Promise.resolve()
          .then(start)
          .then(
            (value) => settle(() => resolve(value)),
            (err: unknown) => settle(() => reject(err)),
          )
          .finally(() => {
            this.#learn(shape, performance.now() - started);
            this.#next();
          });
      };
      this.#laneOf(urgent, shape).push(run);
      if (!this.#busy) this.#next();
    });
  }

  #laneOf(urgent: boolean, shape: string): (() => void)[] {
    if (urgent) return this.#urgent;
    const cost = shape === '' ? undefined : this.#cost.get(shape);
    return cost !== undefined && cost <= SHORT_MS ? this.#short : this.#long;
  }

  #learn(shape: string, ms: number): void {
    if (shape === '') return;
    const before = this.#cost.get(shape);
    this.#cost.delete(shape);
    if (this.#cost.size >= REMEMBERED_SHAPES) this.#cost.delete(this.#cost.keys().next().value!);
    this.#cost.set(shape, before === undefined ? ms : before + LATEST_WEIGHT * (ms - before));
  }

  #next(): void {
    const others = this.#short.length + this.#long.length;
    let run: (() => void) | undefined;
    if (this.#urgent.length > 0 && (others === 0 || this.#urgentInARow < URGENT_TURNS_IN_A_ROW)) {
      this.#urgentInARow += 1;
      run = this.#urgent.shift();
    } else {
      this.#urgentInARow = 0;
      if (this.#short.length > 0 && (this.#long.length === 0 || this.#shortInARow < SHORT_TURNS_IN_A_ROW)) {
        this.#shortInARow += 1;
        run = this.#short.shift();
      } else {
        this.#shortInARow = 0;
        run = this.#long.shift();
      }
    }
    this.#busy = run !== undefined;
    run?.();
  }
}
