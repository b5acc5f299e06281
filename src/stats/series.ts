import type { Suppression } from '../decisions/suppression.js';
import { type BySeverity, SEVERITIES, type Severity, zeroBySeverity } from '../domain/severity.js';
import { findingsIn, labelsAndScores, merge, type Sql, sqlAt, whereClause } from '../filters/sql.js';
import type { Store } from '../storage/gateway.js';
import type { StatFilters } from './filters.js';

/**
 * Open findings by severity at each of several instants (the `atDates` of a series, an extension
 * beyond SPEC §8.3): every point is what `/stats/open?atDate=<day>` answers (SPEC §7.1 at T, less
 * the findings suppressed at T, §12.3), but the findings in scope are read once for all points,
 * where one request per point reads them once each (a 90-day chart of 13 points: 13 scans).
 */

export interface SeriesPoint {
  date: string;
  open_issues: BySeverity<number>;
}

export async function openSeries(store: Store, suppression: Suppression, f: StatFilters): Promise<SeriesPoint[]> {
  const instants = f.atDates ?? [];
  // Each point's "not suppressed at T_i" is the statistics' own condition (src/decisions/suppression.ts), under its own parameter.
  const kept = await Promise.all(instants.map((t, i) => suppression.notSuppressedAt(f, t, `seriesSup${i}`)));
  const points = await openAtEach(store, f, instants, kept);
  return instants.map((t, i) => ({ date: new Date(t * 1000).toISOString().slice(0, 10), open_issues: points[i]! }));
}

/**
 * One statement: per severity, a count of the findings OPEN at each instant and not suppressed
 * then. A finding's OPEN periods are disjoint (SPEC §2.6), so the findings OPEN at T (state.openAt:
 * some period holds T) are as many as the periods holding T: the periods are counted, one row each,
 * with plain comparisons (a lambda over each finding's arrays per instant costs several times more).
 */
async function openAtEach(store: Store, f: StatFilters, instants: number[], kept: (Sql | undefined)[]): Promise<BySeverity<number>[]> {
  const rows = findingsIn(f);
  const at = (i: number) => `{seriesAt${i}:DateTime('UTC')}`;
  const instantParams: Sql = { where: [], params: Object.fromEntries(instants.map((t, i) => [`seriesAt${i}`, sqlAt(t)])) };
  const keptParams = kept.reduce<Record<string, unknown>>((all, k) => Object.assign(all, k?.params), {});
  const sql = merge(rows.scope, labelsAndScores(f), instantParams, { where: [], params: keptParams });
  const last = instants.length - 1;
  const counts = instants
    .map((_, i) => `countIf(period_found <= ${at(i)} AND ${at(i)} < period_fixed${kept[i] ? ` AND ${kept[i]!.where[0]}` : ''}) AS n${i}`)
    .join(', ');
  const found = await store.query<Record<string, unknown> & { severity: Severity }>(
    `SELECT severity, ${counts}
     FROM (SELECT id, severity, found_at, fixed_at FROM ${rows.from} ${whereClause(sql)})
     ARRAY JOIN found_at AS period_found, fixed_at AS period_fixed
     -- Periods that hold none of the instants are left out before they are counted.
     WHERE period_found <= ${at(last)} AND ${at(0)} < period_fixed
     GROUP BY severity`,
    sql.params,
  );
  return instants.map((_, i) => {
    const out = zeroBySeverity();
    for (const r of found) if (SEVERITIES.includes(r.severity)) out[r.severity] = Number(r[`n${i}`]);
    return out;
  });
}
