import type { FindingFilters, Paging } from '../filters/params.js';
import { findingConditions, merge, whereClause, type Sql } from '../filters/sql.js';
import type { Store } from '../storage/gateway.js';
import { issuesByIds, type Issue } from '../issues/queries.js';
import { byId, pagedQuery, type PageOf } from '../storage/paged.js';
import { targetsByIds } from '../targets/queries.js';

/** Reads of findings: the list of every findings endpoint, single findings, events, MTTR. */

/** A finding's stored state, with its periods as epoch seconds. */
export interface FindingRow {
  id: string;
  target_id: string;
  issue_id: string;
  affected_resource: string;
  status: 'OPEN' | 'FIXED';
  score: number;
  found: number[];
  fixed: number[];
}

/** A finding with what its JSON shows of its issue and target (SPEC §6.1). */
export interface FindingWithContext extends FindingRow {
  issue: Issue;
  identifier: string;
  teams: string[];
}

/** What a findings list is a list of (SPEC §6.2–§6.5): all findings, or one issue's, target's or source's. */
export interface FindingBase {
  issueId?: string;
  targetId?: string;
  /** Findings with a FOUND event from this source (which ran against `targetId`). */
  sourceId?: string;
  ids?: string[];
}

function baseConditions(base: FindingBase): Sql {
  const out: Sql = { where: [], params: {} };
  if (base.issueId !== undefined) {
    out.params.baseIssue = base.issueId;
    out.where.push('issue_id = {baseIssue:UUID}');
  }
  if (base.targetId !== undefined) {
    out.params.baseTarget = base.targetId;
    out.where.push('target_id = {baseTarget:UUID}');
  }
  if (base.sourceId !== undefined) {
    // finding_events is sorted by finding: restrict to the source's target's findings first.
    out.params.baseSource = base.sourceId;
    out.where.push(`id IN (SELECT finding_id FROM finding_events
      WHERE finding_id IN (SELECT id FROM findings WHERE target_id = {baseTarget:UUID}) AND source_id = {baseSource:UUID})`);
  }
  if (base.ids !== undefined) {
    out.params.baseIds = base.ids;
    out.where.push('id IN {baseIds:Array(UUID)}');
  }
  return out;
}

const ORDER = {
  id: byId(),
  score: `score, ${byId()}`,
  '-score': `score DESC, ${byId()}`,
} as const;

/** A finding's row as a page shows it, periods as epoch seconds. */
const ROW_COLUMNS = `id, target_id, issue_id, affected_resource, status, score,
            arrayMap(x -> toUInt32(x), found_at) AS found, arrayMap(x -> toUInt32(x), fixed_at) AS fixed`;

/**
 * A page of findings. Where the scope's rows are stored in id order (a team's copy) and the page
 * is by id, the page query reads the page's rows and nothing more. Otherwise in two steps: the
 * page's keys (only the sort and key columns are read for every matching finding), then those
 * findings' rows.
 */
export async function findingPage(
  store: Store,
  base: FindingBase,
  filters: FindingFilters,
  page: Paging,
  now: number,
): Promise<PageOf<FindingWithContext>> {
  const selected = findingConditions(filters, now);
  const sql = merge(baseConditions(base), selected.scope);
  if (selected.idOrdered && (filters.sortBy ?? 'id') === 'id') {
    const rows = await pagedQuery<FindingRow>(
      store,
      { select: ROW_COLUMNS, from: selected.from, where: whereClause(sql), orderBy: ORDER.id, params: sql.params },
      page,
    );
    return { rows: await withContext(store, rows.rows), pagination: rows.pagination };
  }
  const keys = await pagedQuery<FindingKey>(
    store,
    { select: 'id, target_id', from: selected.from, where: whereClause(sql), orderBy: ORDER[filters.sortBy ?? 'id'], params: sql.params },
    page,
  );
  const rows = new Map((await findingsByKeys(store, keys.rows)).map((r) => [r.id, r]));
  return { rows: keys.rows.flatMap((r) => rows.get(r.id) ?? []), pagination: keys.pagination };
}

/** What locates a finding: its id and its target (the findings table's primary key). */
export interface FindingKey {
  id: string;
  target_id: string;
}

/** Keys of findings known only by id (single-finding endpoints). */
export async function findingKeys(store: Store, ids: string[]): Promise<FindingKey[]> {
  if (ids.length === 0) return [];
  return store.query<FindingKey>('SELECT DISTINCT id, target_id FROM findings WHERE id IN {ids:Array(UUID)}', { ids });
}

/**
 * Findings with their issue, target and teams. Each part is looked up by bound ids (a finding by
 * its primary key (target_id, id)); separate queries cost less here than one with joins.
 */
