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
  return filtered ? filteredIssueStats(store, f, page, kept) : currentIssueStats(store, page);
}

interface IssueCounts {
  id: string;
  open: number;
  fixed: number;
}

/**
 * Without filters, while no finding can be suppressed, every finding counts: the page and its total
 * come from the per-issue counters (migration 0011, one row per issue) in one statement, then the
 * page's issues are looked up by id.
 */
async function currentIssueStats(store: Store, page: Paging): Promise<PageOf<IssueStatBody>> {
  const counts = `(SELECT issue_id, sum(open) AS open_n, sum(fixed) AS fixed_n
                  FROM issue_finding_counts GROUP BY issue_id HAVING open_n + fixed_n > 0)`;
  const counted = pageCanHoldRows(page)
    ? await store.query<IssueCounts & { page_total: number }>(
        `SELECT issue_id AS id, open_n AS open, fixed_n AS fixed, count() OVER () AS page_total
         FROM ${counts}
         ORDER BY ${byId('issue_id')}
         ${PAGE_LIMIT}`,
        pageParams(page),
      )
    : [];
  const total = await toldTotal(
    store,
    { sql: `SELECT count() AS n FROM ${counts}`, params: {} },
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

/** With scores, dates, teams or suppressed findings, the counted findings' latest versions are grouped by issue. */
async function filteredIssueStats(store: Store, f: StatFilters, page: Paging, kept: Sql | undefined): Promise<PageOf<IssueStatBody>> {
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
  const perIssue = `SELECT issue_id, countIf(status = 'OPEN') AS open, countIf(status = 'FIXED') AS fixed
                    FROM ${from} ${whereClause(sql)} GROUP BY issue_id`;
  const counted = `issues_current AS i INNER JOIN (${perIssue}) AS c ON c.issue_id = i.id`;
  // The page tells the total (a window over every counted issue): one statement where the page has rows.
  const rows = pageCanHoldRows(page)
    ? await store.query<IssueStatBody & { page_total: number }>(
        `SELECT i.id AS id, summary, cwe_id, description, recommendations, reference_links, labels, open, fixed,
                count() OVER () AS page_total
         FROM ${counted}
         ORDER BY ${byId('i.id')}
         ${PAGE_LIMIT}`,
        { ...sql.params, ...pageParams(page) },
      )
    : [];
  const count = { sql: `SELECT count() AS n FROM ${counted}`, params: sql.params };
  const total = await toldTotal(store, count, page, rows.length, rows[0]?.page_total);
  return { rows: rows.map(({ page_total: _total, ...row }) => row), pagination: pagination(page, total) };
}
