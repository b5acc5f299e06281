import { SEVERITIES, type Severity } from '../domain/severity.js';
import { referenceInstant, type Suppression } from '../decisions/suppression.js';
import { findingsIn, labelsAndScores, merge, sqlTime, whereClause } from '../filters/sql.js';
import { NEVER, nowSeconds } from '../domain/time.js';
import type { Store } from '../storage/gateway.js';
import type { StatFilters } from './filters.js';
import { round2 } from './numbers.js';
import type { MttrStatsBody } from './schema.js';

/**
 * SPEC §7.4: mean TTR (whole hours per closed period) of the findings in scope, by severity and in
 * total; with dates only periods fixed in [L, U). Without dates the per-finding sums stored with
 * each finding are enough; with dates each finding's periods fixed in the range are summed.
 * Findings suppressed at the reference instant are left out (§12.3).
 */
export async function mttrStats(store: Store, suppression: Suppression, f: StatFilters, now = nowSeconds()): Promise<MttrStatsBody> {
  const ranged = f.minDate !== undefined || f.maxDateEnd !== undefined;
  const { from, scope } = findingsIn(f);
  const kept = await suppression.notSuppressedAt(f, referenceInstant(f, now));
  const fixedInRange = `x >= {fixedFrom:DateTime('UTC')} AND x < {fixedTo:DateTime('UTC')}`;
  const sums = ranged
    ? `sum(arraySum((f, x) -> if(${fixedInRange}, intDiv(toInt64(x) - toInt64(f), 3600), 0), found_at, fixed_at)) AS hours,
       sum(arrayCount(x -> ${fixedInRange}, fixed_at)) AS periods`
    : 'sum(ttr_sum) AS hours, sum(ttr_count) AS periods';
  const range = ranged ? { fixedFrom: sqlTime(f.minDate ?? 0), fixedTo: sqlTime(f.maxDateEnd ?? NEVER) } : {};
  const sql = merge(scope, labelsAndScores(f), { where: [], params: range }, ...(kept ? [kept] : []));
  const rows = await store.query<{ severity: Severity; hours: number; periods: number }>(
    `SELECT severity, ${sums} FROM ${from} ${whereClause(sql)} GROUP BY severity`,
    sql.params,
  );
  const out = { total: 0 } as MttrStatsBody;
  let hours = 0;
  let periods = 0;
  for (const s of SEVERITIES) {
    const r = rows.find((x) => x.severity === s);
    const [h, p] = [Number(r?.hours ?? 0), Number(r?.periods ?? 0)];
    out[s] = p > 0 ? round2(h / p) : 0;
    hours += h;
    periods += p;
  }
  out.total = periods > 0 ? round2(hours / periods) : 0;
  return out;
}
