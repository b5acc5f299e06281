import { referenceInstant, type Suppression } from '../decisions/suppression.js';
import type { Paging } from '../filters/params.js';
import { findingsIn, labelsAndScores, merge, type Sql, sqlTime, whereClause } from '../filters/sql.js';
import { NEVER, nowSeconds } from '../domain/time.js';
import { issuesByIds } from '../issues/queries.js';
import type { Store } from '../storage/gateway.js';
import { byId, PAGE_LIMIT, type PageOf, pageCanHoldRows, pageParams, pagination, toldTotal } from '../storage/paged.js';
import type { StatFilters } from './filters.js';
import type { IssueStatBody } from './schema.js';

/**
 * SPEC §7.3: for each issue with at least one counted finding, its counted findings currently OPEN
 * and FIXED. A finding counts when its score is within bounds and, with dates, it has a FOUND event
 * in [L, U). `team`/`teams` (the scope of a caller restricted to its teams, src/auth/scope.ts)
 * count only their targets' findings. Findings suppressed at the reference instant (SPEC §12.3) do
 * not count unless includeSuppressed.
 */
export async function issueStats(
  store: Store,
  suppression: Suppression,
  f: StatFilters,
  page: Paging,
  now = nowSeconds(),
): Promise<PageOf<IssueStatBody>> {
  const kept = await suppression.notSuppressedAt(f, referenceInstant(f, now));
  const filtered = [f.minScore, f.maxScore, f.minDate, f.maxDateEnd, f.team, f.teams, kept].some((v) => v !== undefined);
  return countedPage(store, filtered ? filteredCounts(f, kept) : CURRENT_COUNTS, page);
}

/**
 * Without filters, while no finding can be suppressed, every finding counts: the per-issue
 * counters (migration 0011, one row per issue) answer.
 */
const CURRENT_COUNTS: PerIssue = {
  // Aliases of their own: `sum(open) AS open` is a cycle to engines that resolve aliases first.
  sql: `SELECT issue_id, open_n AS open, fixed_n AS fixed
        FROM (SELECT issue_id, sum(open) AS open_n, sum(fixed) AS fixed_n FROM issue_finding_counts GROUP BY issue_id HAVING open_n + fixed_n > 0)`,
  params: {},
};

/** A statement of issue_id, open, fixed: the counted findings per issue. */
interface PerIssue {
  sql: string;
  params: Record<string, unknown>;
}

/** With scores, dates, teams or suppressed findings, the counted findings' latest versions are grouped by issue. */
function filteredCounts(f: StatFilters, kept: Sql | undefined): PerIssue {
  let conditions = labelsAndScores({ minScore: f.minScore, maxScore: f.maxScore });
  if (f.minDate !== undefined || f.maxDateEnd !== undefined) {
    conditions = merge(conditions, {
      where: [
        `id IN (SELECT finding_id FROM finding_events WHERE time >= {eventFrom:DateTime('UTC')} AND time < {eventTo:DateTime('UTC')})`,
      ],
      params: { eventFrom: sqlTime(f.minDate ?? 0), eventTo: sqlTime(f.maxDateEnd ?? NEVER) },
    });
  }
  const { from, scope } = findingsIn({ team: f.team, teams: f.teams });
  const sql = merge(scope, conditions, ...(kept ? [kept] : []));
  return {
    sql: `SELECT issue_id, countIf(status = 'OPEN') AS open, countIf(status = 'FIXED') AS fixed FROM ${from} ${whereClause(sql)} GROUP BY issue_id`,
    params: sql.params,
  };
}

interface IssueCounts {
  id: string;
  open: number;
  fixed: number;
}

/**
 * One page of the issues counted by `perIssue`: the page of
 * counts and its total in one statement (a window over every counted issue), then the page's issues
 * looked up by id. Joining the issues before the page would read every counted issue's texts.
 */
async function countedPage(store: Store, perIssue: PerIssue, page: Paging): Promise<PageOf<IssueStatBody>> {
  const counts = `(${perIssue.sql})`;
  const counted = pageCanHoldRows(page)
    ? await store.query<IssueCounts & { page_total: number }>(
        `SELECT issue_id AS id, open, fixed, count() OVER () AS page_total
         FROM ${counts}
         ORDER BY ${byId('issue_id')}
         ${PAGE_LIMIT}`,
        { ...perIssue.params, ...pageParams(page) },
      )
    : [];
  const total = await toldTotal(
    store,
    { sql: `SELECT count() AS n FROM ${counts}`, params: perIssue.params },
    page,
    counted.length,
    counted[0]?.page_total,
  );
  const issues = await issuesByIds(
    store,
    counted.map((c) => c.id),
  );
  // Claims are written before findings (src/ingest), so every counted issue is stored.
  const rows = counted.flatMap((c) => {
    const issue = issues.get(c.id);
    return issue ? [{ ...issue, open: Number(c.open), fixed: Number(c.fixed) }] : [];
  });
  return { rows, pagination: pagination(page, total) };
}
