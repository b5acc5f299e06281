import { SEVERITIES, type Severity } from '../domain/severity.js';
import { signed, signedRows, type SuppressedRows, type Suppression } from '../decisions/suppression.js';
import type { SuppressionFilter } from '../filters/params.js';
import { nowSeconds } from '../domain/time.js';
import { countsIn, findingsIn, labelsAndScores, merge, targetScope, whereClause, type Scope } from '../filters/sql.js';
import type { Store } from '../storage/gateway.js';
import type { AssetStatsBody } from './schema.js';

/**
 * SPEC §7.7: the targets in scope, and those with at least one currently OPEN finding (of the
 * given labels) counted once each in the severity of their highest open score. Without labels the
 * materialized counts per target answer it, less the findings suppressed now (SPEC §12.3).
 */
export async function assetStats(
  store: Store,
  suppression: Suppression,
  f: Scope & SuppressionFilter & { labels?: string[] | undefined },
  now = nowSeconds(),
): Promise<AssetStatsBody> {
  const targets = targetScope(f, 'id');
  const [total] = await store.query<{ n: number }>(`SELECT count() AS n FROM targets FINAL ${whereClause(targets)}`, targets.params);
  const suppressed = await suppression.suppressedRows(f, now);
  const perTarget = f.labels?.length ? openFindingsPerTarget(f, suppressed) : openCountersPerTarget(f, suppressed);
  const rows = await store.query<{ severity: Severity; n: number }>(
    `SELECT highest AS severity, count() AS n FROM (${perTarget.sql}) WHERE highest != '' GROUP BY highest`,
    perTarget.params,
  );
  const out = { total: Number(total?.n ?? 0) } as AssetStatsBody;
  for (const s of SEVERITIES) out[s] = Number(rows.find((r) => r.severity === s)?.n ?? 0);
  return out;
}

/** Per target, its highest severity with an OPEN finding: its materialized counters, less its suppressed OPEN findings. */
function openCountersPerTarget(f: Scope, suppressed: SuppressedRows | undefined): { sql: string; params: Record<string, unknown> } {
  const highest = `multiIf(${SEVERITIES.map((sev) => `sum(open_${sev}) > 0, '${sev}'`).join(', ')}, '')`;
  const counts = countsIn(f);
  const columns = SEVERITIES.map((sev) => `open_${sev}`);
  const open = suppressed && merge(suppressed.scope, { where: ["status = 'OPEN'"], params: {} });
  const minus = open
    ? `UNION ALL
       SELECT target_id, ${SEVERITIES.map((sev) => `-toInt64(severity = '${sev}') AS open_${sev}`).join(', ')}
       FROM ${suppressed.from} ${whereClause(open)}`
    : '';
  return {
    sql: `SELECT target_id, ${highest} AS highest
          FROM (SELECT target_id, ${columns.join(', ')} FROM ${counts.from} ${whereClause(counts.scope)} ${minus})
          GROUP BY target_id`,
    params: { ...counts.scope.params, ...open?.params },
  };
}

/** Per target, the highest severity of its OPEN findings of the labels not suppressed. */
function openFindingsPerTarget(
  f: Scope & { labels?: string[] | undefined },
  suppressed: SuppressedRows | undefined,
): { sql: string; params: Record<string, unknown> } {
  const rows = signedRows(findingsIn(f), ['target_id', 'severity', 'status', 'issue_id'], suppressed);
  const sql = merge(rows.scope, labelsAndScores({ labels: f.labels }), { where: ["status = 'OPEN'"], params: {} });
  return {
    sql: `SELECT target_id, toString(max(severity)) AS highest
          FROM (SELECT target_id, severity, ${signed.count(rows)} AS n FROM ${rows.from} ${whereClause(sql)} GROUP BY target_id, severity)
          WHERE n > 0 GROUP BY target_id`,
    params: sql.params,
  };
}
