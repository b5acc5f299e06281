import type { FindingFilters, Paging } from '../filters/params.js';
import { findingConditions, merge, whereClause, type Sql } from '../filters/sql.js';
import type { Store } from '../storage/gateway.js';
import type { Issue } from '../issues/queries.js';
import { byId, pagedQuery, type PageOf } from '../storage/paged.js';
import { NIL_UUID } from '../domain/uuid.js';
import { totalScope } from './totals.js';

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

/** The current attributes of a finding: its latest FOUND event's payload and source (SPEC §3.5.6). */
export interface LatestEvent {
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
}

/** A finding with what its JSON shows of its latest event, issue and target (SPEC §6.1). */
export interface FindingWithContext extends FindingRow {
  latest: LatestEvent | undefined;
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
            CAST(found_at, 'Array(UInt32)') AS found, CAST(fixed_at, 'Array(UInt32)') AS fixed`;

/**
 * What a page shows besides its rows, looked up by key in the tables of sql/0012 (direct joins:
 * each row's keys are looked up, no hash table is built). A key without a value reads as empty,
 * so a finding without a latest event reads the nil UUID as its source.
 */
const CONTEXT_COLUMNS = `e.details AS latest_details, e.impact_details AS latest_impact_details,
       e.resources AS latest_resources, e.affected_resource_string AS latest_affected_resource_string,
       e.source_id AS latest_source_id, e.source_name AS latest_source_name, e.component AS latest_component,
       e.check_id AS latest_instance, e.options AS latest_options, toUInt32(e.time) AS latest_source_epoch,
       i.summary AS issue_summary, i.cwe_id AS issue_cwe_id, i.description AS issue_description,
       i.recommendations AS issue_recommendations, i.reference_links AS issue_reference_links, i.labels AS issue_labels,
       t.identifier AS target_identifier, t.teams AS target_team_ids`;
const CONTEXT_JOINS = `LEFT JOIN finding_latest_events AS e ON e.finding_id = f.id
     LEFT JOIN issue_objects AS i ON i.id = f.issue_id
     LEFT JOIN target_objects AS t ON t.id = f.target_id`;

interface ContextRow extends FindingRow {
  latest_details: string;
  latest_impact_details: string;
  latest_resources: string;
  latest_affected_resource_string: string;
  latest_source_id: string;
  latest_source_name: string;
  latest_component: string;
  latest_instance: string;
  latest_options: string;
  latest_source_epoch: number;
  issue_summary: string;
  issue_cwe_id: number;
  issue_description: string;
  issue_recommendations: string[];
  issue_reference_links: string[];
  issue_labels: string[];
  target_identifier: string;
  target_team_ids: string[];
}

/**
 * Rows per block while a page is read: a page by id reads its scope in order only until the page is
 * full, a block at a time, and the default block (65,409 rows) made that ten granules of team_findings
 * for twenty rows (about 2 ms at 1M findings); one granule per block keeps full scans as fast.
 */
const PAGE_BLOCK_ROWS = 1024;

/**
 * The rows selected by `rows` (a statement selecting ROW_COLUMNS) with their context, in one
 * statement. (`f.*` would name ids `f.id`: the joined tables have ids too.) No ORDER BY: callers
 * put the rows in id order (byIdText), since sorting twenty rows costs nothing and the engine
 * spends about a millisecond planning a sort step.
 */
const withContextSql = (rows: string, extra?: { columns: string; joins: string }) =>
  `SELECT f.id AS id, f.target_id AS target_id, f.issue_id AS issue_id, f.affected_resource AS affected_resource, f.status AS status,
          f.score AS score, f.found AS found, f.fixed AS fixed, ${CONTEXT_COLUMNS}${extra?.columns ?? ''}
   FROM (${rows}) AS f
   ${CONTEXT_JOINS}
   ${extra?.joins ?? ''}
   SETTINGS join_algorithm = 'direct', max_block_size = ${PAGE_BLOCK_ROWS}`;

/** SPEC §5.4's id order (the byte order of the lowercase text, which is how ids come back). */
const byIdText = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

function withContext(r: ContextRow): FindingWithContext {
  return {
    id: r.id,
    target_id: r.target_id,
    issue_id: r.issue_id,
    affected_resource: r.affected_resource,
    status: r.status,
    score: r.score,
    found: r.found,
    fixed: r.fixed,
    latest:
      r.latest_source_id !== NIL_UUID
        ? {
            details: r.latest_details,
            impact_details: r.latest_impact_details,
            resources: r.latest_resources,
            affected_resource_string: r.latest_affected_resource_string,
            source_id: r.latest_source_id,
            source_name: r.latest_source_name,
            component: r.latest_component,
            instance: r.latest_instance,
            options: r.latest_options,
            source_epoch: r.latest_source_epoch,
          }
        : undefined,
    issue: {
      id: r.issue_id,
      summary: r.issue_summary,
      cwe_id: r.issue_cwe_id,
      description: r.issue_description,
      recommendations: r.issue_recommendations,
      reference_links: r.issue_reference_links,
      labels: r.issue_labels,
    },
    identifier: r.target_identifier,
    teams: r.target_team_ids,
  };
}

/**
 * The total of a list that counts every finding of a team, or of the organisation, with a given
 * status or any: the counters' sums kept by key (sql/0012, sql/0014, src/findings/totals.ts),
 * joined with the page's rows, instead of a count of the list.
 */
function totalFromCounters(
  base: FindingBase,
  f: FindingFilters,
): { sum: (table: string) => string; params: Record<string, unknown> } | undefined {
  const narrowed =
    Object.keys(base).length > 0 ||
    [f.atDate, f.minDate, f.maxDateEnd, f.minScore, f.maxScore, f.identifier, f.teams, f.identifiers, f.labels].some(
      (v) => v !== undefined,
    );
  if (narrowed) return undefined;
  return {
    sum: (t) => (f.status === 'OPEN' ? `${t}.open` : f.status === 'FIXED' ? `${t}.fixed` : `${t}.open + ${t}.fixed`),
    params: { totalScope: totalScope(f.team) },
  };
}

/**
 * A page of findings with their context. Where the scope's rows can be read in id order (a team's
 * copy) and the page is by id, one statement reads the page's rows, their context and, where the
 * counters tell it, the total. Otherwise the page's keys come first (only the sort and key columns
 * are read for every matching finding), then those findings' rows with their context.
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
  const order = filters.sortBy ?? 'id';
  const total = totalFromCounters(base, filters);
  if (selected.inIdOrder && order === 'id') {
    const ordered = merge(baseConditions(base), selected.inIdOrder.scope);
    const rows = await pagedQuery<ContextRow>(
      store,
      {
        // The total's key is a column here: a wrapping SELECT would be one more level for the engine
        // to plan (about a millisecond).
        select: total ? `${ROW_COLUMNS}, {totalScope:String} AS total_scope` : ROW_COLUMNS,
        from: selected.inIdOrder.from,
        where: whereClause(ordered),
        orderBy: '',
        params: { ...ordered.params, ...total?.params },
        wrap: (pageSql) =>
          withContextSql(
            pageSql,
            total
              ? { columns: `, ${total.sum('n')} AS page_total`, joins: 'LEFT JOIN finding_total_values AS n ON n.scope = f.total_scope' }
              : undefined,
          ),
        ...(total ? { totalInPage: 'column' as const } : {}),
        // A count reads the deduplicated scope, not its rows.
        countFrom: selected.from,
        countWhere: whereClause(sql),
      },
      page,
    );
    return { rows: rows.rows.map(withContext).sort(byIdText), pagination: rows.pagination };
  }
  const keys = await pagedQuery<FindingKey>(
    store,
    {
      select: 'id, target_id',
      from: selected.from,
      where: whereClause(sql),
      orderBy: ORDER[order],
      params: { ...sql.params, ...total?.params },
      ...(total
        ? {
            wrap: (pageSql: string) =>
              `SELECT *, (SELECT ${total.sum('n')} FROM finding_total_values AS n WHERE scope = {totalScope:String}) AS page_total FROM (${pageSql})`,
            totalInPage: 'column' as const,
          }
        : {}),
    },
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

/** Findings with their context, each found by its primary key (target_id, id); in id order. */
export async function findingsByKeys(store: Store, keys: FindingKey[]): Promise<FindingWithContext[]> {
  if (keys.length === 0) return [];
  const rows = await store.query<ContextRow>(
    withContextSql(
      `SELECT ${ROW_COLUMNS}
       FROM findings FINAL
       WHERE target_id IN {targetIds:Array(UUID)} AND id IN {ids:Array(UUID)}`,
    ),
    { ids: keys.map((k) => k.id), targetIds: [...new Set(keys.map((k) => k.target_id))] },
  );
  return rows.map(withContext).sort(byIdText);
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

/** A finding's FOUND events, latest first (SPEC §5.4); none when the finding is not `visible`. */
export function eventPage(
  store: Store,
  findingId: string,
  page: Paging,
  visible: Sql = { where: [], params: {} },
): Promise<PageOf<EventRow>> {
  const where = merge({ where: ['finding_id = {finding:UUID}'], params: { finding: findingId } }, visible);
  return pagedQuery<EventRow>(
    store,
    {
      select: 'id, finding_id, source_id, score, details, resources, toUInt32(time) AS epoch',
      from: 'finding_events',
      where: whereClause(where),
      orderBy: `time DESC, ${byId()}`,
      params: where.params,
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
