import { SEVERITIES, zeroBySeverity, type BySeverity, type Severity } from '../domain/severity.js';
import { referenceInstant, signed, signedRows, withSuppressedRows } from '../decisions/suppression.js';
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
  const rows = await withSuppressedRows(store, f, referenceInstant(f, now), async (suppressed) => {
    if (plain) {
      const { from, scope } = countsIn(f);
      const counter = status === 'OPEN' ? 'open' : 'fixed';
      const columns = SEVERITIES.map((s) => `${counter}_${s}`);
      const sums = SEVERITIES.map((s, i) => `sum(${columns[i]}) AS ${s}`).join(', ');
      let sql = `SELECT ${sums} FROM ${from} ${whereClause(scope)}`;
      let params = scope.params;
      // With the suppressed findings' sums of the team (or all) at hand, the counters as they are
      // less those sums; else the counters' columns, and for each suppressed finding of the status
      // −1 in its severity's.
      const less = suppressed?.share;
      if (suppressed && !less) {
        const minus = merge(suppressed.scope, { where: ['status = {countStatus:String}'], params: { countStatus: status } });
        sql = `SELECT ${sums}
               FROM (SELECT ${columns.join(', ')} FROM ${from} ${whereClause(scope)}
                     UNION ALL
                     SELECT ${SEVERITIES.map((s, i) => `-toInt64(severity = '${s}') AS ${columns[i]}`).join(', ')}
                     FROM ${suppressed.from} ${whereClause(minus)})`;
        params = { ...params, ...minus.params };
      }
      const [row] = await store.query<BySeverity<number>>(sql, params, suppressed?.options);
      return SEVERITIES.map((severity) => ({ severity, n: Number(row?.[severity] ?? 0) - (less?.sums(severity, counter) ?? 0) }));
    }
    // A share of the suppressed findings is taken after the statement where there is one.
    const share = suppressed?.share;
    const rows = signedRows(
      findingsIn(f),
      ['severity', 'status', 'found_at', 'fixed_at', 'score', 'issue_id'],
      share ? undefined : suppressed,
    );
    const sql = merge(rows.scope, labelsAndScores(f), statusAndTime({ ...f, status }, now));
    const found = await store.query<{ severity: Severity; n: number }>(
      `SELECT severity, ${signed.count(rows)} AS n FROM ${rows.from} ${whereClause(sql)} GROUP BY severity`,
      sql.params,
      suppressed?.options,
    );
    if (!share) return found;
    // Every severity: a share counting findings the statement did not would show, not vanish.
    const n = (severity: Severity) => Number(found.find((r) => r.severity === severity)?.n ?? 0);
    const less = current ? undefined : share.countsAt(status, f, now);
    return SEVERITIES.map((severity) => ({
      severity,
      n: n(severity) - (less ? less[severity] : share.sums(severity, status === 'OPEN' ? 'open' : 'fixed')),
    }));
  });
  const out = zeroBySeverity();
  for (const r of rows) if (SEVERITIES.includes(r.severity)) out[r.severity] = r.n;
  return out;
}
