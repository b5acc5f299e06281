import type { Paging } from '../filters/params.js';
import { labelsAndScores, merge, sqlTime, whereClause } from '../filters/sql.js';
import { NEVER } from '../domain/time.js';
import type { Issue } from '../issues/queries.js';
import type { Store } from '../storage/gateway.js';
import { byId, pagedQuery, type PageOf } from '../storage/paged.js';
import type { StatFilters } from './filters.js';

export interface IssueStat extends Issue {
  open: number;
  fixed: number;
}

/**
 * SPEC §7.3: for each issue with at least one counted finding, its counted findings currently OPEN
 * and FIXED. A finding counts when its score is within bounds and, with dates, it has a FOUND event
 * in [L, U).
 */
export function issueStats(store: Store, f: StatFilters, page: Paging): Promise<PageOf<IssueStat>> {
  let sql = labelsAndScores({ minScore: f.minScore, maxScore: f.maxScore });
  if (f.minDate !== undefined || f.maxDateEnd !== undefined) {
    sql = merge(sql, {
      where: [`id IN (SELECT finding_id FROM finding_events WHERE time >= {eventFrom:DateTime('UTC')} AND time < {eventTo:DateTime('UTC')})`],
      params: { eventFrom: sqlTime(f.minDate ?? 0), eventTo: sqlTime(f.maxDateEnd ?? NEVER) },
    });
  }
  return pagedQuery<IssueStat>(
    store,
    {
      select: 'i.id AS id, summary, cwe_id, description, recommendations, reference_links, labels, open, fixed',
      from: `issues_current AS i
       INNER JOIN
       (
           SELECT issue_id, countIf(status = 'OPEN') AS open, countIf(status = 'FIXED') AS fixed
           FROM findings FINAL ${whereClause(sql)}
           GROUP BY issue_id
       ) AS c ON c.issue_id = i.id`,
      where: '',
      orderBy: byId('i.id'),
      params: sql.params,
    },
    page,
  );
}
