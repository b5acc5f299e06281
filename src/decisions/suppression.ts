import { randomUUID } from 'node:crypto';
import type { DecisionFilter, SuppressionFilter } from '../filters/params.js';
import { clampAt, type Sql } from '../filters/sql.js';
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
 *   decisions costs a statement hundreds of milliseconds (bench/HISTORY.md);
 * - the findings suppressed at an instant, as a Set table the engine tests without running a
 *   subquery (bench/HISTORY.md: a third of the condition's cost at 1M). Activity changes only at the
 *   intervals' ends, so one set answers every instant between two consecutive ends: it is made from
 *   the copy at the first of them, when a statement first needs it. The sets the process holds are
 *   bounded (MAX_SETS, those awaiting their drop included), whatever instants clients ask about:
 *   beyond them a statement reads the copy itself.
 * Tables of earlier states are dropped a while later, once the statements that read them are done.
 */

const NONE: Sql = { where: [], params: {} };
/** No finding is suppressed at the instant. */
const NOTHING: Sql = { where: ['0'], params: {} };
const PARAM = 'supAt';
const PREFIX = 'decision_intervals_';
const DROP_AFTER_MS = 60_000;
/** Set tables held at once, those of earlier states awaiting their drop included. */
const MAX_SETS = 32;

/** The rule's result for one state of the data, and the sets made from it. */
interface Copy {
  table: string;
  /** Every instant at which some decision's activity begins or ends, ascending. */
  ends: number[];
  sets: Map<string, Promise<string>>;
}

export class Suppression {
  private present: Promise<boolean> | undefined;
  private copy: Promise<Copy> | undefined;
  private setsHeld = 0;

  /** `maxSets`: the Set tables held at once (MAX_SETS; tests pass fewer). */
  constructor(
    private readonly store: Store,
    private readonly maxSets = MAX_SETS,
  ) {}

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
    if (!old) return;
    // Its tables are dropped once the statements that read them are done.
    const drop = () =>
      void old.then(
        (copy) => {
          this.drop(copy.table);
          for (const set of copy.sets.values()) this.drop(set, () => this.setsHeld--);
        },
        () => undefined,
      );
    setTimeout(drop, DROP_AFTER_MS).unref();
  }

  private drop(table: string | Promise<string>, dropped = () => {}): void {
    void Promise.resolve(table)
      .then((name) => this.store.command(`DROP TABLE IF EXISTS ${name}`))
      .then(dropped, () => undefined);
  }

  private current(): Promise<Copy> {
    if (!this.copy) {
      const made = this.makeCopy();
      made.catch(() => {
        if (this.copy === made) this.copy = undefined;
      });
      this.copy = made;
    }
    return this.copy;
  }

  /**
   * Drops the tables a process on this data folder left when it stopped (called once, at start,
   * before any statement needs the rule's result: another object's tables are not leftovers).
   */
  async dropLeftovers(): Promise<void> {
    if (!this.store.exclusive) return;
    const left = await this.store.query<{ name: string }>(
      'SELECT name FROM system.tables WHERE database = currentDatabase() AND startsWith(name, {prefix:String})',
      { prefix: PREFIX },
    );
    for (const { name } of left) await this.store.command(`DROP TABLE IF EXISTS ${name}`);
  }

  private async makeCopy(): Promise<Copy> {
    const table = this.newName();
    await this.store.command(`CREATE TABLE ${table} ENGINE = Memory AS ${decisionIntervals()}`);
    const ends = await this.store.query<{ t: number }>(`SELECT DISTINCT toUInt32(arrayJoin([since, until])) AS t FROM ${table} ORDER BY t`);
    return { table, ends: ends.map((r) => Number(r.t)), sets: new Map() };
  }

  private newName = () => `${PREFIX}${randomUUID().replaceAll('-', '')}`;

  /**
   * The Set table of the findings (of `decision`, or all) suppressed from the end `from` of `copy`
   * to the next; undefined when the process holds as many sets as it may.
   */
  private setFrom(copy: Copy, from: number, decision: string | undefined): Promise<string> | undefined {
    const key = `${from}:${decision ?? ''}`;
    const held = copy.sets.get(key);
    if (held || this.setsHeld >= this.maxSets) return held;
    this.setsHeld++;
    const made = this.makeSet(copy.table, activeAtFor(from, decision));
    made.catch(() => {
      this.setsHeld--;
      if (copy.sets.get(key) === made) copy.sets.delete(key); // made again next time
    });
    copy.sets.set(key, made);
    return made;
  }

  private async makeSet(copy: string, active: Sql): Promise<string> {
    const name = this.newName();
    await this.store.command(`CREATE TABLE ${name} (finding_id UUID) ENGINE = Set SETTINGS persistent = 0`);
    try {
      await this.store.command(`INSERT INTO ${name} SELECT finding_id FROM ${copy} WHERE ${active.where[0]}`, active.params);
    } catch (err) {
      this.drop(name);
      throw err;
    }
    return name;
  }

  /**
   * The findings suppressed at T: a condition on their id, unique across targets
   * (src/domain/ids.ts), which the engine tests faster than the pair (target_id, id). Where the
   * process keeps the rule's result, the set of T's span between two ends (or the copy, when no
   * more sets may be held; nothing before the first end); elsewhere the rule's statement. T is bound
   * as `param` wherever a statement evaluates "active at T" itself.
   */
  private async suppressedAt(t: number, decision?: string, param = PARAM): Promise<Sql> {
    const atT = activeAtFor(t, decision, param);
    const activeIn = (intervals: string): Sql => ({
      where: [`id IN (SELECT finding_id FROM ${intervals} WHERE ${atT.where[0]})`],
      params: atT.params,
    });
    if (!this.store.exclusive) return activeIn(`(${decisionIntervals()})`);
    const copy = await this.current();
    const from = lastAtOrBefore(copy.ends, clampAt(t));
    if (from === undefined) return NOTHING;
    const set = this.setFrom(copy, from, decision);
    return set ? { where: [`id IN ${await set}`], params: {} } : activeIn(copy.table);
  }

  /**
   * The condition leaving out of a statistic the findings suppressed at `t` (SPEC §12.3), on the
   * rows of `findings` or a team's copy; undefined when nothing can be suppressed or includeSuppressed.
   * `param` names the instant's parameter where one statement tests several instants (a series).
   */
  async notSuppressedAt(f: SuppressionFilter, t: number, param = PARAM): Promise<Sql | undefined> {
    if (f.includeSuppressed || !(await this.mayExist())) return undefined;
    const suppressed = await this.suppressedAt(t, undefined, param);
    return suppressed === NOTHING ? undefined : this.not(suppressed);
  }

  private not(suppressed: Sql): Sql {
    return { where: [`NOT ${suppressed.where[0]}`], params: suppressed.params };
  }

  /** `decision=` of findings lists (SPEC §12.3): findings by the decision active at `t`. */
  async selection(filter: DecisionFilter | undefined, t: number): Promise<Sql> {
    if (filter === undefined) return NONE;
    if (!(await this.mayExist())) return filter === 'none' ? NONE : NOTHING;
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

/** "Active at t" (active.ts) on rows of the rule's result, of one kind of decision or all. */
function activeAtFor(t: number, decision: string | undefined, param = PARAM): Sql {
  return decision
    ? { where: [`${activeAt(param)} AND decision = {supDecision:String}`], params: { ...activeAtParams(param, t), supDecision: decision } }
    : { where: [activeAt(param)], params: activeAtParams(param, t) };
}

/** The last of ascending `xs` at or before `t`, by bisection. */
function lastAtOrBefore(xs: readonly number[], t: number): number | undefined {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (xs[mid]! <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo > 0 ? xs[lo - 1] : undefined;
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
