import { type SuppressedRows, suppressedRows } from '../decisions/suppression.js';
import { type BySeverity, SEVERITIES, type Severity, zeroBySeverity } from '../domain/severity.js';
import { findingsIn, labelsAndScores, merge, type Sql, sqlAt, statusAndTime, whereClause } from '../filters/sql.js';
import type { StatementOptions, Store } from '../storage/gateway.js';
import { DataChanged } from '../storage/store-errors.js';
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

export async function openSeries(store: Store, f: StatFilters, now: number): Promise<SeriesPoint[]> {
  const instants = f.atDates ?? [];
  let points: BySeverity<number>[];
  try {
    points = await countsAtEach(store, f, instants, now, false);
  } catch (err) {
    // A copy of the suppressed rows was older than the data (as in withSuppressedRows): read them in the statements.
    if (!(err instanceof DataChanged)) throw err;
    points = await countsAtEach(store, f, instants, now, true);
  }
  return instants.map((t, i) => ({ date: new Date(t * 1000).toISOString().slice(0, 10), open_issues: points[i]! }));
}

async function countsAtEach(store: Store, f: StatFilters, instants: number[], now: number, inStatement: boolean) {
  const suppressed = await Promise.all(instants.map((t) => suppressedRows(store, f, t, inStatement)));
  // The scan runs only on the state of the data the copies of suppressed rows were taken from (if
  // any), so that every point subtracts rows of the data it counted, as one statement per point does.
  const since = suppressed.flatMap((s) => (s?.options.unchangedSince !== undefined ? [s.options.unchangedSince] : []));
  const options: StatementOptions = since.length > 0 ? { unchangedSince: Math.min(...since) } : {};
  const [counted, less] = await Promise.all([
    openAtEach(store, f, instants, options),
    Promise.all(instants.map((t, i) => suppressedOpenAt(store, f, t, now, suppressed[i]))),
  ]);
  return instants.map((_, i) => {
    const out = zeroBySeverity();
    for (const s of SEVERITIES) out[s] = counted[i]![s] - less[i]![s];
    return out;
  });
}

/**
 * One statement: per severity, a count of the findings OPEN at each instant. A finding's OPEN
 * periods are disjoint (SPEC §2.6), so the findings OPEN at T (state.openAt: some period holds T)
 * are as many as the periods holding T: the periods are counted, one row each, with plain
 * comparisons (a lambda over each finding's arrays per instant costs several times more).
 */
async function openAtEach(store: Store, f: StatFilters, instants: number[], options: StatementOptions): Promise<BySeverity<number>[]> {
  const rows = findingsIn(f);
  const at = (i: number) => `{seriesAt${i}:DateTime('UTC')}`;
  const instantParams: Sql = { where: [], params: Object.fromEntries(instants.map((t, i) => [`seriesAt${i}`, sqlAt(t)])) };
  const sql = merge(rows.scope, labelsAndScores(f), instantParams);
  const last = instants.length - 1;
  const counts = instants.map((_, i) => `countIf(period_found <= ${at(i)} AND ${at(i)} < period_fixed) AS n${i}`).join(', ');
  const found = await store.query<Record<string, unknown> & { severity: Severity }>(
    `SELECT severity, ${counts}
     FROM (SELECT severity, found_at, fixed_at FROM ${rows.from} ${whereClause(sql)})
     ARRAY JOIN found_at AS period_found, fixed_at AS period_fixed
     -- Periods that hold none of the instants are left out before they are counted.
     WHERE period_found <= ${at(last)} AND ${at(0)} < period_fixed
     GROUP BY severity`,
    sql.params,
    options,
  );
  return instants.map((_, i) => {
    const out = zeroBySeverity();
    for (const r of found) if (SEVERITIES.includes(r.severity)) out[r.severity] = Number(r[`n${i}`]);
    return out;
  });
}

/** Of the findings the scan counted at `t`, those suppressed at `t` (what findingCounts leaves out). */
async function suppressedOpenAt(
  store: Store,
  f: StatFilters,
  t: number,
  now: number,
  suppressed: SuppressedRows | undefined,
): Promise<BySeverity<number>> {
  if (!suppressed) return zeroBySeverity();
  if (suppressed.share) return suppressed.share.countsAt('OPEN', { atDate: t }, now);
  const sql = merge(suppressed.scope, labelsAndScores(f), statusAndTime({ status: 'OPEN', atDate: t }, now));
  const found = await store.query<{ severity: Severity; n: number }>(
    `SELECT severity, count() AS n FROM ${suppressed.from} ${whereClause(sql)} GROUP BY severity`,
    sql.params,
    suppressed.options,
  );
  const out = zeroBySeverity();
  for (const r of found) if (SEVERITIES.includes(r.severity)) out[r.severity] = Number(r.n);
  return out;
}
