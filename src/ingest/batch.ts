import { nowSeconds } from '../domain/time.js';
import type { Store } from '../storage/gateway.js';
import { nextFindingRow, type FindingRow, type FindingState } from './finding-state.js';
import { extendPair, groupBy, groupPairs, rebuildPair, reportsFinding, type Pair } from './derive.js';
import { compareRank, type DetectionRank, type NormalizedReport } from './normalize.js';
import type { FamilySource } from './periods.js';
import { bestClaims, detectionRows, eventRows, issueObjectRows, issueRows, latestEventRow } from './rows.js';
import * as q from './queries.js';
import { reconcileDerived } from './reconcile.js';
import { teamsOf } from '../teams/associations.js';
import { TimeSlices } from '../time-slices.js';

/**
 * Applies a batch of validated FINISHED reports (SPEC §3.4–§3.6): drops duplicates, loads the
 * state the batch can change in a few queries, derives the new finding states in memory and
 * writes each table once.
 *
 * A (target, family) pair whose new reports all come after its latest committed source extends
 * each finding's family periods at their end ("fast path"); any other pair — an out-of-order
 * report, equal times, or a batch retrying half-written work — rebuilds that family's periods
 * from its full stored history. Both give the same result (test/ingest-order.property.test.ts).
 *
 * Writes go targets → issues → events → findings → sources. A source row marks its report as
 * ingested, so a crash before the last write leaves the report to be processed again; the retry
 * (recovery mode) rebuilds every pair from history and skips events already written. Each step
 * also writes what pages show of its entities (sql/0012): target and issue objects after the rows
 * they derive from, and the latest FOUND events within the events insert; a retry rewrites them
 * all for the batch's targets, issues and findings.
 *
 * The derivation's loops give the event loop a turn every few milliseconds (src/time-slices.ts):
 * other batches in flight, and API requests in a single-process service, hand their statements to
 * the engine meanwhile instead of waiting for the whole batch's derivation.
 */

export type WriteStep = 'targets' | 'issues' | 'events' | 'findings' | 'sources';

export interface BatchOptions {
  /** Some report of the batch may have been half applied by an earlier attempt. */
  recovery?: boolean;
  now?: number;
  /** Test hook: simulate a crash right after this step's write. */
  crashAfter?: WriteStep;
}

export type ReportOutcome = 'ingested' | 'duplicate';

export interface BatchResult {
  outcomes: ReportOutcome[];
  counts: {
    reports: number;
    events: number;
    findingVersions: number;
    /** Finding versions whose status differs from the one they replace (new findings included). */
    statusChanges: number;
    targets: number;
    issues: number;
  };
  /** The finding versions whose status differs from the one they replace (the notifications' status events). */
  statusChanged: FindingRow[];
}

export class SimulatedCrash extends Error {
  constructor(step: WriteStep) {
    super(`simulated crash after writing ${step}`);
    this.name = 'SimulatedCrash';
  }
}

const unique = <T>(xs: Iterable<T>) => [...new Set(xs)];

/**
 * §3.5.6: a finding's latest FOUND event gives its score and what its page shows. When every
 * family that ever detected a finding is extended at its end by this batch and the finding's
 * newest event here is later than each of those families' latest stored source, it is later than
 * all stored events; otherwise (out-of-order reports, families left as they are, recovery, an
 * event no later than another family's stored one) the stored latest event is read and compared.
 * Sets each state's score and returns the findings whose latest event is now the batch's newest.
 */
