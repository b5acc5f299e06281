import type { FindingFilters, Paging } from '../filters/params.js';
import { findingConditions, merge, whereClause, type Sql } from '../filters/sql.js';
import { type Decision, decisionsAt } from '../decisions/store.js';
import type { Suppression } from '../decisions/suppression.js';
import type { Store } from '../storage/gateway.js';
import type { KeyedTables } from '../storage/layout.js';
import {
  byId,
  type CountStatement,
  PAGE_LIMIT,
  type PageOf,
  pageCanHoldRows,
  pageParams,
  pagination,
  pageTotal,
  toldTotal,
} from '../storage/paged.js';
import { contextColumns, contextJoins, type KeptTotal, withTheirContext } from './context.js';
import { type FindingWithContext, type StoredFinding, withContext } from './rows.js';
import { totalScope } from './totals.js';

/**
 * The statements of a findings page (SPEC §6.1–§6.5), every one written out below. A page runs
 * one of two plans:
 *
 * - IN ID ORDER (a team's copy, paged by id): one statement reads the page's rows as far as the
 *   page needs, their context and, where the kept totals tell it, the total (inIdOrderPage);
 * - BY KEYS (every other page): the page's keys first, sorted (only the sort and key columns are
 *   read for every matching finding), with the kept total where it tells (keysPage); then those
 *   findings' rows with their context (rowsByKeys, also the single-finding endpoints' statement).
 *
 * Where the page does not tell the total, the list's count follows (countSql). The context is
 * joined into the rows' statement where the store's keyed tables join by direct lookups, else read
 * by the rows' keys in one statement after it (src/findings/context.ts).
 */

/** What a findings list is a list of (SPEC §6.2–§6.5): all findings, or one issue's, target's or source's. */
export interface FindingBase {
  issueId?: string;
  targetId?: string;
  /** Findings with a FOUND event from this source (which ran against `targetId`). */
  sourceId?: string;
  ids?: string[];
}

