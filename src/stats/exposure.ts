import { unsuppressed } from '../decisions/suppression.js';
import { findingsIn, labelsAndScores, merge, sqlAt, sqlTime, state, whereClause, type Sql } from '../filters/sql.js';
import type { Store } from '../storage/gateway.js';
import type { StatFilters } from './filters.js';
import { round2 } from './numbers.js';
import type { PercentilesBody } from './schema.js';

/**
 * Exposure percentiles (SPEC §7.5, §7.6, §7.8). quantilesExactInclusive interpolates linearly
 * between closest ranks with h = p × (n − 1), which is SPEC §7.8's definition.
 */

async function percentilesOf(store: Store, valueSql: string, from: string, where: Sql): Promise<PercentilesBody> {
  const [row] = await store.query<{ q: number[]; mean: number; n: number }>(
    `SELECT quantilesExactInclusive(0.1, 0.25, 0.5, 0.75, 0.9)(v) AS q, avg(v) AS mean, count() AS n
     FROM (SELECT toFloat64(${valueSql}) AS v FROM ${from} ${whereClause(where)})`,
    where.params,
  );
  const q = row && row.n > 0 ? row.q : [0, 0, 0, 0, 0];
  return {
    percentile_10: round2(q[0]!),
    percentile_25: round2(q[1]!),
    percentile_50: round2(q[2]!),
    percentile_75: round2(q[3]!),
    percentile_90: round2(q[4]!),
    mean: row && row.n > 0 ? round2(row.mean) : 0,
  };
}

/** §7.5: total_exposure(T) of every finding in scope that exists at T (T = now or atDate). */
export async function totalExposureStats(store: Store, f: StatFilters, now: number): Promise<PercentilesBody> {
  const rows = findingsIn(f);
  const scope = merge(rows.scope, labelsAndScores(f), await unsuppressed(store, f, f.atDate ?? now));
  if (f.atDate !== undefined) {
    const where = merge(scope, { where: [state.existsAt('at')], params: { at: sqlAt(f.atDate) } });
    return percentilesOf(store, state.totalExposureAt('at'), rows.from, where);
  }
  const where = merge(scope, { where: [state.existsAt('now')], params: { now: sqlTime(now) } });
  return percentilesOf(store, state.totalExposureNow('now'), rows.from, where);
}

/** §7.6: current_exposure(T) of every finding in scope that is OPEN at T. */
export async function currentExposureStats(store: Store, f: StatFilters, now: number): Promise<PercentilesBody> {
  const rows = findingsIn(f);
  const scope = merge(rows.scope, labelsAndScores(f), await unsuppressed(store, f, f.atDate ?? now));
  if (f.atDate !== undefined) {
    const where = merge(scope, { where: [state.openAt('at')], params: { at: sqlAt(f.atDate) } });
    return percentilesOf(store, state.currentExposureAt('at'), rows.from, where);
  }
  const where = merge(scope, { where: ["status = 'OPEN'"], params: { now: sqlTime(now) } });
  return percentilesOf(store, state.currentExposureNow('now'), rows.from, where);
}
