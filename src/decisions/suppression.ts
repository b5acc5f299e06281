import { randomUUID } from 'node:crypto';
import type { DecisionFilter, SuppressionFilter } from '../filters/params.js';
import type { Sql } from '../filters/sql.js';
import type { Store } from '../storage/gateway.js';
import { activeAt, activeAtParams, decisionIntervals } from './active.js';
import { type Decision, decisionsAt } from './store.js';

/**
 * Suppression in statistics and lists (SPEC §7, §12.3), owned by one object created with the
 * service and passed to every reader. The rule is `active.ts` (each decision's interval of
 * activity, stated once in SQL); a statistic is the same statement with the condition "not
 * suppressed at its reference instant" (`notSuppressedAt`), lists select by `selection`.
 *
 * What the process keeps, only for a store it alone writes (`Store.exclusive`; a store shared with
 * other processes changes behind its back, and there every statement evaluates the rule itself):
 * - whether the store holds any decision, so that while none was ever made statements pay nothing
 *   for suppression (any extra table costs the embedded engine milliseconds to plan);
 * - the result of the rule's statement (every decision's interval) in a Memory table, made when a
 *   statement first needs it after a change (`changed()`: a decision written, data committed): the
 *   rule reads the FOUND events of every finding with a false positive, which for thousands of
 *   decisions costs a statement hundreds of milliseconds (bench/HISTORY.md). Copies of earlier
 *   states are dropped a while later, once the statements that read them are done.
 */

const NONE: Sql = { where: [], params: {} };
const PARAM = 'supAt';
const COPY_PREFIX = 'decision_intervals_';
const DROP_AFTER_MS = 60_000;

export class Suppression {
  private present: Promise<boolean> | undefined;
  private copy: Promise<string> | undefined;
  private leftoversDropped = false;

  constructor(private readonly store: Store) {}

  /** Whether the store may hold a decision (read once where the process sees every write). */
  mayExist(): Promise<boolean> {
    if (!this.store.exclusive) return Promise.resolve(true);
    if (!this.present) {
      const read = this.store.query<{ n: number }>('SELECT count() AS n FROM finding_decisions').then(([row]) => Number(row?.n ?? 0) > 0);
      read.catch(() => {
        if (this.present === read) this.present = undefined; // ask again next time
      });
      this.present = read;
    }
    return this.present;
  }

  /** A decision was stored or revoked: from now on statements leave suppressed findings out. */
  decided(): void {
    this.present = Promise.resolve(true);
    this.changed();
  }

  /** The data or the decisions changed: the rule's result is read again when next needed. */
  changed(): void {
    const old = this.copy;
    this.copy = undefined;
    if (old) {
      const drop = () => void old.then((table) => this.store.command(`DROP TABLE IF EXISTS ${table}`)).catch(() => undefined);
      setTimeout(drop, DROP_AFTER_MS).unref();
    }
  }

  /** The rows of the decisions' intervals (active.ts): the copy of the current state, or the statement. */
  private async intervals(): Promise<string> {
    if (!this.store.exclusive) return `(${decisionIntervals()})`;
    if (!this.copy) {
      const made = this.makeCopy();
      made.catch(() => {
        if (this.copy === made) this.copy = undefined;
      });
      this.copy = made;
    }
    return this.copy;
  }

  private async makeCopy(): Promise<string> {
    if (!this.leftoversDropped) {
      // Copies a process on this data folder left when it stopped.
      const left = await this.store.query<{ name: string }>(
        'SELECT name FROM system.tables WHERE database = currentDatabase() AND startsWith(name, {prefix:String})',
        { prefix: COPY_PREFIX },
      );
      for (const { name } of left) await this.store.command(`DROP TABLE IF EXISTS ${name}`);
      this.leftoversDropped = true;
    }
    const table = `${COPY_PREFIX}${randomUUID().replaceAll('-', '')}`;
    await this.store.command(`CREATE TABLE ${table} ENGINE = Memory AS ${decisionIntervals()}`);
    return table;
  }

  /**
   * The findings suppressed at T (bound as PARAM): a condition on their id, unique across targets
   * (src/domain/ids.ts), which the engine tests faster than the pair (target_id, id).
   */
  private async suppressedAt(t: number, decision?: string, param = PARAM): Promise<Sql> {
    const which = decision ? ' AND decision = {supDecision:String}' : '';
    return {
      where: [`id IN (SELECT finding_id FROM ${await this.intervals()} WHERE ${activeAt(param)}${which})`],
      params: { ...activeAtParams(param, t), ...(decision ? { supDecision: decision } : {}) },
    };
  }

  /**
   * The condition leaving out of a statistic the findings suppressed at `t` (SPEC §12.3), on the
   * rows of `findings` or a team's copy; undefined when nothing can be suppressed or includeSuppressed.
   * `param` names the instant's parameter where one statement tests several instants (a series).
   */
  async notSuppressedAt(f: SuppressionFilter, t: number, param = PARAM): Promise<Sql | undefined> {
    if (f.includeSuppressed || !(await this.mayExist())) return undefined;
    return this.not(await this.suppressedAt(t, undefined, param));
  }

  private not(suppressed: Sql): Sql {
    return { where: [`NOT ${suppressed.where[0]}`], params: suppressed.params };
  }

  /** `decision=` of findings lists (SPEC §12.3): findings by the decision active at `t`. */
  async selection(filter: DecisionFilter | undefined, t: number): Promise<Sql> {
    if (filter === undefined) return NONE;
    if (!(await this.mayExist())) return filter === 'none' ? NONE : { where: ['0'], params: {} };
    if (filter === 'any') return this.suppressedAt(t);
    if (filter !== 'none') return this.suppressedAt(t, filter);
    return this.not(await this.suppressedAt(t));
  }

  /** The decision active at `t` of each of these findings (a finding object's `decision`). */
  async decisionsAt(findingIds: readonly string[], t: number): Promise<Map<string, Decision>> {
    if (findingIds.length === 0 || !(await this.mayExist())) return new Map();
    return decisionsAt(this.store, findingIds, t);
  }
}

/**
 * A statistic's reference instant (SPEC §4.1, §12.3): atDate's T, a range's end E = min(U, now)
 * (U the exclusive end of maxDate's day; only minDate: now), else now.
 */
export function referenceInstant(
  f: { atDate?: number | undefined; minDate?: number | undefined; maxDateEnd?: number | undefined },
  now: number,
): number {
  if (f.atDate !== undefined) return f.atDate;
  if (f.maxDateEnd !== undefined) return Math.min(f.maxDateEnd, now);
  return now;
}
