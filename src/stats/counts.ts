import { SEVERITIES, zeroBySeverity, type BySeverity, type Severity } from '../domain/severity.js';
import { lessSuppressed, referenceInstant, withSuppressedRows } from '../decisions/suppression.js';
import { countsIn, findingsIn, labelsAndScores, merge, statusAndTime, whereClause } from '../filters/sql.js';
import type { Store } from '../storage/gateway.js';
import type { StatFilters } from './filters.js';

/**
 * Open (SPEC §7.1) and fixed (§7.2) findings by severity. Current counts without label or score
 * filters come from the materialized counts per target (finding_counts, or a single team's copy);
 * a scope of several teams is the set of their targets, each counted once. Findings suppressed at
 * the reference instant (§12.3) are subtracted in the same statement: the counters and the
 * statistics over every finding know nothing of decisions.
 */
export async function findingCounts(store: Store, status: 'OPEN' | 'FIXED', f: StatFilters, now: number): Promise<BySeverity<number>> {
  const current = f.atDate === undefined && f.minDate === undefined && f.maxDateEnd === undefined;
  const plain = current && !f.labels?.length && f.minScore === undefined && f.maxScore === undefined;
  const rows = await withSuppressedRows(store, f, referenceInstant(f, now), (suppressed) => {
    if (plain) {
      const { from, scope } = countsIn(f);
      const prefix = status === 'OPEN' ? 'open' : 'fixed';
      if (!suppressed) {
        return store
          .query<BySeverity<number>>(
            `SELECT ${SEVERITIES.map((s) => `sum(${prefix}_${s}) AS ${s}`).join(', ')} FROM ${from} ${whereClause(scope)}`,
            scope.params,
          )
          .then(([sums]) => SEVERITIES.map((severity) => ({ severity, n: sums?.[severity] ?? 0 })));
      }
      // One row per severity out of the counters' single row of sums, less the suppressed findings.
      const pairs = SEVERITIES.map((s) => `('${s}', toInt64(sum(${prefix}_${s})))`).join(', ');
      const counters = `SELECT p.1 AS severity, p.2 AS n FROM (SELECT arrayJoin([${pairs}]) AS p FROM ${from} ${whereClause(scope)})`;
      const minus = merge(suppressed.scope, { where: ['status = {countStatus:String}'], params: { countStatus: status } });
      return store.query<{ severity: Severity; n: number }>(
        `SELECT severity, sum(n) AS n
         FROM (${counters}
               UNION ALL
               SELECT toString(severity) AS severity, -toInt64(count()) AS n FROM ${suppressed.from} ${whereClause(minus)} GROUP BY severity)
         GROUP BY severity`,
        { ...scope.params, ...minus.params },
        suppressed.options,
      );
    }
    const statement = lessSuppressed(
      (from, where) => `SELECT severity, toInt64(count()) AS n FROM ${from} ${where} GROUP BY severity`,
      findingsIn(f),
      merge(labelsAndScores(f), statusAndTime({ ...f, status }, now)),
      ['severity'],
      ['n'],
      suppressed,
    );
    return store.query<{ severity: Severity; n: number }>(statement.sql, statement.params, suppressed?.options);
  });
  const out = zeroBySeverity();
  for (const r of rows) if (SEVERITIES.includes(r.severity)) out[r.severity] = r.n;
  return out;
}
