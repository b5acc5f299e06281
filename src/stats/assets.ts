import { SEVERITIES, type Severity } from '../domain/severity.js';
import { type SuppressionFilter, suppressedOnly, unsuppressed } from '../decisions/suppression.js';
import { nowSeconds } from '../domain/time.js';
import { countsIn, findingsIn, labelsAndScores, merge, targetScope, whereClause, type Scope } from '../filters/sql.js';
import type { Store } from '../storage/gateway.js';
import type { AssetStatsBody } from './schema.js';

/**
 * SPEC §7.7: the targets in scope, and those with at least one currently OPEN finding (of the
 * given labels) counted once each in the severity of their highest open score. Without labels the
 * materialized counts per target answer it, except for the targets with a finding suppressed now
 * (SPEC §12.3): those are read from their findings.
 */
export async function assetStats(
  store: Store,
  f: Scope & SuppressionFilter & { labels?: string[] | undefined },
  now = nowSeconds(),
): Promise<AssetStatsBody> {
  const targets = targetScope(f, 'id');
  const [total] = await store.query<{ n: number }>(`SELECT count() AS n FROM targets FINAL ${whereClause(targets)}`, targets.params);
  let rows: { severity: Severity; n: number }[];
  if (!f.labels?.length) {
    // A target's highest severity with an OPEN finding, from its materialized counters.
    const highest = `multiIf(${SEVERITIES.map((sev) => `sum(open_${sev}) > 0, '${sev}'`).join(', ')}, '')`;
    const counts = countsIn(f);
    let countsWhere = counts.scope;
    let decided = '';
    const suppressed = await suppressedOnly(store, f, now);
    if (suppressed) {
      countsWhere = merge(counts.scope, { where: [`NOT (${suppressed.targetsIn('target_id')})`], params: suppressed.params });
      const open = findingsIn(f);
      const sql = merge(
        open.scope,
        { where: ["status = 'OPEN'", suppressed.targetsIn('target_id')], params: {} },
        await unsuppressed(store, f, now),
      );
      decided = `UNION ALL SELECT target_id, toString(max(severity)) AS highest FROM ${open.from} ${whereClause(sql)} GROUP BY target_id`;
      countsWhere = merge(countsWhere, { where: [], params: sql.params });
    }
    rows = await store.query(
      `SELECT highest AS severity, count() AS n
       FROM (SELECT target_id, ${highest} AS highest FROM ${counts.from} ${whereClause(countsWhere)} GROUP BY target_id ${decided})
       WHERE highest != ''
       GROUP BY highest`,
      countsWhere.params,
    );
  } else {
    const open = findingsIn(f);
    const sql = merge(
      open.scope,
      labelsAndScores({ labels: f.labels }),
      { where: ["status = 'OPEN'"], params: {} },
      await unsuppressed(store, f, now),
    );
    rows = await store.query(
      `SELECT highest AS severity, count() AS n
       FROM (SELECT target_id, max(severity) AS highest FROM ${open.from} ${whereClause(sql)} GROUP BY target_id)
       GROUP BY highest`,
      sql.params,
    );
  }
  const out = { total: total?.n ?? 0 } as AssetStatsBody;
  for (const s of SEVERITIES) out[s] = rows.find((r) => r.severity === s)?.n ?? 0;
  return out;
}
