import { SEVERITIES, type Severity } from '../domain/severity.js';
import { signed, signedRows, type SuppressionFilter, withSuppressedRows } from '../decisions/suppression.js';
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
  f: Scope & SuppressionFilter & { labels?: string[] | undefined },
  now = nowSeconds(),
): Promise<AssetStatsBody> {
  const targets = targetScope(f, 'id');
  const [total] = await store.query<{ n: number }>(`SELECT count() AS n FROM targets FINAL ${whereClause(targets)}`, targets.params);
  let rows: { severity: Severity; n: number }[];
  if (!f.labels?.length) {
    // A target's highest severity with an OPEN finding, from its materialized counters, less its
    // suppressed OPEN findings.
    const highest = `multiIf(${SEVERITIES.map((sev) => `sum(open_${sev}) > 0, '${sev}'`).join(', ')}, '')`;
    const counts = countsIn(f);
    rows = await withSuppressedRows(store, f, now, async (suppressed) => {
      let perTarget = `SELECT target_id, ${highest} AS highest FROM ${counts.from} ${whereClause(counts.scope)} GROUP BY target_id`;
      let params = counts.scope.params;
      // With the scope's share at hand, the targets it moves are counted after the statement.
      const share = suppressed?.share;
      if (suppressed && !share) {
        const open = merge(suppressed.scope, { where: ["status = 'OPEN'"], params: {} });
        const columns = SEVERITIES.map((sev) => `open_${sev}`);
        perTarget = `SELECT target_id, ${highest} AS highest
                     FROM (SELECT target_id, ${columns.join(', ')} FROM ${counts.from} ${whereClause(counts.scope)}
                           UNION ALL
                           SELECT target_id, ${SEVERITIES.map((sev) => `-toInt64(severity = '${sev}') AS open_${sev}`).join(', ')}
                           FROM ${suppressed.from} ${whereClause(open)})
                     GROUP BY target_id`;
        params = { ...params, ...open.params };
      }
      const found = await store.query<{ severity: Severity; n: number }>(
        `SELECT highest AS severity, count() AS n FROM (${perTarget}) WHERE highest != '' GROUP BY highest`,
        params,
        suppressed?.options,
      );
      return share
        ? SEVERITIES.map((severity) => ({
            severity,
            n: Number(found.find((r) => r.severity === severity)?.n ?? 0) + share.assets[severity],
          }))
        : found;
    });
  } else {
    // Per target, the highest severity of its OPEN findings of the labels not suppressed.
    rows = await withSuppressedRows(store, f, now, (suppressed) => {
      const rows = signedRows(findingsIn(f), ['target_id', 'severity', 'status', 'issue_id'], suppressed);
      const sql = merge(rows.scope, labelsAndScores({ labels: f.labels }), { where: ["status = 'OPEN'"], params: {} });
      const perTarget =
        rows.sign === '1'
          ? `SELECT target_id, max(severity) AS highest FROM ${rows.from} ${whereClause(sql)} GROUP BY target_id`
          : `SELECT target_id, max(severity) AS highest
             FROM (SELECT target_id, severity, ${signed.count(rows)} AS n FROM ${rows.from} ${whereClause(sql)} GROUP BY target_id, severity)
             WHERE n > 0 GROUP BY target_id`;
      return store.query<{ severity: Severity; n: number }>(
        `SELECT highest AS severity, count() AS n FROM (${perTarget}) GROUP BY highest`,
        sql.params,
        suppressed?.options,
      );
    });
  }
  const out = { total: total?.n ?? 0 } as AssetStatsBody;
  for (const s of SEVERITIES) out[s] = rows.find((r) => r.severity === s)?.n ?? 0;
  return out;
}
