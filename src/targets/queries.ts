import { targetId } from '../domain/ids.js';
import { nowSeconds } from '../domain/time.js';
import type { Paging } from '../filters/params.js';
import { targetScope, whereClause, type Scope, type Sql } from '../filters/sql.js';
import type { Store } from '../storage/gateway.js';
import { byId, pagedQuery, type PageOf } from '../storage/paged.js';

export interface Target {
  id: string;
  identifier: string;
  teams: string[];
}

/** Each target's teams in association order (a pair written twice keeps its first position). */
const TEAMS_OF = `SELECT target, arrayMap(x -> x.2, arraySort(groupArray((seq, team)))) AS teams
     FROM
     (
         SELECT target_id AS target, team, min(associated_seq) AS seq
         FROM target_teams
         WHERE target_id IN {ids:Array(UUID)}
         GROUP BY target_id, team
     )
     GROUP BY target`;

export async function teamsOf(store: Store, targetIds: string[]): Promise<Map<string, string[]>> {
  if (targetIds.length === 0) return new Map();
  const rows = await store.query<{ target: string; teams: string[] }>(TEAMS_OF, { ids: targetIds });
  return new Map(rows.map((r) => [r.target, r.teams]));
}

export async function targetsByIds(store: Store, ids: string[]): Promise<Map<string, Target>> {
  if (ids.length === 0) return new Map();
  const rows = await store.query<{ id: string; identifier: string }>(
    'SELECT DISTINCT id, identifier FROM targets WHERE id IN {ids:Array(UUID)}',
    { ids },
  );
  const teams = await teamsOf(store, ids);
  return new Map(rows.map((r) => [r.id, { id: r.id, identifier: r.identifier, teams: teams.get(r.id) ?? [] }]));
}

async function withTeams(store: Store, page: PageOf<{ id: string; identifier: string }>): Promise<PageOf<Target>> {
  const teams = await teamsOf(store, page.rows.map((r) => r.id));
  return { pagination: page.pagination, rows: page.rows.map((r) => ({ ...r, teams: teams.get(r.id) ?? [] })) };
}

function targetList(store: Store, where: Sql, page: Paging): Promise<PageOf<Target>> {
  return pagedQuery<{ id: string; identifier: string }>(
    store,
    { select: 'id, identifier', from: 'targets FINAL', where: whereClause(where), orderBy: byId(), params: where.params },
    page,
  ).then((p) => withTeams(store, p));
}

/** GET /targets (SPEC §6.5): team, teams and identifier filters apply to the target itself. */
export function targetPage(store: Store, scope: Scope, page: Paging): Promise<PageOf<Target>> {
  return targetList(store, targetScope(scope, 'id'), page);
}

/** Targets with at least one finding of the issue (SPEC §6.4). */
export function targetsOfIssue(store: Store, issueId: string, page: Paging): Promise<PageOf<Target>> {
  return targetList(store, { where: ['id IN (SELECT target_id FROM findings WHERE issue_id = {issue:UUID})'], params: { issue: issueId } }, page);
}

// Association order must survive several associations within one millisecond.
let lastSeq = 0;
function nextSeq(): number {
  lastSeq = Math.max(Date.now() * 1000, lastSeq + 1);
  return lastSeq;
}

/**
 * POST /targets (SPEC §6.6): find or create the target and add the teams it lacks, in request
 * order. Associations are never removed.
 */
export async function associateTeams(store: Store, identifier: string, teams: string[]): Promise<Target> {
  const id = targetId(identifier);
  const existing = await targetsByIds(store, [id]);
  const current = existing.get(id);
  if (!current) await store.insert('targets', [{ id, identifier, created_at: nowSeconds() }]);
  const known = new Set(current?.teams ?? []);
  const added = [...new Set(teams)].filter((t) => !known.has(t));
  await store.insert(
    'target_teams',
    added.map((team) => ({ team, target_id: id, associated_seq: nextSeq() })),
  );
  return { id, identifier, teams: [...(current?.teams ?? []), ...added] };
}
