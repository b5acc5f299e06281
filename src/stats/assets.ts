import { SEVERITIES, type Severity } from '../domain/severity.js';
import type { Suppression } from '../decisions/suppression.js';
import type { SuppressionFilter } from '../filters/params.js';
import { nowSeconds } from '../domain/time.js';
import { countsIn, findingsIn, labelsAndScores, merge, type Scope, type Sql, targetScope, whereClause } from '../filters/sql.js';
import type { Store } from '../storage/gateway.js';
import type { AssetStatsBody } from './schema.js';

/**
 * SPEC §7.7: the targets in scope, and those with at least one currently OPEN finding (of the
 * given labels) counted once each in the severity of their highest open score, leaving out the
 * findings suppressed now (SPEC §12.3). Without labels, while none can be suppressed, the
 * materialized counts per target answer it.
 */
export async function assetStats(
  store: Store,
  suppression: Suppression,
  f: Scope & SuppressionFilter & { labels?: string[] | undefined },
  now = nowSeconds(),
): Promise<AssetStatsBody> {
  const targets = targetScope(f, 'id');
  const [total] = await store.query<{ n: number }>(`SELECT count() AS n FROM targets FINAL ${whereClause(targets)}`, targets.params);
  const kept = await suppression.notSuppressedAt(f, now);
  const perTarget = f.labels?.length || kept ? openFindingsPerTarget(f, kept) : openCountersPerTarget(f);
  const rows = await store.query<{ severity: Severity; n: number }>(
    `SELECT highest AS severity, count() AS n FROM (${perTarget.sql}) WHERE highest != '' GROUP BY highest`,
    perTarget.params,
  );
  const out = { total: Number(total?.n ?? 0) } as AssetStatsBody;
  for (const s of SEVERITIES) out[s] = Number(rows.find((r) => r.severity === s)?.n ?? 0);
  return out;
}

/** Per target, its highest severity with an OPEN finding, from its materialized counters. */
function openCountersPerTarget(f: Scope): { sql: string; params: Record<string, unknown> } {
  const highest = `multiIf(${SEVERITIES.map((sev) => `sum(open_${sev}) > 0, '${sev}'`).join(', ')}, '')`;
  const counts = countsIn(f);
  return {
    sql: `SELECT target_id, ${highest} AS highest FROM ${counts.from} ${whereClause(counts.scope)} GROUP BY target_id`,
    params: counts.scope.params,
  };
}

/** Per target, the highest severity of its OPEN findings (of the labels) not suppressed. */
function openFindingsPerTarget(
  f: Scope & { labels?: string[] | undefined },
  kept: Sql | undefined,
): { sql: string; params: Record<string, unknown> } {
  const { from, scope } = findingsIn(f);
  const sql = merge(scope, labelsAndScores({ labels: f.labels }), { where: ["status = 'OPEN'"], params: {} }, ...(kept ? [kept] : []));
  return {
    sql: `SELECT target_id, toString(max(severity)) AS highest FROM ${from} ${whereClause(sql)} GROUP BY target_id`,
    params: sql.params,
  };
}
