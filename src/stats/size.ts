import { whereClause, type Sql } from '../filters/sql.js';
import type { Store } from '../storage/gateway.js';

/**
 * SPEC §7.9: stored sources, targets, issues, findings and finding events — of the targets selected
 * by `targets` (a condition on a `target_id` column: the caller's scope, src/auth/scope.ts), and
 * their issues, findings and events; without conditions, of the whole store.
 */
export async function storeSize(store: Store, targets: Sql = { where: [], params: {} }) {
  if (targets.where.length === 0) {
    const [row] = await store.query<Record<string, number>>(
      `SELECT
          (SELECT count() FROM sources)            AS sources,
          (SELECT count() FROM targets FINAL)      AS targets,
          (SELECT uniqExact(id) FROM issues)       AS issues,
          (SELECT count() FROM findings FINAL)     AS findings,
          (SELECT count() FROM finding_events)     AS finding_events`,
    );
    return row!;
  }
  const inScope = whereClause(targets);
  const findingIds = `SELECT id FROM findings ${inScope}`;
  const [row] = await store.query<Record<string, number>>(
    `SELECT
        (SELECT count() FROM sources ${inScope})                                                  AS sources,
        (SELECT count() FROM (SELECT id AS target_id FROM targets FINAL) ${inScope})               AS targets,
        (SELECT uniqExact(id) FROM issues WHERE id IN (SELECT issue_id FROM findings ${inScope})) AS issues,
        (SELECT count() FROM findings FINAL ${inScope})                                           AS findings,
        (SELECT count() FROM finding_events WHERE finding_id IN (${findingIds}))                  AS finding_events`,
    targets.params,
  );
  return row!;
}
