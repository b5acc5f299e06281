import type { Severity } from '../domain/severity.js';
import { inUuids } from '../storage/bound-lists.js';
import type { Store } from '../storage/gateway.js';
import type { FindingContent } from './finding-state.js';
import type * as q from './queries.js';

/** The statements of `vulndb recompute` (src/ingest/recompute.ts). */

/** A stored findings row, its derived columns in the shape findingContent gives them. */
export interface StoredRow extends FindingContent {
  version: number;
}

/** The targets to recompute, in a stable order: the one named (none when unknown), or every target with findings. */
export async function targetsToDo(store: Store, identifier: string | undefined): Promise<string[]> {
  if (identifier !== undefined) {
    const rows = await store.query<{ id: string }>(
      'SELECT DISTINCT toString(id) AS id FROM targets WHERE identifier = {identifier:String}',
      { identifier },
    );
    return rows.map((r) => r.id);
  }
  const rows = await store.query<{ id: string }>('SELECT DISTINCT toString(target_id) AS id FROM findings ORDER BY id');
  return rows.map((r) => r.id);
}

export async function storedRows(store: Store, targets: string[]): Promise<Map<string, StoredRow>> {
  const rows = await store.query<
    Omit<StoredRow, 'closed_exposure' | 'ttr_sum'> & { closed_exposure: string | number; ttr_sum: string | number }
  >(
    `SELECT id, target_id, issue_id, affected_resource, version,
            toString(status) AS status, score, toString(severity) AS severity,
            arrayMap(t -> toUInt32(t), found_at) AS found_at, arrayMap(t -> toUInt32(t), fixed_at) AS fixed_at,
            toUInt32(first_found_at) AS first_found_at, toUInt32(last_found_at) AS last_found_at,
            closed_exposure, ttr_sum, ttr_count, arrayMap(f -> toString(f), family_ids) AS family_ids,
            arrayMap(p -> (toString(p.1), toUInt32(p.2), toUInt32(p.3)), family_periods) AS family_periods
     FROM findings FINAL
     WHERE ${inUuids('target_id', 'targets', targets)}`,
    { targets },
  );
  return new Map(
    rows.map((r) => [
      r.id,
      { ...r, closed_exposure: Number(r.closed_exposure), ttr_sum: Number(r.ttr_sum), status: r.status, severity: r.severity as Severity },
    ]),
  );
}

/** Every committed source of the targets, whatever its family. */
export async function targetSources(store: Store, targets: string[]): Promise<q.StoredSource[]> {
  const rows = await store.query<{ id: string; t: string; f: string; epoch: number }>(
    `SELECT DISTINCT id, target_id AS t, family_id AS f, toUInt32(time) AS epoch
     FROM sources
     WHERE ${inUuids('target_id', 'targets', targets)}`,
    { targets },
  );
  return rows.map((r) => ({ id: r.id, targetId: r.t, familyId: r.f, time: r.epoch }));
}

/** The latest event each finding's page shows, as stored (finding_latest_events, sql/0012). */
export async function shownLatest(
  store: Store,
  findingIds: string[],
): Promise<Map<string, { time: number; checkId: string; pos: number }>> {
  const rows = await store.query<{ f: string; t: number; c: string; p: number }>(
    `SELECT finding_id AS f, toUInt32(time) AS t, check_id AS c, pos AS p
     FROM ${store.keyed.latest('finding_latest_events')}
     WHERE ${inUuids('finding_id', 'ids', findingIds)}`,
    { ids: findingIds },
  );
  return new Map(rows.map((r) => [r.f, { time: r.t, checkId: r.c, pos: r.p }]));
}

/** Copies each finding's latest FOUND event into finding_latest_events (as migration 0012 does). */
export async function rewriteLatest(store: Store, findingIds: string[]): Promise<void> {
  await store.command(
    `INSERT INTO finding_latest_events
     SELECT finding_id, e.1, e.2, e.3, e.4, e.5, e.6, e.7, e.8, e.9, e.10, e.11
     FROM
     (
         SELECT finding_id,
                argMax((time, check_id, pos, source_id, toString(source_name), toString(component), toString(options), details,
                        impact_details, resources, affected_resource_string), (time, check_id, pos)) AS e
         FROM finding_events
         WHERE ${inUuids('finding_id', 'ids', findingIds)}
         GROUP BY finding_id
     )`,
    { ids: findingIds },
  );
}