async function applyLatestEvents(
  store: Store,
  states: Map<string, FindingState>,
  newest: Map<string, { rank: DetectionRank; score: number }>,
  pairs: Pair[],
  slices: TimeSlices,
): Promise<Set<string>> {
  // Per target, the head of each family extended at its end (-1: no stored source yet).
  const fast = new Map<string, Map<string, number>>();
  for (const p of pairs) {
    if (!p.fast) continue;
    let heads = fast.get(p.targetId);
    if (!heads) fast.set(p.targetId, (heads = new Map()));
    heads.set(p.familyId, p.head ?? -1);
  }
  const won = new Set<string>();
  const exact: string[] = [];
  for (const [id, latest] of newest) {
    if (slices.due) await slices.turn();
    const s = states.get(id)!;
    const heads = fast.get(s.targetId);
    // Equal times are ordered by check id and position, which stored events may win.
    const later = (family: string) => latest.rank.time > (heads?.get(family) ?? Infinity);
    let provable = true;
    for (const period of s.stored?.familyPeriods ?? []) if (provable && !later(period[0])) provable = false;
    for (const family of s.familyPeriods.keys()) if (provable && !later(family)) provable = false;
    if (provable) {
      s.score = latest.score;
      won.add(id);
    } else exact.push(id);
  }
  if (exact.length === 0) return won;
  const stored = await q.latestEvents(store, exact);
  for (const id of exact) {
    const mine = newest.get(id)!;
    const theirs = stored.get(id);
    if (theirs && compareRank(theirs.rank, mine.rank) > 0) {
      states.get(id)!.score = theirs.score;
    } else {
      states.get(id)!.score = mine.score;
      won.add(id);
    }
  }
  return won;
}

