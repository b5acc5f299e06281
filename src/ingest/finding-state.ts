import { severityOf, type Severity } from '../domain/severity.js';
import { summarise, unionPeriods, type Period } from './periods.js';

/**
 * A finding as the worker derives it: each detecting family's own periods plus the score of its
 * latest FOUND event (SPEC §3.5). Everything else stored in a findings row is computed from these.
 */

export interface FindingState {
  id: string;
  targetId: string;
  issueId: string;
  affectedResource: string;
  familyPeriods: Map<string, Period[]>;
  /** Score of the latest FOUND event. */
  score: number;
  /** What is stored now; absent for a finding this batch creates. */
  stored?: { version: number; content: FindingContent };
}

/** The columns of a findings row that derive from the state (everything but version bookkeeping). */
export interface FindingContent {
  id: string;
  target_id: string;
  issue_id: string;
  affected_resource: string;
  status: 'OPEN' | 'FIXED';
  score: number;
  severity: Severity;
  found_at: number[];
  fixed_at: number[];
  first_found_at: number;
  last_found_at: number;
  closed_exposure: number;
  ttr_sum: number;
  ttr_count: number;
  family_ids: string[];
  /** (family_id, found_at, fixed_at) per period. */
  family_periods: [string, number, number][];
}

export interface FindingRow extends FindingContent {
  version: number;
  prev_status: 'NONE' | 'OPEN' | 'FIXED';
  prev_severity: Severity;
  updated_at: number;
}

export function findingContent(state: FindingState): FindingContent {
  const families = [...state.familyPeriods.keys()].sort();
  const familyPeriods = families.flatMap((family_id) =>
    (state.familyPeriods.get(family_id) ?? []).map((p): [string, number, number] => [family_id, p.found, p.fixed]),
  );
  const periods = unionPeriods([...state.familyPeriods.values()].flat());
  const summary = summarise(periods);
  return {
    id: state.id,
    target_id: state.targetId,
    issue_id: state.issueId,
    affected_resource: state.affectedResource,
    status: summary.status,
    score: state.score,
    severity: severityOf(state.score),
    found_at: periods.map((p) => p.found),
    fixed_at: periods.map((p) => p.fixed),
    first_found_at: summary.firstFoundAt,
    last_found_at: summary.lastFoundAt,
    closed_exposure: summary.closedExposure,
    ttr_sum: summary.ttrSum,
    ttr_count: summary.ttrCount,
    family_ids: families,
    family_periods: familyPeriods,
  };
}

function sameArray<T>(a: readonly T[], b: readonly T[], same: (x: T, y: T) => boolean = (x, y) => x === y): boolean {
  return a.length === b.length && a.every((x, i) => same(x, b[i]!));
}

/** Whether two contents would store the same row (compared field by field: this runs per finding). */
export function sameContent(a: FindingContent, b: FindingContent): boolean {
  for (const k of Object.keys(a) as (keyof FindingContent)[]) {
    const x = a[k];
    const y = b[k];
    if (Array.isArray(x)) {
      if (k === 'family_periods') {
        if (!sameArray(a.family_periods, b.family_periods, (p, q) => p[0] === q[0] && p[1] === q[1] && p[2] === q[2])) return false;
      } else if (!sameArray(x as unknown[], y as unknown[])) return false;
    } else if (x !== y) return false;
  }
  return true;
}

/**
 * The row to append for a state, or undefined when nothing stored would change. Versions count
 * up per finding, so the latest version is always the one derived last (and a retried batch,
 * finding its own write already there, writes nothing again).
 */
export function nextFindingRow(state: FindingState, now: number): FindingRow | undefined {
  const content = findingContent(state);
  const stored = state.stored;
  if (stored && sameContent(stored.content, content)) return undefined;
  return {
    ...content,
    version: (stored?.version ?? 0) + 1,
    prev_status: stored?.content.status ?? 'NONE',
    prev_severity: stored?.content.severity ?? 'informational',
    updated_at: now,
  };
}
