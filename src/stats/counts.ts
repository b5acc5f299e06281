import { SEVERITIES, zeroBySeverity, type BySeverity, type Severity } from '../domain/severity.js';
import { referenceInstant, type Suppression } from '../decisions/suppression.js';
import { countsIn, findingsIn, labelsAndScores, merge, statusAndTime, whereClause } from '../filters/sql.js';
import type { Store } from '../storage/gateway.js';
import type { StatFilters } from './filters.js';

/**
 * Open (SPEC §7.1) and fixed (§7.2) findings by severity. Current counts without label or score
 * filters, while no finding can be suppressed, come from the materialized counts per target
 * (finding_counts, or a single team's copy), which know nothing of decisions; otherwise the
 * findings in scope are counted, leaving out those suppressed at the reference instant (§12.3).
 * A scope of several teams is the set of their targets, each counted once.
 */
export async function findingCounts(
  store: Store,
  suppression: Suppression,
  status: 'OPEN' | 'FIXED',
  f: StatFilters,
  now: number,
): Promise<BySeverity<number>> {
  const current = f.atDate === undefined && f.minDate === undefined && f.maxDateEnd === undefined;
  const kept = await suppression.notSuppressedAt(f, referenceInstant(f, now));
  let rows: { severity: Severity; n: number }[];
  if (current && !kept && !f.labels?.length && f.minScore === undefined && f.maxScore === undefined) {
    const { from, scope } = countsIn(f);
    const counter = status === 'OPEN' ? 'open' : 'fixed';
    const [row] = await store.query<BySeverity<number>>(
      `SELECT ${SEVERITIES.map((s) => `sum(${counter}_${s}) AS ${s}`).join(', ')} FROM ${from} ${whereClause(scope)}`,
      scope.params,
    );
    rows = SEVERITIES.map((severity) => ({ severity, n: Number(row?.[severity] ?? 0) }));
  } else {
    const { from, scope } = findingsIn(f);
    const sql = merge(scope, labelsAndScores(f), statusAndTime({ ...f, status }, now), kept ?? NONE);
    rows = await store.query<{ severity: Severity; n: number }>(
      `SELECT severity, count() AS n FROM ${from} ${whereClause(sql)} GROUP BY severity`,
      sql.params,
    );
  }
  const out = zeroBySeverity();
  for (const r of rows) if (SEVERITIES.includes(r.severity)) out[r.severity] = Number(r.n);
  return out;
}

const NONE = { where: [], params: {} };
