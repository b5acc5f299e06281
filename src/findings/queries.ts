import type { Paging } from '../filters/params.js';
import { merge, whereClause, type Sql } from '../filters/sql.js';
import type { Store } from '../storage/gateway.js';
import { byId, PAGE_LIMIT, type PageOf, readPage } from '../storage/paged.js';
import { baseConditions, type FindingKey } from './page.js';

/**
 * Reads of findings besides the findings page (page.ts): keys of single findings, the finding of
 * an issue on a target, a finding's events, MTTR.
 */

/** Keys of findings known only by id (single-finding endpoints). */
export async function findingKeys(store: Store, ids: string[]): Promise<FindingKey[]> {
  if (ids.length === 0) return [];
  return store.query<FindingKey>('SELECT DISTINCT id, target_id FROM findings WHERE id IN {ids:Array(UUID)}', { ids });
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

/** A FOUND event as its list reads it, its time in epoch seconds. */
export interface FindingEventRow {
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
): Promise<PageOf<FindingEventRow>> {
  const where = merge({ where: ['finding_id = {finding:UUID}'], params: { finding: findingId } }, visible);
  return readPage<FindingEventRow>(
    store,
    {
      page: `SELECT id, finding_id, source_id, score, details, resources, toUInt32(time) AS epoch
             FROM finding_events
             ${whereClause(where)}
             ORDER BY time DESC, ${byId()}
             ${PAGE_LIMIT}`,
      count: `SELECT count() AS n FROM finding_events ${whereClause(where)}`,
    },
    where.params,
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

/** A finding's OPEN periods, oldest first, as epoch seconds (`fixed` = NEVER while open); none when not `visible`. */
export async function findingPeriods(
  store: Store,
  findingId: string,
  visible: Sql,
): Promise<{ found: number; fixed: number }[] | undefined> {
  const where = merge({ where: ['id = {finding:UUID}'], params: { finding: findingId } }, visible);
  const [row] = await store.query<{ found: number[]; fixed: number[] }>(
    `SELECT arrayMap(t -> toUInt32(t), found_at) AS found, arrayMap(t -> toUInt32(t), fixed_at) AS fixed
     FROM findings FINAL
     ${whereClause(where)}`,
    where.params,
  );
  return row?.found.map((found, i) => ({ found, fixed: row.fixed[i]! }));
}
