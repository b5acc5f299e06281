import type { FindingState } from './finding-state.js';
import type { NormalizedReport } from './normalize.js';
import { extendFamily, isOpen, walkFamily, type FamilySource, type Period } from './periods.js';
import { pairKey } from './queries.js';

/**
 * SPEC §3.5 for a batch: the batch's reports grouped by (target, family), and each pair applied to
 * the findings it can change — extended at the end of the family's history when every new report
 * is later than the family's latest stored source, rebuilt from the full history otherwise.
 */

export interface Pair {
  targetId: string;
  familyId: string;
  reports: NormalizedReport[];
  /** The ids of the findings each report detects, in the order of `reports`. */
  reported: ReadonlySet<string>[];
  fast: boolean;
  /** Time of the family's latest committed source on the target, if any. */
  head?: number;
}

export function groupPairs(reports: NormalizedReport[], heads: Map<string, number>, recovery: boolean): Pair[] {
  const pairs = new Map<string, Pair>();
  for (const r of reports) {
    const key = pairKey(r.targetId, r.familyId);
    const pair = pairs.get(key) ?? { targetId: r.targetId, familyId: r.familyId, reports: [], reported: [], fast: false };
    pair.reports.push(r);
    pairs.set(key, pair);
  }
  for (const [key, pair] of pairs) {
    pair.reports.sort((a, b) => a.time - b.time);
    pair.reported = pair.reports.map((r) => new Set(r.detections.map((d) => d.findingId)));
    const head = heads.get(key);
    if (head !== undefined) pair.head = head;
    const strictlyLater = pair.reports.every((r, i) => i === 0 || r.time > pair.reports[i - 1]!.time);
    pair.fast = !recovery && strictlyLater && (head === undefined || pair.reports[0]!.time > head);
  }
  return [...pairs.values()];
}

function setFamily(state: FindingState, familyId: string, periods: Period[]): void {
  if (periods.length > 0) state.familyPeriods.set(familyId, periods);
  else state.familyPeriods.delete(familyId);
}

/** Whether some report of the pair detects the finding. */
export const pairReports = (pair: Pair, findingId: string): boolean => pair.reported.some((ids) => ids.has(findingId));

export function groupBy<T>(items: Iterable<T>, key: (item: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = out.get(k);
    if (list) list.push(item);
    else out.set(k, [item]);
  }
  return out;
}

/** Extends the pair's family periods at their end, one new source at a time. */
export function extendPair(pair: Pair, candidates: FindingState[]): void {
  for (const state of candidates) {
    const current = state.familyPeriods.get(pair.familyId) ?? [];
    const last = current[current.length - 1];
    if (!pairReports(pair, state.id) && !(last && isOpen(last))) continue; // closed and not reported: nothing changes
    let periods = current;
    pair.reports.forEach((r, i) => {
      periods = extendFamily(periods, r.time, pair.reported[i]!.has(state.id));
    });
    setFamily(state, pair.familyId, periods);
  }
}

/** Rebuilds the pair's family periods from every source of the family on the target. */
export function rebuildPair(
  pair: Pair,
  candidates: FindingState[],
  storedSources: FamilySource[],
  storedReporters: Map<string, Set<string>>,
): void {
  const sources = [...storedSources, ...pair.reports.map((r) => ({ id: r.sourceId, time: r.time }))];
  for (const state of candidates) {
    const reporters = new Set(storedReporters.get(state.id) ?? []);
    pair.reports.forEach((r, i) => {
      if (pair.reported[i]!.has(state.id)) reporters.add(r.sourceId);
    });
    setFamily(state, pair.familyId, walkFamily(sources, reporters));
  }
}
