import type { Paging } from '../filters/params.js';
import type { Store } from '../storage/gateway.js';
import { byId, pagedQuery, type PageOf } from '../storage/paged.js';

/** Issue objects (SPEC §6.1) from issues_current (winning details and labels claims). */

export interface Issue {
  id: string;
  summary: string;
  cwe_id: number;
  description: string;
  recommendations: string[];
  reference_links: string[];
  labels: string[];
}

export const ISSUE_COLUMNS = 'id, summary, cwe_id, description, recommendations, reference_links, labels';

export async function issuesByIds(store: Store, ids: string[]): Promise<Map<string, Issue>> {
  if (ids.length === 0) return new Map();
  const rows = await store.query<Issue>(`SELECT ${ISSUE_COLUMNS} FROM issues_current WHERE id IN {ids:Array(UUID)}`, { ids });
  return new Map(rows.map((r) => [r.id, r]));
}

export function issuePage(store: Store, page: Paging): Promise<PageOf<Issue>> {
  return pagedQuery<Issue>(store, { select: ISSUE_COLUMNS, from: 'issues_current', where: '', orderBy: byId(), params: {} }, page);
}

/** Issues with at least one finding on the target (SPEC §6.5). */
export function issuesOfTarget(store: Store, targetId: string, page: Paging): Promise<PageOf<Issue>> {
  return pagedQuery<Issue>(
    store,
    {
      select: ISSUE_COLUMNS,
      from: 'issues_current',
      where: 'WHERE id IN (SELECT issue_id FROM findings WHERE target_id = {target:UUID})',
      orderBy: byId(),
      params: { target: targetId },
    },
    page,
  );
}
