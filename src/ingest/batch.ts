import { nowSeconds } from '../domain/time.js';
import type { Store } from '../storage/gateway.js';
import { nextFindingRow, type FindingRow, type FindingState } from './finding-state.js';
import { extendPair, groupBy, groupPairs, pairReports, rebuildPair, type Pair } from './derive.js';
import { Interned } from './interned.js';
import { compareRank, type DetectionRank, type NormalizedReport } from './normalize.js';
import type { FamilySource } from './periods.js';
import * as q from './queries.js';
import { type BatchCounts, type WriteStep, writeBatch } from './batch-writes.js';
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
 * The writes (src/ingest/batch-writes.ts) end with the sources, which mark the reports as
 * ingested: a crash before leaves them to a retry (recovery mode), which rebuilds every pair from
 * history and skips what was written.
 *
 * The derivation's loops give the event loop a turn every few milliseconds (src/time-slices.ts):
 * other batches in flight, and API requests in a single-process service, hand their statements to
 * the engine meanwhile instead of waiting for the whole batch's derivation.
 */

export interface BatchOptions {
  /** Some report of the batch may have been half applied by an earlier attempt. */
  recovery?: boolean;
  now?: number;
  /** Test hook: simulate a crash right after this step's write. */
  crashAfter?: WriteStep;
  /** The texts the process shares (the batcher's), which loaded findings take theirs from; none: their own. */
  interned?: Interned;
}

export type ReportOutcome = 'ingested' | 'duplicate';

export interface BatchResult {
  outcomes: ReportOutcome[];
  counts: BatchCounts;
  /** The finding versions whose status differs from the one they replace (the notifications' status events). */
  statusChanged: FindingRow[];
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

/** §3.6: a report whose duplicate key is already stored (or earlier in this batch) is ignored. */
async function dropDuplicates(
  store: Store,
  reports: NormalizedReport[],
): Promise<{ outcomes: ReportOutcome[]; fresh: NormalizedReport[] }> {
  const known = await q.existingSourceIds(store, unique(reports.map((r) => r.sourceId)));
  const seen = new Set<string>();
  const fresh: NormalizedReport[] = [];
  const outcomes: ReportOutcome[] = reports.map((r) => {
    if (known.has(r.sourceId) || seen.has(r.sourceId)) return 'duplicate';
    seen.add(r.sourceId);
    fresh.push(r);
    return 'ingested';
  });
  return { outcomes, fresh };
}

/** The batch's (target, family) pairs and the stored findings they can change. */
async function loadState(store: Store, fresh: NormalizedReport[], targets: string[], recovery: boolean, shared: Interned) {
  const families = unique(fresh.map((r) => r.familyId));
  const pairs = groupPairs(fresh, await q.familyHeads(store, targets, families), recovery);
  const states = await q.loadFindings(
    store,
    {
      targets,
      ids: unique(fresh.flatMap((r) => r.detections.map((d) => d.findingId))),
      openFamilies: unique(pairs.filter((p) => p.fast).map((p) => p.familyId)),
      anyFamilies: unique(pairs.filter((p) => !p.fast).map((p) => p.familyId)),
    },
    shared,
  );
  return { pairs, states };
}

/** Adds the findings first detected here to `states`; returns the latest FOUND event of each finding detected. */
async function detectedFindings(
  fresh: NormalizedReport[],
  states: Map<string, FindingState>,
  slices: TimeSlices,
): Promise<Map<string, { rank: DetectionRank; score: number }>> {
  const newest = new Map<string, { rank: DetectionRank; score: number }>();
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
  return newest;
}

/**
 * Derives each pair's periods: extended at their end (fast pairs) or rebuilt from the family's
 * full history, its sources and who reported what (slow pairs).
 */
async function derivePeriods(store: Store, pairs: Pair[], states: Map<string, FindingState>, slices: TimeSlices): Promise<void> {
  const byTarget = groupBy(states.values(), (s) => s.targetId);
  const candidates = (p: Pair) => (byTarget.get(p.targetId) ?? []).filter((s) => s.familyPeriods.has(p.familyId) || pairReports(p, s.id));
  const slow = pairs.filter((p) => !p.fast);
  let storedSources = new Map<string, FamilySource[]>();
  const storedReporters = new Map<string, Set<string>>();
  if (slow.length > 0) {
    const slowFamilies = unique(slow.map((p) => p.familyId));
    const sources = await q.familySources(store, unique(slow.map((p) => p.targetId)), slowFamilies);
    storedSources = groupBy(sources, (s) => q.pairKey(s.targetId, s.familyId));
    const candidateIds = unique(slow.flatMap((p) => candidates(p).map((s) => s.id)));
    for (const e of await q.familyEvents(store, candidateIds, slowFamilies)) {
      storedReporters.set(e.findingId, (storedReporters.get(e.findingId) ?? new Set()).add(e.sourceId));
    }
  }
  for (const pair of pairs) {
    if (slices.due) await slices.turn();
    if (pair.fast) extendPair(pair, candidates(pair));
    else rebuildPair(pair, candidates(pair), storedSources.get(q.pairKey(pair.targetId, pair.familyId)) ?? [], storedReporters);
  }
}

export async function ingestBatch(store: Store, reports: NormalizedReport[], opts: BatchOptions = {}): Promise<BatchResult> {
  const now = opts.now ?? nowSeconds();
  const recovery = opts.recovery ?? false;
  const { outcomes, fresh } = await dropDuplicates(store, reports);
  const counts: BatchCounts = {
    reports: fresh.length,
    events: 0,
    findingVersions: 0,
    statusChanges: 0,
    targets: 0,
    issues: 0,
    issuesChanged: 0,
  };
  if (fresh.length === 0) return { outcomes, counts, statusChanged: [] };

  const targets = unique(fresh.map((r) => r.targetId));
  const { pairs, states } = await loadState(store, fresh, targets, recovery, opts.interned ?? new Interned());
  const slices = new TimeSlices();
  const newest = await detectedFindings(fresh, states, slices);
  await derivePeriods(store, pairs, states, slices);
  const latestWon = await applyLatestEvents(store, states, newest, pairs, slices);
  const becameLatest = (findingId: string, rank: DetectionRank) =>
    latestWon.has(findingId) && compareRank(newest.get(findingId)!.rank, rank) === 0;

  const findingRows: FindingRow[] = [];
  for (const s of states.values()) {
    if (slices.due) await slices.turn();
    const row = nextFindingRow(s, now);
    if (row) findingRows.push(row);
  }
  await writeBatch(store, { fresh, targets, findingRows, becameLatest, recovery, now, crashAfter: opts.crashAfter }, counts);
  return { outcomes, counts, statusChanged: findingRows.filter((r) => r.status !== r.prev_status) };
}
