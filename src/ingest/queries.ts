import { inUuids } from '../storage/bound-lists.js';
import type { Store } from '../storage/gateway.js';
import { TimeSlices } from '../time-slices.js';
import type { Interned } from './interned.js';
import type { Severity } from '../domain/severity.js';
import type { FindingState } from './finding-state.js';
import type { DetectionRank } from './normalize.js';
import type { FamilySource, Period } from './periods.js';

/**
 * The ingestion's reads and writes. Each read serves a whole batch in one query; rows come back
 * with instants as epoch seconds (toUInt32) so no time zone is ever involved.
 */

export const pairKey = (targetId: string, familyId: string) => `${targetId}/${familyId}`;

export async function existingSourceIds(store: Store, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await store.query<{ id: string }>(`SELECT DISTINCT id FROM sources WHERE ${inUuids('id', 'ids', ids)}`, { ids });
  return new Set(rows.map((r) => r.id));
}

export async function existingTargetIds(store: Store, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await store.query<{ id: string }>(`SELECT DISTINCT id FROM targets WHERE ${inUuids('id', 'ids', ids)}`, { ids });
  return new Set(rows.map((r) => r.id));
}

/** An issue's winning claims as stored (SPEC §2.2): the earliest details, the latest labels. */
export interface IssueWinners {
  detail: DetectionRank;
  details: { cweId: number; recommendations: string[]; referenceLinks: string[] };
  /** Absent while no detection had labels. */
  labelsRank: DetectionRank | undefined;
  labels: string[];
}

/** The winning claims of each known issue, with what they say. */
export async function issueWinners(store: Store, ids: string[]): Promise<Map<string, IssueWinners>> {
  if (ids.length === 0) return new Map();
  const rows = await store.query<{
    id: string;
    dt: number;
    dc: string;
    dp: number;
    lt: number;
    lc: string;
    lp: number;
    cwe: number;
    recs: string[];
    refs: string[];
    lbl: string[];
  }>(
    `SELECT issue AS id, toUInt32(d.1) AS dt, d.2 AS dc, d.3 AS dp, toUInt32(l.1) AS lt, l.2 AS lc, l.3 AS lp,
            w.1 AS cwe, w.2 AS recs, w.3 AS refs, wl AS lbl
     FROM
     (
         SELECT id AS issue, min(detail_key) AS d, max(labels_key) AS l, argMinMerge(details) AS w, argMaxMerge(labels) AS wl
         FROM issues
         WHERE ${inUuids('id', 'ids', ids)}
         GROUP BY id
     )`,
    { ids },
  );
  return new Map(
    rows.map((r) => [
      r.id,
      {
        detail: { time: r.dt, checkId: r.dc, pos: r.dp },
        details: { cweId: r.cwe, recommendations: r.recs, referenceLinks: r.refs },
        // A key of (0, '', 0) is the "no labels" claim.
        labelsRank: r.lt > 0 || r.lc !== '' ? { time: r.lt, checkId: r.lc, pos: r.lp } : undefined,
        labels: r.lbl,
      },
    ]),
  );
}

/** Latest committed source time of each (target, family) pair, keyed by pairKey. */
export async function familyHeads(store: Store, targets: string[], families: string[]): Promise<Map<string, number>> {
  if (targets.length === 0) return new Map();
  const rows = await store.query<{ t: string; f: string; head: number }>(
    `SELECT target_id AS t, family_id AS f, toUInt32(max(last_time)) AS head
     FROM family_heads
     WHERE ${inUuids('target_id', 'targets', targets)} AND family_id IN {families:Array(UUID)}
     GROUP BY target_id, family_id`,
    { targets, families },
  );
  return new Map(rows.map((r) => [pairKey(r.t, r.f), r.head]));
}

/** A stored finding's state as loadFindings reads it (TabSeparated fields, in this order). */
const STATE_FIELDS = `id, target_id, issue_id, affected_resource, version, status, severity, score,
            arrayStringConcat(arrayMap(p -> concat(toString(p.1), ',', toString(toUInt32(p.2)), ',', toString(toUInt32(p.3))), family_periods), ';')`;

function stateFromFields(f: string[], shared: Interned): FindingState {
  const [id, targetId, issueId, affectedResource, version, status, severity, score, periods] = f as [
    string,
    string,
    string,
    string,
    string,
    'OPEN' | 'FIXED',
    Severity,
    string,
    string,
  ];
  const familyPeriods = new Map<string, Period[]>();
  const fp: [string, number, number][] = [];
  if (periods !== '') {
    for (const period of periods.split(';')) {
      const [familyText, found, fixed] = period.split(',') as [string, string, string];
      const family = shared.text(familyText);
      const p = { found: Number(found), fixed: Number(fixed) };
      fp.push([family, p.found, p.fixed]);
      const list = familyPeriods.get(family);
      if (list) list.push(p);
      else familyPeriods.set(family, [p]);
    }
  }
  return {
    id,
    targetId: shared.text(targetId),
    issueId: shared.text(issueId),
    affectedResource: shared.text(affectedResource),
    familyPeriods,
    score: Number(score),
    stored: { version: Number(version), status, severity, score: Number(score), familyPeriods: fp },
  };
}

