import type { ClickHouseSettings } from '@clickhouse/client';
import { QueryTimeout } from './store-errors.js';

/**
 * Statement time limits (SPEC §5.6: `StoreConfig.queryTimeoutMs`, or a statement's own). What
 * each mechanism covers:
 *
 * - The engine's `max_execution_time` (seconds, fractional), sent with every statement as what is
 *   left of its budget when the engine gets it. The engine checks it between blocks of work and
 *   stops with TIMEOUT_EXCEEDED, which frees it: this is what cancels a long statement, in both
 *   modes. A server takes it per request; the embedded adapter turns it into a `SET` before the
 *   statement, which stays in the session, so once any statement carried a limit every later one
 *   carries its own (0: none).
 * - Server mode: a client-side abort (`abort_signal`) shortly after the deadline, for what the
 *   engine does not count: a server that does not answer, the transfer of its answer, work that
 *   does not check the clock. The caller hears at the deadline.
 * - Embedded mode: the engine runs one statement at a time per connection. chdb's abort cannot
 *   interrupt the engine, it only settles the call early; and chdb dispatches a statement without
 *   parameters at once, so one aborted while queued behind a slow statement would still run after
 *   it, keeping the engine busy for nobody (chdb skips aborted statements only in its own queue
 *   of parameterised ones). So statements take turns here (Turns) and are not given chdb's
 *   abort: the caller stops waiting at the deadline, a statement whose time ran out while it
 *   waited never reaches the engine, and the next one starts when the engine is really free
 *   (within the engine's limit of the one before).
 */

/** Past the deadline, the engine has this long to report its own timeout before the call is aborted. */
export const ABORT_GRACE_MS = 100;

export interface Limits {
  clickhouse_settings?: ClickHouseSettings;
  abort_signal?: AbortSignal;
}

/** Hands one client call the settings and signal of its statement's time limit. */
export type Exec = <R>(call: (limits: Limits) => Promise<R>) => Promise<R>;

/**
 * Of the turns taken while both lanes wait, the prioritized lane has at most this many in a row
 * before an ordinary statement gets one: API statements (milliseconds each) interleave with a
 * batch's statements instead of waiting behind the whole batch, and the batch still has two
 * thirds of the engine while API load keeps statements queued.
 */
export const URGENT_TURNS_IN_A_ROW = 2;

/**
 * The embedded engine's statements, one after the other (see above), in two lanes: a statement of
 * the ingest worker (a `prioritized()` store) goes before the ordinary ones waiting, so that API
 * load, which can keep several statements queued at any moment, never starves ingestion; but not
 * more than URGENT_TURNS_IN_A_ROW times in a row while ordinary ones wait, so a batch's statements
 * cannot hold them back for the whole batch either.
 */
class Turns {
  #busy = false;
  readonly #lanes: [(() => void)[], (() => void)[]] = [[], []];
  #urgentInARow = 0;

  /**
   * Starts `start` when the engine is free and no statement of a higher lane waits, unless `signal`
   * fired first; the answer settles when `start`'s does or when `signal` fires.
   */
  take<R>(signal: AbortSignal | undefined, start: () => Promise<R>, urgent = false): Promise<R> {
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
        Promise.resolve()
          .then(start)
          .then(
            (value) => settle(() => resolve(value)),
            (err: unknown) => settle(() => reject(err)),
          )
          .finally(() => this.#next());
      };
      this.#lanes[urgent ? 0 : 1].push(run);
      if (!this.#busy) this.#next();
    });
  }

  #next(): void {
    const [urgent, ordinary] = this.#lanes;
    const ordinaryTurn = urgent.length === 0 || (ordinary.length > 0 && this.#urgentInARow >= URGENT_TURNS_IN_A_ROW);
    this.#urgentInARow = ordinaryTurn ? 0 : this.#urgentInARow + 1;
    const run = ordinaryTurn ? ordinary.shift() : urgent.shift();
    this.#busy = run !== undefined;
    run?.();
  }
}

/** TIMEOUT_EXCEEDED, or TOO_SLOW when the engine projects the statement past its limit. */
function engineTimeout(err: unknown): boolean {
  const { code, type } = err as { code?: unknown; type?: unknown };
  return code === '159' || code === '160' || type === 'TIMEOUT_EXCEEDED' || type === 'TOO_SLOW';
}

/**
 * The time limit runner of one store: `limited(ms, work)` runs `work` under a limit of `ms`
 * (undefined: the store's; 0: none), `work` handing each client call to `exec`.
 */
export function timeLimits(mode: 'embedded' | 'server', storeMs: number | undefined) {
  const turns = mode === 'embedded' ? new Turns() : undefined;
  // Whether a statement carried a limit yet: from then on the embedded session holds one.
  let sent = storeMs !== undefined;
  /** Milliseconds the engine spent on each lane's statements (prioritized, ordinary): what a batch costs it. */
  const engineMs: [number, number] = [0, 0];
  const timed = <R>(urgent: boolean, call: () => Promise<R>): Promise<R> => {
    const started = performance.now();
    return call().finally(() => {
      engineMs[urgent ? 0 : 1] += performance.now() - started;
    });
  };
  const run = async <T>(ms: number | undefined, work: (exec: Exec) => Promise<T>, urgent = false): Promise<T> => {
    const budget = ms ?? storeMs ?? 0;
    if (budget === 0) {
      const limits: Limits = sent ? { clickhouse_settings: { max_execution_time: 0 } } : {};
      return work((call) =>
        turns ? turns.take(undefined, () => timed(urgent, () => call(limits)), urgent) : timed(urgent, () => call(limits)),
      );
    }
    sent = true;
    const deadline = performance.now() + budget;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), budget + ABORT_GRACE_MS);
    const start = <R>(call: (limits: Limits) => Promise<R>): Promise<R> => {
      const left = Math.ceil(deadline - performance.now());
      if (left <= 0) return Promise.reject(new QueryTimeout(budget));
      const settings = { max_execution_time: left / 1000 };
      return timed(urgent, () =>
        call(turns ? { clickhouse_settings: settings } : { clickhouse_settings: settings, abort_signal: controller.signal }),
      );
    };
    try {
      return await work((call) => (turns ? turns.take(controller.signal, () => start(call), urgent) : start(call)));
    } catch (err) {
      if (err instanceof QueryTimeout) throw err;
      if (controller.signal.aborted || engineTimeout(err)) throw new QueryTimeout(budget, { cause: err });
      throw err;
    } finally {
      clearTimeout(timer);
    }
  };
  return Object.assign(run, { engineMs: (urgent: boolean) => engineMs[urgent ? 0 : 1] });
}
