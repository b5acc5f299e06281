import { SEVERITIES, zeroBySeverity, type BySeverity, type Severity } from '../domain/severity.js';
import { referenceInstant, suppressedOnly, unsuppressed } from '../decisions/suppression.js';
import { countsIn, findingsIn, labelsAndScores, merge, statusAndTime, whereClause } from '../filters/sql.js';
import type { Store } from '../storage/gateway.js';
import type { StatFilters } from './filters.js';

/**
 * Open (SPEC §7.1) and fixed (§7.2) findings by severity. Current counts without label or score
 * filters come from the materialized counts per target (finding_counts, or a single team's copy);
 * a scope of several teams is the set of their targets, each counted once. The counters know
 * nothing of decisions: while findings are suppressed, the findings themselves are counted (one
 * statement; subtracting the suppressed ones from the counters read as many granules again).
 */
export async function findingCounts(store: Store, status: 'OPEN' | 'FIXED', f: StatFilters, now: number): Promise<BySeverity<number>> {
  const current = f.atDate === undefined && f.minDate === undefined && f.maxDateEnd === undefined;
  const plain = current && !f.labels?.length && f.minScore === undefined && f.maxScore === undefined;
  let rows: { severity: Severity; n: number }[];
  if (plain && !(await suppressedOnly(store, f, now))) {
    const { from, scope } = countsIn(f);
    const prefix = status === 'OPEN' ? 'open' : 'fixed';
    const [sums] = await store.query<BySeverity<number>>(
      `SELECT ${SEVERITIES.map((s) => `sum(${prefix}_${s}) AS ${s}`).join(', ')} FROM ${from} ${whereClause(scope)}`,
      scope.params,
    );
    rows = SEVERITIES.map((severity) => ({ severity, n: sums?.[severity] ?? 0 }));
  } else {
    const { from, scope } = findingsIn(f);
    const sql = merge(
      scope,
      labelsAndScores(f),
      statusAndTime({ ...f, status }, now),
      await unsuppressed(store, f, referenceInstant(f, now)),
    );
    rows = await store.query(`SELECT severity, count() AS n FROM ${from} ${whereClause(sql)} GROUP BY severity`, sql.params);
  }
  const out = zeroBySeverity();
  for (const r of rows) if (SEVERITIES.includes(r.severity)) out[r.severity] = r.n;
  return out;
}
