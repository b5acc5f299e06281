import type { Paging } from '../filters/params.js';
import { merge, whereClause, type Sql } from '../filters/sql.js';
import type { Store } from '../storage/gateway.js';
import type { IssueBody } from './schema.js';
import { byId, PAGE_LIMIT, type PageOf, readPage } from '../storage/paged.js';

/** Issue objects (SPEC §6.1) from issues_current (winning details and labels claims). */

const ISSUE_COLUMNS = 'id, summary, cwe_id, description, recommendations, reference_links, labels';

/**
 * `visible`, where given, is the caller's scope (src/auth/scope.ts): a condition on the issue id
 * (issuesInScope) or, for a target's issues, on the target id (targetsInScope).
 */

const EVERY: Sql = { where: [], params: {} };

export async function issuesByIds(store: Store, ids: string[], visible: Sql = EVERY): Promise<Map<string, IssueBody>> {
  if (ids.length === 0) return new Map();
  const where = merge({ where: ['id IN {ids:Array(UUID)}'], params: { ids } }, visible);
  const rows = await store.query<IssueBody>(`SELECT ${ISSUE_COLUMNS} FROM issues_current ${whereClause(where)}`, where.params);
  return new Map(rows.map((r) => [r.id, r]));
}

export function issuePage(store: Store, page: Paging, visible: Sql = EVERY): Promise<PageOf<IssueBody>> {
  return readPage<IssueBody>(
    store,
    {
      page: `SELECT ${ISSUE_COLUMNS} FROM issues_current ${whereClause(visible)} ORDER BY ${byId()} ${PAGE_LIMIT}`,
      count: `SELECT count() AS n FROM issues_current ${whereClause(visible)}`,
    },
    visible.params,
    page,
  );
}

/** Issues with at least one finding on the target (SPEC §6.5); none when the target is not `visibleTarget`. */
export function issuesOfTarget(store: Store, targetId: string, page: Paging, visibleTarget: Sql = EVERY): Promise<PageOf<IssueBody>> {
  const findings = merge({ where: ['target_id = {target:UUID}'], params: { target: targetId } }, visibleTarget);
  const where = `WHERE id IN (SELECT issue_id FROM findings ${whereClause(findings)})`;
  return readPage<IssueBody>(
    store,
    {
      page: `SELECT ${ISSUE_COLUMNS} FROM issues_current ${where} ORDER BY ${byId()} ${PAGE_LIMIT}`,
      count: `SELECT count() AS n FROM issues_current ${where}`,
    },
    findings.params,
    page,
  );
}
