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
  stored?: StoredFinding;
}

/**
 * The stored row of a finding as far as the next version depends on it. Every other column of
 * the row derives from its family periods and score, so those two tell whether a new version
 * would differ.
 */
export interface StoredFinding {
  version: number;
  status: 'OPEN' | 'FIXED';
  severity: Severity;
  score: number;
  familyPeriods: [string, number, number][];
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

/** Whether a state would store the row already stored (the content is the state's). */
function unchanged(stored: StoredFinding, content: FindingContent): boolean {
  const a = stored.familyPeriods;
  const b = content.family_periods;
  if (stored.score !== content.score || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    if (a[i]![0] !== b[i]![0] || a[i]![1] !== b[i]![1] || a[i]![2] !== b[i]![2]) return false;
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
  if (stored && unchanged(stored, content)) return undefined;
  return {
    ...content,
    version: (stored?.version ?? 0) + 1,
    prev_status: stored?.status ?? 'NONE',
    prev_severity: stored?.severity ?? 'informational',
    updated_at: now,
  };
}