export function baseConditions(base: FindingBase): Sql {
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
 * The rows of `f` with what a page shows besides them (src/findings/context.ts), where the statement
 * joins it (`joined`); the rows alone otherwise. (`f.*` would name ids `f.id`: the joined tables have
 * ids too.)
 */
const rowColumns = (
  joined: boolean,
) => `f.id AS id, f.target_id AS target_id, f.issue_id AS issue_id, f.affected_resource AS affected_resource,
       f.status AS status, f.score AS score, f.found AS found, f.fixed AS fixed${joined ? `,\n       ${contextColumns}` : ''}`;

/**
 * Rows per block while a page is read: a page by id reads its scope in order only until the page is
 * full, a block at a time, and the default block (65,409 rows) would make that ten granules of
 * team_findings for twenty rows; one granule per block keeps full scans as fast.
 * No ORDER BY around the joins: the rows are put in id order here (byIdText), since sorting twenty
 * rows costs nothing and the engine spends about a millisecond planning a sort step.
 */
const contextSettings = (keyed: KeyedTables) => `SETTINGS ${keyed.joinSettings}, max_block_size = 1024`;

/**
 * The kept totals (sql/0012, sql/0014, src/ingest/totals.ts) of the lists that count every finding
 * of a team, or of the organisation, with a given status or any; `n` is a finding_total_values row.
 */
const keptTotal = (status: FindingFilters['status']) =>
  status === 'OPEN' ? 'n.open' : status === 'FIXED' ? 'n.fixed' : 'n.open + n.fixed';

/**
 * IN ID ORDER: the page's rows read from `from` in id order, with their context where the keyed
 * tables join directly and, with `total`, the kept total. The rows are a named subquery, from which
 * the joins take their keys.
 */
const inIdOrderPage = (keyed: KeyedTables, from: string, where: string, total: string | undefined) => `
WITH page_rows AS
(
    SELECT ${ROW_COLUMNS}${total ? ', {totalScope:String} AS total_scope' : ''}
    FROM ${from}
    ${where}
    ${PAGE_LIMIT}
)
SELECT ${rowColumns(keyed.directJoins)}${total ? `, ${total} AS page_total` : ''}
FROM page_rows AS f
   ${
     keyed.directJoins
       ? contextJoins(keyed, {
           id: '(SELECT id FROM page_rows)',
           issue_id: '(SELECT issue_id FROM page_rows)',
           target_id: '(SELECT target_id FROM page_rows)',
         })
       : ''
   }
   ${total ? `LEFT JOIN ${keyed.byKeys('finding_total_values', 'scope', '({totalScope:String})')} AS n ON n.scope = f.total_scope` : ''}
${contextSettings(keyed)}`;

/** BY KEYS, first statement: the page's keys in the list's order, with the kept total where it tells. */
const keysPage = (keyed: KeyedTables, from: string, where: string, order: string, total: string | undefined) => {
  const keys = `SELECT id, target_id
    FROM ${from}
    ${where}
    ORDER BY ${order}
    ${PAGE_LIMIT}`;
  if (!total) return keys;
  return `
SELECT *, (SELECT ${total} FROM ${keyed.byKeys('finding_total_values', 'scope', '({totalScope:String})')} AS n WHERE scope = {totalScope:String}) AS page_total
FROM (${keys})`;
};

/** BY KEYS, second statement: findings by primary key (target_id, id) with their context. */
const rowsByKeys = (keyed: KeyedTables) => `
SELECT ${rowColumns(keyed.directJoins)}
FROM
(
    SELECT ${ROW_COLUMNS}
    FROM findings FINAL
    WHERE target_id IN {targetIds:Array(UUID)} AND id IN {ids:Array(UUID)}
) AS f
   ${
     keyed.directJoins
       ? contextJoins(keyed, {
           id: '{ids:Array(UUID)}',
           issue_id: '(SELECT issue_id FROM findings WHERE target_id IN {targetIds:Array(UUID)} AND id IN {ids:Array(UUID)})',
           target_id: '{targetIds:Array(UUID)}',
         })
       : ''
   }
${contextSettings(keyed)}`;

/** The list's count, where the page does not tell it. */
const countSql = (from: string, where: string) => `SELECT count() AS n FROM ${from} ${where}`;

/**
 * Whether the kept totals answer the list: no base, and no filter but status and the one team
 * whose totals are kept (sortBy only orders; identifierMatch means nothing without identifier).
 * Any other filter, present or added later, narrows the list.
 */
const COUNTED_AS_KEPT: ReadonlySet<string> = new Set(['status', 'team', 'sortBy', 'identifierMatch']);
function keptTotalOf(base: FindingBase, f: FindingFilters): KeptTotal | undefined {
  const narrowed = Object.keys(base).length > 0 || Object.entries(f).some(([k, v]) => v !== undefined && !COUNTED_AS_KEPT.has(k));
  return narrowed ? undefined : { sql: keptTotal(f.status), params: { totalScope: totalScope(f.team) } };
}

/** A page of findings with their context (plans above). */
export async function findingPage(
  store: Store,
  suppression: Suppression,
  base: FindingBase,
  filters: FindingFilters,
  page: Paging,
  now: number,
): Promise<PageOf<FindingWithContext>> {
  const selected = findingConditions(filters, now);
  // SPEC §12.3: `decision=` and each finding's decision, at the list's reference instant.
  const t = filters.atDate ?? now;
  const decision = await suppression.selection(filters.decision, t);
  const where = merge(baseConditions(base), selected.scope, decision);
  const order = filters.sortBy ?? 'id';
  const total = keptTotalOf(base, filters);
  if (selected.inIdOrder && order === 'id') {
    const ordered = merge(baseConditions(base), selected.inIdOrder.scope, decision);
    const params = { ...ordered.params, ...total?.params };
    // A count reads the deduplicated scope, not its rows in id order.
    const count: CountStatement = { sql: countSql(selected.from, whereClause(where)), params };
    // Context and kept total joined into the rows' statement, or read after it with the rows' keys.
    const joined = store.keyed.directJoins;
    const found = pageCanHoldRows(page)
      ? await store.query<StoredFinding & { page_total?: number }>(
          inIdOrderPage(store.keyed, selected.inIdOrder.from, whereClause(ordered), joined ? total?.sql : undefined),
          { ...params, ...pageParams(page) },
        )
      : [];
    const context = await withTheirContext(store, found, joined, total);
    const told = total ? (joined ? found[0]?.page_total : context.total) : undefined;
    const counted = total ? await toldTotal(store, count, page, found.length, told) : await pageTotal(store, count, page, found.length);
    const rows = context.rows.map(withContext).sort(byIdText);
    const decided = suppression.decisionsAt(
      rows.map((r) => r.id),
      t,
    );
    return { rows: await withDecisionsAt(decided, rows), pagination: pagination(page, counted) };
  }
  const params = { ...where.params, ...total?.params };
  const count: CountStatement = { sql: countSql(selected.from, whereClause(where)), params };
  const keys = pageCanHoldRows(page)
    ? await store.query<FindingKey & { page_total?: number }>(
        keysPage(store.keyed, selected.from, whereClause(where), ORDER[order], total?.sql),
        {
          ...params,
          ...pageParams(page),
        },
      )
    : [];
  const counted = total
    ? await toldTotal(store, count, page, keys.length, keys[0]?.page_total)
    : await pageTotal(store, count, page, keys.length);
  const rows = new Map((await findingsByKeys(store, keys, { t, suppression })).map((r) => [r.id, r]));
  return { rows: keys.flatMap((r) => rows.get(r.id) ?? []), pagination: pagination(page, counted) };
}

/** What locates a finding: its id and its target (the findings table's primary key). */
export interface FindingKey {
  id: string;
  target_id: string;
}

/**
 * Findings with their context, each found by its primary key (target_id, id); in id order. With
 * `at`, each with its decision active at `at.t` (SPEC §12.3): through the service's suppression
 * where there is one (nothing read while no decision exists), else read.
 */
export async function findingsByKeys(
  store: Store,
  keys: FindingKey[],
  at?: { t: number; suppression?: Suppression },
): Promise<FindingWithContext[]> {
  if (keys.length === 0) return [];
  const rows = await store.query<StoredFinding>(rowsByKeys(store.keyed), {
    ids: keys.map((k) => k.id),
    targetIds: [...new Set(keys.map((k) => k.target_id))],
  });
  const found = (await withTheirContext(store, rows, store.keyed.directJoins)).rows.map(withContext).sort(byIdText);
  if (!at) return found;
  const ids = found.map((r) => r.id);
  return withDecisionsAt(at.suppression ? at.suppression.decisionsAt(ids, at.t) : decisionsAt(store, ids, at.t), found);
}

/** Sets each finding's `decision`: the one active at the reference instant, or null. */
async function withDecisionsAt(active: Promise<Map<string, Decision>>, rows: FindingWithContext[]): Promise<FindingWithContext[]> {
  const decisions = await active;
  for (const r of rows) r.decision = decisions.get(r.id) ?? null;
  return rows;
}

/** SPEC §5.4's id order (the byte order of the lowercase text, which is how ids come back). */
const byIdText = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