export async function ingestBatch(store: Store, reports: NormalizedReport[], opts: BatchOptions = {}): Promise<BatchResult> {
  const now = opts.now ?? nowSeconds();
  const recovery = opts.recovery ?? false;

  // §3.6: a report whose duplicate key is already stored (or earlier in this batch) is ignored.
  const known = await q.existingSourceIds(store, unique(reports.map((r) => r.sourceId)));
  const seen = new Set<string>();
  const fresh: NormalizedReport[] = [];
  const outcomes: ReportOutcome[] = reports.map((r) => {
    if (known.has(r.sourceId) || seen.has(r.sourceId)) return 'duplicate';
    seen.add(r.sourceId);
    fresh.push(r);
    return 'ingested';
  });
  const counts = { reports: fresh.length, events: 0, findingVersions: 0, statusChanges: 0, targets: 0, issues: 0 };
  if (fresh.length === 0) return { outcomes, counts, statusChanged: [] };

  const targets = unique(fresh.map((r) => r.targetId));
  const families = unique(fresh.map((r) => r.familyId));
  const pairs = groupPairs(fresh, await q.familyHeads(store, targets, families), recovery);
  const slow = pairs.filter((p) => !p.fast);

  const states = await q.loadFindings(store, {
    targets,
    ids: unique(fresh.flatMap((r) => r.detections.map((d) => d.findingId))),
    openFamilies: unique(pairs.filter((p) => p.fast).map((p) => p.familyId)),
    anyFamilies: unique(slow.map((p) => p.familyId)),
  });

  // New findings, and the latest FOUND event of each finding this batch detects.
  const newest = new Map<string, { rank: DetectionRank; score: number }>();
  const slices = new TimeSlices();
  for (const r of fresh) {
    if (slices.due) await slices.turn();
    for (const d of r.detections) {
      if (!states.has(d.findingId)) {
        states.set(d.findingId, {
          id: d.findingId,
          targetId: r.targetId,
          issueId: d.issueId,
          affectedResource: d.affectedResource,
          familyPeriods: new Map(),
          score: d.score,
        });
      }
      const rank = { time: r.time, checkId: r.instance, pos: d.pos };
      const known = newest.get(d.findingId);
      if (!known || compareRank(rank, known.rank) > 0) newest.set(d.findingId, { rank, score: d.score });
    }
  }

  const byTarget = groupBy(states.values(), (s) => s.targetId);
  const onTarget = (p: Pair, keep: (s: FindingState) => boolean) =>
    (byTarget.get(p.targetId) ?? []).filter((s) => keep(s) || p.reports.some((r) => reportsFinding(r, s.id)));

  // Slow pairs need the family's full history: its sources and who reported what.
  let storedSources = new Map<string, FamilySource[]>();
  const storedReporters = new Map<string, Set<string>>();
  if (slow.length > 0) {
    const slowTargets = unique(slow.map((p) => p.targetId));
    const slowFamilies = unique(slow.map((p) => p.familyId));
    const sources = await q.familySources(store, slowTargets, slowFamilies);
    storedSources = groupBy(sources, (s) => q.pairKey(s.targetId, s.familyId));
    const candidateIds = unique(slow.flatMap((p) => onTarget(p, (s) => s.familyPeriods.has(p.familyId)).map((s) => s.id)));
    for (const e of await q.familyEvents(store, candidateIds, slowFamilies)) {
      storedReporters.set(e.findingId, (storedReporters.get(e.findingId) ?? new Set()).add(e.sourceId));
    }
  }

  for (const pair of pairs) {
    if (slices.due) await slices.turn();
    if (pair.fast) {
      extendPair(
        pair,
        onTarget(pair, (s) => s.familyPeriods.has(pair.familyId)),
      );
    } else {
      const candidates = onTarget(pair, (s) => s.familyPeriods.has(pair.familyId));
      rebuildPair(pair, candidates, storedSources.get(q.pairKey(pair.targetId, pair.familyId)) ?? [], storedReporters);
    }
  }

  const latestWon = await applyLatestEvents(store, states, newest, pairs, slices);
  const becameLatest = (findingId: string, rank: DetectionRank) =>
    latestWon.has(findingId) && compareRank(newest.get(findingId)!.rank, rank) === 0;

  const findingRows: FindingRow[] = [];
  const statusChanged: FindingRow[] = [];
  for (const s of states.values()) {
    if (slices.due) await slices.turn();
    const row = nextFindingRow(s, now);
    if (row) findingRows.push(row);
  }

  // Writes, in commit order.
  const step = async (name: WriteStep, write: () => Promise<void>) => {
    await write();
    if (opts.crashAfter === name) throw new SimulatedCrash(name);
  };
  await step('targets', async () => {
    const existing = await q.existingTargetIds(store, targets);
    const identifiers = new Map(fresh.map((r) => [r.targetId, r.identifier]));
    const created = [...identifiers].filter(([id]) => !existing.has(id));
    counts.targets = created.length;
    await store.insert(
      'targets',
      created.map(([id, identifier]) => ({ id, identifier, created_at: now })),
    );
    // A target's object has its teams: none for a target created here, unless associated before it
    // was (team associations can precede a target's first report).
    const described = recovery ? [...identifiers] : created;
    if (described.length > 0) {
      const teams = await teamsOf(
        store,
        described.map(([id]) => id),
      );
      await store.insert(
        'target_objects',
        described.map(([id, identifier]) => ({ id, identifier, teams: teams.get(id) ?? [] })),
      );
    }
  });
  await step('issues', async () => {
    const best = bestClaims(fresh);
    const stored = await q.issueWinners(store, [...best.keys()]);
    const rows = issueRows(best, stored);
    counts.issues = rows.length;
    await store.insert('issue_claims', rows);
    await store.insert('issue_objects', issueObjectRows(best, stored, recovery));
  });
  await step('events', async () => {
    let keep: ((findingId: string, sourceId: string) => boolean) | undefined;
    if (recovery) {
      const all = eventRows(fresh, becameLatest);
      const existing = await q.existingEventIds(
        store,
        unique(all.map((e) => e.finding_id)),
        all.map((e) => e.id),
      );
      const written = all.filter((e) => existing.has(e.id));
      // By the ids hashed above rather than hashing each detection's again.
      const writtenKeys = new Set(written.map((e) => `${e.finding_id}/${e.source_id}`));
      keep = (findingId, sourceId) => !writtenKeys.has(`${findingId}/${sourceId}`);
      // A latest event written by the earlier attempt may not have reached finding_latest_events.
      await store.insert('finding_latest_events', written.filter((e) => e.became_latest === 1).map(latestEventRow));
    }
    const rows = detectionRows(fresh, becameLatest, keep);
    counts.events = rows.reduce((n, r) => n + r.finding_ids.length, 0);
    await store.insert('report_detections', rows);
  });
  await step('findings', async () => {
    counts.findingVersions = findingRows.length;
    for (const r of findingRows) if (r.status !== r.prev_status) statusChanged.push(r);
    counts.statusChanges = statusChanged.length;
    await store.insert('findings', findingRows);
    // A retry may follow a process killed between this insert and its views' pushes.
    if (recovery) await reconcileDerived(store, targets);
  });
  await step('sources', async () => {
    await store.insert(
      'sources',
      fresh.map((r) => ({
        id: r.sourceId,
        family_id: r.familyId,
        target_id: r.targetId,
        name: r.name,
        component: r.component,
        instance: r.instance,
        options: r.options,
        time: r.time,
      })),
    );
  });
  return { outcomes, counts, statusChanged };
}
