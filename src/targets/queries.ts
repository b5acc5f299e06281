import { targetId } from '../domain/ids.js';
import { nowSeconds } from '../domain/time.js';
import type { Paging } from '../filters/params.js';
import { merge, targetScope, whereClause, type Scope, type Sql } from '../filters/sql.js';
import type { Store } from '../storage/gateway.js';
import { byId, PAGE_LIMIT, type PageOf, readPage } from '../storage/paged.js';
import { acquireAll, LockTimeout, type Locks } from '../locks/target-locks.js';
import type { Logger } from '../log.js';
import { copyTargetToTeams } from './team-copies.js';
import { MAX_TEAMS_PER_TARGET } from './schema.js';

export interface Target {
  id: string;
  identifier: string;
  teams: string[];
}

/**
 * Each target's teams in association order (a pair written twice keeps its first position): of
 * the targets bound as `ids`, or of all.
 */
const teamsOfSql = (targets: 'ids' | 'all') => `SELECT target, arrayMap(x -> x.2, arraySort(groupArray((seq, team)))) AS teams
     FROM
     (
         SELECT target_id AS target, team, min(associated_seq) AS seq
         FROM target_teams
         ${targets === 'ids' ? 'WHERE target_id IN {ids:Array(UUID)}' : ''}
         GROUP BY target_id, team
     )
     GROUP BY target`;
const TEAMS_OF = teamsOfSql('ids');

export async function teamsOf(store: Store, targetIds: string[]): Promise<Map<string, string[]>> {
  if (targetIds.length === 0) return new Map();
  const rows = await store.query<{ target: string; teams: string[] }>(TEAMS_OF, { ids: targetIds });
  return new Map(rows.map((r) => [r.target, r.teams]));
}

/**
 * Targets with their teams, in one statement: its two lookups run side by side (UNION ALL), which
 * costs about two thirds of running them one after the other.
 */
export async function targetsByIds(store: Store, ids: string[]): Promise<Map<string, Target>> {
  if (ids.length === 0) return new Map();
  const rows = await store.query<{ part: 'target' | 'teams'; target: string; identifier: string; teams: string[] }>(
    `SELECT 'target' AS part, id AS target, identifier, CAST([], 'Array(String)') AS teams FROM targets WHERE id IN {ids:Array(UUID)}
     UNION ALL
     SELECT 'teams' AS part, target, '' AS identifier, teams FROM (${TEAMS_OF})`,
    { ids },
  );
  const found = new Map<string, Target>();
  const teams = new Map<string, string[]>();
  for (const r of rows) {
    if (r.part === 'target') found.set(r.target, { id: r.target, identifier: r.identifier, teams: [] });
    else teams.set(r.target, r.teams);
  }
  for (const [id, target] of found) target.teams = teams.get(id) ?? [];
  return found;
}

/**
 * Rewrites every target's object (sql/0012) from targets and target_teams: after associations
 * written in bulk straight into target_teams by a process that owns the store alone (the
 * benchmark datasets).
 */
export async function describeAllTargets(store: Store): Promise<void> {
  await store.command(
    `INSERT INTO target_objects
     SELECT t.id, t.identifier, tt.teams
     FROM targets AS t FINAL
     LEFT JOIN (${teamsOfSql('all')}) AS tt ON tt.target = t.id`,
  );
}

async function withTeams(store: Store, page: PageOf<{ id: string; identifier: string }>): Promise<PageOf<Target>> {
  const teams = await teamsOf(
    store,
    page.rows.map((r) => r.id),
  );
  return { pagination: page.pagination, rows: page.rows.map((r) => ({ ...r, teams: teams.get(r.id) ?? [] })) };
}

async function targetList(store: Store, where: Sql, page: Paging): Promise<PageOf<Target>> {
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
export function targetPage(store: Store, scope: Scope, page: Paging): Promise<PageOf<Target>> {
  return targetList(store, targetScope(scope, 'id'), page);
}

/** Targets with at least one finding of the issue (SPEC §6.4) among the `visible` ones (a condition on `id`). */
export function targetsOfIssue(
  store: Store,
  issueId: string,
  page: Paging,
  visible: Sql = { where: [], params: {} },
): Promise<PageOf<Target>> {
  const ofIssue = { where: ['id IN (SELECT target_id FROM findings WHERE issue_id = {issue:UUID})'], params: { issue: issueId } };
  return targetList(store, merge(ofIssue, visible), page);
}

/** An association would give the target more than MAX_TEAMS_PER_TARGET teams (SPEC §5.6). */
export class TooManyTeams extends Error {
  constructor(readonly targetId: string) {
    super(`target ${targetId} would have more than ${MAX_TEAMS_PER_TARGET} teams`);
    this.name = 'TooManyTeams';
  }
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
 *
 * Runs under the target's ingest lock, so no batch writes the target's findings between the new
 * association and the copy of its findings into the team (see sql/0009_team_copies.sql). Every
 * requested team gets the copy, not only the added ones: a retry heals an association whose copy
 * was cut short.
 *
 * Without Redis no lock can be taken, but no batch can start either (batches take their locks in
 * Redis too): the association goes ahead, and only a batch already writing when Redis went away
 * could slip a finding version past the copy. `log` hears about it.
 */
export async function associateTeams(store: Store, locks: Locks, identifier: string, teams: string[], log?: Logger): Promise<Target> {
  const id = targetId(identifier);
  const held = await acquireAll(locks, [id]).catch((err: unknown) => {
    if (err instanceof LockTimeout) throw err;
    log?.warn('target lock unavailable; associating teams without it', { target: id, err });
    return undefined;
  });
  try {
    const existing = await targetsByIds(store, [id]);
    const current = existing.get(id);
    if (!current) await store.insert('targets', [{ id, identifier, created_at: nowSeconds() }]);
    const known = new Set(current?.teams ?? []);
    const requested = [...new Set(teams)];
    const added = requested.filter((t) => !known.has(t));
    // Counted under the target's lock, which every association takes: two requests cannot both
    // pass the limit on the same count (without Redis, see above, they could).
    if (known.size + added.length > MAX_TEAMS_PER_TARGET) throw new TooManyTeams(id);
    await store.insert(
      'target_teams',
      added.map((team) => ({ team, target_id: id, associated_seq: nextSeq() })),
    );
    const target = { id, identifier, teams: [...(current?.teams ?? []), ...added] };
    await store.insert('target_objects', [target]);
    if (current) await copyTargetToTeams(store, id, requested);
    return target;
  } finally {
    await held?.release().catch((err: unknown) => log?.warn('releasing the target lock failed', { target: id, err }));
  }
}
