import type { Paging } from '../filters/params.js';
import { merge, targetScope, whereClause, type Scope, type Sql } from '../filters/sql.js';
import type { Store } from '../storage/gateway.js';
import { teamsOf, teamsOfSql } from '../teams/associations.js';
import { byId, PAGE_LIMIT, type PageOf, readPage } from '../storage/paged.js';
import type { TargetBody } from './schema.js';

const TEAMS_OF = teamsOfSql('ids');

/**
 * Targets with their teams, in one statement: its two lookups run side by side (UNION ALL), which
 * costs about two thirds of running them one after the other.
 */
export async function targetsByIds(store: Store, ids: string[]): Promise<Map<string, TargetBody>> {
  if (ids.length === 0) return new Map();
  const rows = await store.query<{ part: 'target' | 'teams'; target: string; identifier: string; teams: string[] }>(
    `SELECT 'target' AS part, id AS target, identifier, CAST([], 'Array(String)') AS teams FROM targets WHERE id IN {ids:Array(UUID)}
     UNION ALL
     SELECT 'teams' AS part, target, '' AS identifier, teams FROM (${TEAMS_OF})`,
    { ids },
  );
  const found = new Map<string, TargetBody>();
  const teams = new Map<string, string[]>();
  for (const r of rows) {
    if (r.part === 'target') found.set(r.target, { id: r.target, identifier: r.identifier, teams: [] });
    else teams.set(r.target, r.teams);
  }
  for (const [id, target] of found) target.teams = teams.get(id) ?? [];
  return found;
}

async function withTeams(store: Store, page: PageOf<{ id: string; identifier: string }>): Promise<PageOf<TargetBody>> {
  const teams = await teamsOf(
    store,
    page.rows.map((r) => r.id),
  );
  return { pagination: page.pagination, rows: page.rows.map((r) => ({ ...r, teams: teams.get(r.id) ?? [] })) };
}

async function targetList(store: Store, where: Sql, page: Paging): Promise<PageOf<TargetBody>> {
  const targets = await readPage<{ id: string; identifier: string }>(
    store,
    {
      page: `SELECT id, identifier FROM targets FINAL ${whereClause(where)} ORDER BY ${byId()} ${PAGE_LIMIT}`,
      count: `SELECT count() AS n FROM targets FINAL ${whereClause(where)}`,
    },
    where.params,
    page,
  );
  return withTeams(store, targets);
}

/** GET /targets (SPEC §6.5): team, teams and identifier filters apply to the target itself. */
export function targetPage(store: Store, scope: Scope, page: Paging): Promise<PageOf<TargetBody>> {
  return targetList(store, targetScope(scope, 'id'), page);
}

/** Targets with at least one finding of the issue (SPEC §6.4) among the `visible` ones (a condition on `id`). */
export function targetsOfIssue(
  store: Store,
  issueId: string,
  page: Paging,
  visible: Sql = { where: [], params: {} },
): Promise<PageOf<TargetBody>> {
  const ofIssue = { where: ['id IN (SELECT target_id FROM findings WHERE issue_id = {issue:UUID})'], params: { issue: issueId } };
  return targetList(store, merge(ofIssue, visible), page);
}
