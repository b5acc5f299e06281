import { SEVERITIES, type Severity } from '../domain/severity.js';
import { referenceInstant, signed, signedRows, withSuppressedRows } from '../decisions/suppression.js';
import { clampTime, findingsIn, labelsAndScores, merge, sqlTime, whereClause } from '../filters/sql.js';
import { NEVER, nowSeconds } from '../domain/time.js';
import type { Store } from '../storage/gateway.js';
import type { StatFilters } from './filters.js';
import { round2 } from './numbers.js';
import type { MttrStatsBody } from './schema.js';

/**
 * SPEC §7.4: mean TTR (whole hours per closed period) of the findings in scope, by severity and in
 * total; with dates only periods fixed in [L, U). Without dates the per-finding sums stored with
 * each finding are enough; with dates each finding's periods fixed in the range are summed.
 * Suppressed findings' sums are subtracted in the same statement (§12.3).
 */
export async function mttrStats(store: Store, f: StatFilters, now = nowSeconds()): Promise<MttrStatsBody> {
  const ranged = f.minDate !== undefined || f.maxDateEnd !== undefined;
  const rows = await withSuppressedRows(store, f, referenceInstant(f, now), async (suppressed) => {
    // A share of the suppressed findings is taken after the statement where there is one.
    const share = suppressed?.share;
    const columns = ['severity', 'score', 'issue_id', ...(ranged ? ['found_at', 'fixed_at'] : ['ttr_sum', 'ttr_count'])];
    const rows = signedRows(findingsIn(f), columns, share ? undefined : suppressed);
    const fixedInRange = `x >= {fixedFrom:DateTime('UTC')} AND x < {fixedTo:DateTime('UTC')}`;
    const sums = ranged
      ? `${signed.sum(rows, `arraySum((f, x) -> if(${fixedInRange}, intDiv(toInt64(x) - toInt64(f), 3600), 0), found_at, fixed_at)`)} AS hours,
         ${signed.sum(rows, `arrayCount(x -> ${fixedInRange}, fixed_at)`)} AS periods`
      : `${signed.sum(rows, 'ttr_sum')} AS hours, ${signed.sum(rows, 'ttr_count')} AS periods`;
    const range = ranged ? { fixedFrom: sqlTime(f.minDate ?? 0), fixedTo: sqlTime(f.maxDateEnd ?? NEVER) } : {};
    const sql = merge(rows.scope, labelsAndScores(f), { where: [], params: range });
    const found = await store.query<{ severity: Severity; hours: number; periods: number }>(
      `SELECT severity, ${sums} FROM ${rows.from} ${whereClause(sql)} GROUP BY severity`,
      sql.params,
      suppressed?.options,
    );
    if (!share) return found;
    // Every severity: a share counting findings the statement did not would show, not vanish.
    const fixed = ranged ? share.fixedIn(clampTime(f.minDate ?? 0), clampTime(f.maxDateEnd ?? NEVER)) : undefined;
    return SEVERITIES.map((severity) => {
      const r = found.find((x) => x.severity === severity);
      return {
        severity,
        hours: Number(r?.hours ?? 0) - (fixed ? fixed[severity].hours : share.sums(severity, 'ttr_sum')),
        periods: Number(r?.periods ?? 0) - (fixed ? fixed[severity].periods : share.sums(severity, 'ttr_count')),
      };
    });
  });
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