export async function findingsByKeys(store: Store, keys: FindingKey[]): Promise<FindingWithContext[]> {
  if (keys.length === 0) return [];
  const rows = await store.query<FindingRow>(
    `SELECT ${ROW_COLUMNS}
     FROM findings FINAL
     WHERE target_id IN {targetIds:Array(UUID)} AND id IN {ids:Array(UUID)}
     ORDER BY ${byId()}`,
    { ids: keys.map((k) => k.id), targetIds: [...new Set(keys.map((k) => k.target_id))] },
  );
  return withContext(store, rows);
}

/** Findings' rows with their issues, targets and teams. */
async function withContext(store: Store, rows: FindingRow[]): Promise<FindingWithContext[]> {
  if (rows.length === 0) return [];
  const issues = await issuesByIds(store, [...new Set(rows.map((r) => r.issue_id))]);
  const targets = await targetsByIds(store, [...new Set(rows.map((r) => r.target_id))]);
  return rows.map((r) => {
    const target = targets.get(r.target_id);
    return {
      ...r,
      issue: issues.get(r.issue_id) ?? { id: r.issue_id, summary: '', cwe_id: 0, description: '', recommendations: [], reference_links: [], labels: [] },
      identifier: target?.identifier ?? '',
      teams: target?.teams ?? [],
    };
  });
}

/** The current attributes of findings: their latest FOUND event's payload and source (SPEC §3.5.6). */
export interface LatestEvent {
  finding: string;
  details: string;
  impact_details: string;
  resources: string;
  affected_resource_string: string;
  source_id: string;
  source_name: string;
  component: string;
  instance: string;
  options: string;
  source_epoch: number;
  source_target: string;
}

export async function latestEvents(store: Store, findingIds: string[]): Promise<Map<string, LatestEvent>> {
  if (findingIds.length === 0) return new Map();
  const rows = await store.query<LatestEvent>(
    `SELECT finding, e.1 AS details, e.2 AS impact_details, e.3 AS resources, e.4 AS affected_resource_string,
            e.5 AS source_id, e.6 AS source_name, e.7 AS component, e.8 AS instance, e.9 AS options,
            toUInt32(e.10) AS source_epoch, e.11 AS source_target
     FROM
     (
         SELECT finding_id AS finding,
                argMax((details, impact_details, resources, affected_resource_string,
                        source_id, source_name, component, check_id, options, time, target_id), (time, check_id, pos)) AS e
         FROM finding_events
         WHERE finding_id IN {ids:Array(UUID)}
         GROUP BY finding_id
     )`,
    { ids: findingIds },
  );
  return new Map(rows.map((r) => [r.finding, r]));
}

/**
 * The finding of an issue on a target (SPEC §6.4): a target can hold several (one per affected
 * resource); the one with the latest FOUND event wins, ties by ascending id.
 */
export async function findingOfIssueOnTarget(store: Store, issueId: string, targetId: string): Promise<string | undefined> {
  const [row] = await store.query<{ finding: string }>(
    `SELECT finding_id AS finding
     FROM finding_events
     WHERE finding_id IN (SELECT id FROM findings WHERE issue_id = {issue:UUID} AND target_id = {target:UUID})
     GROUP BY finding_id
     ORDER BY max(time) DESC, toString(finding_id)
     LIMIT 1`,
    { issue: issueId, target: targetId },
  );
  return row?.finding;
}

export interface EventRow {
  id: string;
  finding_id: string;
  source_id: string;
  score: number;
  details: string;
  resources: string;
  epoch: number;
}

/** A finding's FOUND events, latest first (SPEC §5.4). */
export function eventPage(store: Store, findingId: string, page: Paging): Promise<PageOf<EventRow>> {
  return pagedQuery<EventRow>(
    store,
    {
      select: 'id, finding_id, source_id, score, details, resources, toUInt32(time) AS epoch',
      from: 'finding_events',
      where: 'WHERE finding_id = {finding:UUID}',
      orderBy: `time DESC, ${byId()}`,
      params: { finding: findingId },
    },
    page,
  );
}

/**
 * Mean time to remediate in days over the closed periods of the selected findings (SPEC §6.8),
 * or undefined when there is none. `where` selects findings (a base or a family).
 */
export async function meanTtrDays(store: Store, where: Sql): Promise<number | undefined> {
  const [row] = await store.query<{ hours: number; periods: number }>(
    `SELECT sum(ttr_sum) AS hours, sum(ttr_count) AS periods FROM findings FINAL ${whereClause(where)}`,
    where.params,
  );
  if (!row || row.periods === 0) return undefined;
  return row.hours / row.periods / 24;
}

export const mttrScope = {
  base: baseConditions,
  family: (familyId: string): Sql => ({ where: ['has(family_ids, {family:UUID})'], params: { family: familyId } }),
};
