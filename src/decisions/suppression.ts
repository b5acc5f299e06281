import type { DecisionFilter, SuppressionFilter } from '../filters/params.js';
import { findingsIn, merge, type Scope, type Sql, whereClause } from '../filters/sql.js';
import type { Store } from '../storage/gateway.js';
import { activeAtParams, activeDecisionsAt, notSuppressedAt, suppressedAt } from './active.js';
import { type Decision, decisionsAt } from './store.js';

/**
 * Suppression in statistics and lists (SPEC §7, §12.3), owned by one object created with the
 * service and passed to every reader. Every condition comes from `active.ts` ("active at T", stated
 * once in SQL); this object adds only what the process knows for sure: whether the store holds any
 * decision at all, so that while none was ever made statements pay nothing for suppression (any
 * extra table costs the embedded engine milliseconds to plan, as much as a small statistic).
 *
 * A store written by this process alone (`Store.exclusive`) sees every decision made through it
 * (`decided()`): the answer, read once, stays exact. A store shared with other processes may hold
 * decisions this one did not see: there it is always "maybe". Decisions are never deleted.
 */

const NONE: Sql = { where: [], params: {} };
const PARAM = 'supAt';

/** The rows of the findings in scope suppressed at T: a FROM body and its conditions. */
export interface SuppressedRows {
  from: string;
  scope: Sql;
}

export class Suppression {
  private present: Promise<boolean> | undefined;

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

  /** A decision was stored: from now on statements leave suppressed findings out. */
  decided(): void {
    this.present = Promise.resolve(true);
  }

  /**
   * The rows of the findings in scope `f` suppressed at `t`, which a statistic counts a second time
   * with the weight −1 (`signedRows`); undefined when nothing can be suppressed or includeSuppressed.
   */
  async suppressedRows(f: Scope & SuppressionFilter, t: number): Promise<SuppressedRows | undefined> {
    if (f.includeSuppressed || !(await this.mayExist())) return undefined;
    const rows = findingsIn(f);
    return { from: rows.from, scope: merge(rows.scope, { where: [suppressedAt(PARAM)], params: activeAtParams(PARAM, t) }) };
  }

  /** `decision=` of findings lists (SPEC §12.3): findings by the decision active at `t`. */
  async selection(filter: DecisionFilter | undefined, t: number): Promise<Sql> {
    if (filter === undefined) return NONE;
    if (!(await this.mayExist())) return filter === 'none' ? NONE : { where: ['0'], params: {} };
    const params = activeAtParams(PARAM, t);
    if (filter === 'none') return { where: [notSuppressedAt(PARAM)], params };
    if (filter === 'any') return { where: [suppressedAt(PARAM)], params };
    return {
      where: [`(target_id, id) IN (SELECT target_id, finding_id FROM (${activeDecisionsAt(PARAM)}) WHERE decision = {supDecision:String})`],
      params: { ...params, supDecision: filter },
    };
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

/** The rows a statistic aggregates, as a FROM body and the conditions of its scope. */
export interface SignedRows {
  from: string;
  scope: Sql;
  /**
   * Each row's weight: `1`, or with suppressed findings the column `sign`, −1 on their rows (which
   * the selection's rows also hold), so that `sum(${sign})`, `sum(if(c, ${sign}, 0))` and
   * `sum(${sign} * v)` leave them out.
   */
  sign: string;
}

/** Aggregates over signed rows: the plain ones where no row is subtracted. */
export const signed = {
  count: (rows: SignedRows) => (rows.sign === '1' ? 'count()' : `sum(${rows.sign})`),
  countIf: (rows: SignedRows, condition: string) =>
    rows.sign === '1' ? `countIf(${condition})` : `sum(if(${condition}, ${rows.sign}, 0))`,
  sum: (rows: SignedRows, value: string) => (rows.sign === '1' ? `sum(${value})` : `sum(${rows.sign} * toInt64(${value}))`),
};

/**
 * The rows of a selection (`rows`, of which a statistic reads `columns`), plus the suppressed ones
 * with the weight −1: one UNION ALL of plain columns, whose conditions and aggregates the statistic
 * writes once over both. Every statistic is additive in its rows (counts, sums, counts per value),
 * so this is the statistic over the findings not suppressed — also where it reads materialized
 * counters that know nothing of decisions.
 */
export function signedRows(
  rows: { from: string; scope: Sql },
  columns: readonly string[],
  suppressed: SuppressedRows | undefined,
): SignedRows {
  if (!suppressed) return { ...rows, sign: '1' };
  const list = columns.join(', ');
  return {
    from: `(SELECT ${list}, toInt64(1) AS sign FROM ${rows.from} ${whereClause(rows.scope)}
            UNION ALL
            SELECT ${list}, toInt64(-1) AS sign FROM ${suppressed.from} ${whereClause(suppressed.scope)})`,
    scope: { where: [], params: { ...rows.scope.params, ...suppressed.scope.params } },
    sign: 'sign',
  };
}
