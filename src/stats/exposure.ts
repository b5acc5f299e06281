import type { Suppression } from '../decisions/suppression.js';
import { findingsIn, labelsAndScores, merge, sqlAt, sqlTime, state, type Sql, whereClause } from '../filters/sql.js';
import type { Store } from '../storage/gateway.js';
import type { StatFilters } from './filters.js';
import { round2 } from './numbers.js';
import type { PercentilesBody } from './schema.js';

/**
 * Exposure percentiles (SPEC §7.5, §7.6, §7.8). Exposures are whole hours, so the findings in scope
 * have a few thousand distinct values at most: the engine counts the findings per value (leaving
 * out those suppressed at T, §12.3) and the percentiles are
 * interpolated from those counts, with h = p × (n − 1) as §7.8 defines (quantilesExactInclusive's
 * rule). Counting per value costs the engine less than collecting every value to rank it.
 */

const LEVELS = [0.1, 0.25, 0.5, 0.75, 0.9] as const;

/** The percentiles and mean of the values counted in `histogram` ([value, count], ascending). */
export function percentilesOfCounts(histogram: readonly (readonly [number, number])[]): PercentilesBody {
  const n = histogram.reduce((sum, [, c]) => sum + c, 0);
  if (n === 0) return { percentile_10: 0, percentile_25: 0, percentile_50: 0, percentile_75: 0, percentile_90: 0, mean: 0 };
  /** The value of rank r (0-based) among the n values. */
  const at = (r: number) => {
    let seen = 0;
    for (const [value, c] of histogram) {
      seen += c;
      if (r < seen) return value;
    }
    return histogram[histogram.length - 1]![0];
  };
  const [p10, p25, p50, p75, p90] = LEVELS.map((p) => {
    const h = p * (n - 1);
    const lo = Math.floor(h);
    const a = at(lo);
    return a + (h - lo) * (at(Math.min(lo + 1, n - 1)) - a);
  }) as [number, number, number, number, number];
  const sum = histogram.reduce((s, [value, c]) => s + value * c, 0);
  return {
    percentile_10: round2(p10),
    percentile_25: round2(p25),
    percentile_50: round2(p50),
    percentile_75: round2(p75),
    percentile_90: round2(p90),
    mean: round2(sum / n),
  };
}

/** The percentiles of `valueSql` over the findings in scope meeting `conditions` and not suppressed at `t`. */
async function percentilesOf(
  store: Store,
  suppression: Suppression,
  valueSql: string,
  f: StatFilters,
  conditions: Sql,
  t: number,
): Promise<PercentilesBody> {
  const { from, scope } = findingsIn(f);
  const kept = await suppression.notSuppressedAt(f, t);
  const sql = merge(scope, labelsAndScores(f), conditions, ...(kept ? [kept] : []));
  const [row] = await store.query<{ h: [number, number][] }>(
    `SELECT arraySort(groupArray((v, c))) AS h
     FROM (SELECT ${valueSql} AS v, count() AS c FROM ${from} ${whereClause(sql)} GROUP BY v)`,
    sql.params,
  );
  return percentilesOfCounts(row?.h ?? []);
}

/** §7.5: total_exposure(T) of every finding in scope that exists at T (T = now or atDate). */
export function totalExposureStats(store: Store, suppression: Suppression, f: StatFilters, now: number): Promise<PercentilesBody> {
  const at = f.atDate;
  const conditions: Sql =
    at !== undefined
      ? { where: [state.existsAt('at')], params: { at: sqlAt(at) } }
      : { where: [state.existsAt('now')], params: { now: sqlTime(now) } };
  const value = at !== undefined ? state.totalExposureAt('at') : state.totalExposureNow('now');
  return percentilesOf(store, suppression, value, f, conditions, at ?? now);
}

/** §7.6: current_exposure(T) of every finding in scope that is OPEN at T. */
export function currentExposureStats(store: Store, suppression: Suppression, f: StatFilters, now: number): Promise<PercentilesBody> {
  const at = f.atDate;
  const conditions: Sql =
    at !== undefined
      ? { where: [state.openAt('at')], params: { at: sqlAt(at) } }
      : { where: ["status = 'OPEN'"], params: { now: sqlTime(now) } };
  const value = at !== undefined ? state.currentExposureAt('at') : state.currentExposureNow('now');
  return percentilesOf(store, suppression, value, f, conditions, at ?? now);
}