/**
 * The current state of the findings a batch can change on its targets: the ones it reports
 * (ids), the OPEN ones of families extended at their end (openFamilies), and every one of the
 * families whose history is rebuilt (anyFamilies). Callers narrow the result per target. Read as
 * TabSeparated fields: a batch of 8,000 reports loads some 80,000 findings.
 */
export async function loadFindings(
  store: Store,
  q: { targets: string[]; ids: string[]; openFamilies: string[]; anyFamilies: string[] },
  shared: Interned,
): Promise<Map<string, FindingState>> {
  if (q.targets.length === 0) return new Map();
  const rows = await store.queryFields(
    `SELECT ${STATE_FIELDS}
     FROM findings FINAL
     WHERE ${inUuids('target_id', 'targets', q.targets)}
       AND (${inUuids('id', 'ids', q.ids)}
            OR (status = 'OPEN' AND hasAny(family_ids, {openFamilies:Array(UUID)}))
            OR hasAny(family_ids, {anyFamilies:Array(UUID)}))`,
    q,
  );
  const states = new Map<string, FindingState>();
  const slices = new TimeSlices();
  for (const f of rows) {
    states.set(f[0]!, stateFromFields(f, shared));
    if (slices.due) await slices.turn();
  }
  return states;
}

export interface StoredSource extends FamilySource {
  targetId: string;
  familyId: string;
}

/** Every committed source of the given families on the given targets (for history rebuilds). */
export async function familySources(store: Store, targets: string[], families: string[]): Promise<StoredSource[]> {
  if (targets.length === 0) return [];
  const rows = await store.query<{ id: string; t: string; f: string; epoch: number }>(
    `SELECT DISTINCT id, target_id AS t, family_id AS f, toUInt32(time) AS epoch
     FROM sources
     WHERE ${inUuids('target_id', 'targets', targets)} AND family_id IN {families:Array(UUID)}`,
    { targets, families },
  );
  return rows.map((r) => ({ id: r.id, targetId: r.t, familyId: r.f, time: r.epoch }));
}

/** (finding, source) pairs of the FOUND events of the given findings from the given families. */
export async function familyEvents(
  store: Store,
  findingIds: string[],
  families: string[],
): Promise<{ findingId: string; sourceId: string }[]> {
  if (findingIds.length === 0) return [];
  const rows = await store.query<{ f: string; s: string }>(
    `SELECT DISTINCT finding_id AS f, source_id AS s
     FROM finding_events
     WHERE ${inUuids('finding_id', 'findingIds', findingIds)} AND family_id IN {families:Array(UUID)}`,
    { findingIds, families },
  );
  return rows.map((r) => ({ findingId: r.f, sourceId: r.s }));
}

/** Rank and score of each finding's latest stored FOUND event (SPEC §3.5.6). */
export async function latestEvents(store: Store, findingIds: string[]): Promise<Map<string, { rank: DetectionRank; score: number }>> {
  if (findingIds.length === 0) return new Map();
  const rows = await store.query<{ finding: string; t: number; c: string; p: number; score: number }>(
    `SELECT finding, toUInt32(latest.1) AS t, latest.2 AS c, latest.3 AS p, score
     FROM
     (
         SELECT finding_id AS finding, max((time, check_id, pos)) AS latest, argMax(score, (time, check_id, pos)) AS score
         FROM finding_events
         WHERE ${inUuids('finding_id', 'findingIds', findingIds)}
         GROUP BY finding_id
     )`,
    { findingIds },
  );
  return new Map(rows.map((r) => [r.finding, { rank: { time: r.t, checkId: r.c, pos: r.p }, score: r.score }]));
}

/** A report's first detection, whose event is the first of the report's events any attempt writes. */
export interface EventProbe {
  findingId: string;
  sourceId: string;
  /** The report's time: every event of a report has it. */
  time: number;
}

/**
 * The sources among the probes' that have a stored FOUND event: reports whose events an earlier
 * attempt wrote, wholly or in part (their events are then checked one by one, existingEventIds).
 * One event per report instead of all of them: a key lookup of (finding, time) per report, where
 * a new report's time is usually past every stored event of its finding, so the primary key
 * rules out most granules. Any match names a source with a stored event, whichever probe's
 * finding it matched.
 */
export async function sourcesWithEvents(store: Store, probes: EventProbe[]): Promise<Set<string>> {
  if (probes.length === 0) return new Set();
  const findings = [...new Set(probes.map((p) => p.findingId))];
  const sources = probes.map((p) => p.sourceId);
  const rows = await store.query<{ source_id: string }>(
    `SELECT DISTINCT source_id FROM finding_events
     WHERE ${inUuids('finding_id', 'findings', findings)} AND time IN {times:Array(DateTime('UTC'))}
       AND ${inUuids('source_id', 'sources', sources)}`,
    { findings, times: [...new Set(probes.map((p) => p.time))], sources },
  );
  return new Set(rows.map((r) => r.source_id));
}

/** Event ids already stored (asked for the reports whose events an earlier attempt began to write). */
export async function existingEventIds(store: Store, findingIds: string[], eventIds: string[]): Promise<Set<string>> {
  if (eventIds.length === 0) return new Set();
  const rows = await store.query<{ id: string }>(
    `SELECT DISTINCT id FROM finding_events
     WHERE ${inUuids('finding_id', 'findingIds', findingIds)} AND ${inUuids('id', 'eventIds', eventIds)}`,
    { findingIds, eventIds },
  );
  return new Set(rows.map((r) => r.id));
}
