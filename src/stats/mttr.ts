import { SEVERITIES, type Severity } from '../domain/severity.js';
import { referenceInstant, unsuppressed } from '../decisions/suppression.js';
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
 */
export async function mttrStats(store: Store, f: StatFilters, now = nowSeconds()): Promise<MttrStatsBody> {
  const rowsIn = findingsIn(f);
  const scope = merge(rowsIn.scope, labelsAndScores(f), await unsuppressed(store, f, referenceInstant(f, now)));
  let rows: { severity: Severity; hours: number; periods: number }[];
  if (f.minDate === undefined && f.maxDateEnd === undefined) {
    rows = await store.query(
      `SELECT severity, sum(ttr_sum) AS hours, sum(ttr_count) AS periods FROM ${rowsIn.from} ${whereClause(scope)} GROUP BY severity`,
      scope.params,
    );
  } else {
    const params = { ...scope.params, fixedFrom: sqlTime(f.minDate ?? 0), fixedTo: sqlTime(f.maxDateEnd ?? NEVER) };
    const fixedInRange = `x >= {fixedFrom:DateTime('UTC')} AND x < {fixedTo:DateTime('UTC')}`;
    rows = await store.query(
      `SELECT severity,
              sum(arraySum((f, x) -> if(${fixedInRange}, intDiv(toInt64(x) - toInt64(f), 3600), 0), found_at, fixed_at)) AS hours,
              sum(arrayCount(x -> ${fixedInRange}, fixed_at)) AS periods
       FROM ${rowsIn.from}
       ${whereClause(scope)}
       GROUP BY severity`,
      params,
    );
  }
  const out = { total: 0 } as MttrStatsBody;
  let hours = 0;
  let periods = 0;
  for (const s of SEVERITIES) {
    const r = rows.find((x) => x.severity === s);
    out[s] = r && r.periods > 0 ? round2(r.hours / r.periods) : 0;
    hours += r?.hours ?? 0;
    periods += r?.periods ?? 0;
  }
  out.total = periods > 0 ? round2(hours / periods) : 0;
  return out;
}
