import { SEVERITIES, zeroBySeverity, type BySeverity, type Severity } from '../domain/severity.js';
import { referenceInstant, signed, signedRows, type Suppression } from '../decisions/suppression.js';
import { countsIn, findingsIn, labelsAndScores, merge, statusAndTime, whereClause } from '../filters/sql.js';
import type { Store } from '../storage/gateway.js';
import type { StatFilters } from './filters.js';

/**
 * Open (SPEC §7.1) and fixed (§7.2) findings by severity. Current counts without label or score
 * filters come from the materialized counts per target (finding_counts, or a single team's copy);
 * a scope of several teams is the set of their targets, each counted once. Findings suppressed at
 * the reference instant (§12.3) enter the same statement a second time with the weight −1
 * (`signedRows`): the counters know nothing of decisions.
 */
export async function findingCounts(
  store: Store,
  suppression: Suppression,
  status: 'OPEN' | 'FIXED',
  f: StatFilters,
  now: number,
): Promise<BySeverity<number>> {
  const current = f.atDate === undefined && f.minDate === undefined && f.maxDateEnd === undefined;
  const plain = current && !f.labels?.length && f.minScore === undefined && f.maxScore === undefined;
  const suppressed = await suppression.suppressedRows(f, referenceInstant(f, now));
  let rows: { severity: Severity; n: number }[];
  if (plain) {
    // The counters' columns, and for each suppressed finding of the status −1 in its severity's.
    const { from, scope } = countsIn(f);
    const columns = SEVERITIES.map((s) => `${status === 'OPEN' ? 'open' : 'fixed'}_${s}`);
    const minus = suppressed && merge(suppressed.scope, { where: ['status = {countStatus:String}'], params: { countStatus: status } });
    const counters = `SELECT ${columns.join(', ')} FROM ${from} ${whereClause(scope)}`;
    const [row] = await store.query<BySeverity<number>>(
      `SELECT ${SEVERITIES.map((s, i) => `sum(${columns[i]}) AS ${s}`).join(', ')}
       FROM (${counters}
             ${minus ? `UNION ALL SELECT ${SEVERITIES.map((s, i) => `-toInt64(severity = '${s}') AS ${columns[i]}`).join(', ')} FROM ${suppressed.from} ${whereClause(minus)}` : ''})`,
      { ...scope.params, ...minus?.params },
    );
    rows = SEVERITIES.map((severity) => ({ severity, n: Number(row?.[severity] ?? 0) }));
  } else {
    const signedIn = signedRows(findingsIn(f), ['severity', 'status', 'found_at', 'fixed_at', 'score', 'issue_id'], suppressed);
    const sql = merge(signedIn.scope, labelsAndScores(f), statusAndTime({ ...f, status }, now));
    rows = await store.query<{ severity: Severity; n: number }>(
      `SELECT severity, ${signed.count(signedIn)} AS n FROM ${signedIn.from} ${whereClause(sql)} GROUP BY severity`,
      sql.params,
    );
  }
  const out = zeroBySeverity();
  for (const r of rows) if (SEVERITIES.includes(r.severity)) out[r.severity] = Number(r.n);
  return out;
}
