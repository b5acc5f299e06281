import { severityOf, type Severity } from '../domain/severity.js';
import type { Detection, DetectionRank, NormalizedReport } from './normalize.js';
import { summarise, unionPeriods, type Period } from './periods.js';

/**
 * A finding as the worker derives it: each detecting family's own periods plus the attributes
 * of its latest FOUND event (SPEC §3.5). Everything else stored in a findings row is computed
 * from these in toFindingRow.
 */

export interface LatestEvent extends DetectionRank {
  score: number;
  details: string;
  impactDetails: string;
  resources: string;
  fingerprint: string;
  affectedResourceString: string;
  sourceId: string;
  sourceName: string;
  sourceComponent: string;
  sourceInstance: string;
  sourceOptions: string;
}

export interface FindingState {
  id: string;
  targetId: string;
  issueId: string;
  affectedResource: string;
  familyPeriods: Map<string, Period[]>;
  latest: LatestEvent;
  /** What is stored now; absent for a finding this batch creates. */
  stored?: { version: number; status: 'OPEN' | 'FIXED'; severity: Severity; signature: string };
}

export function latestEventOf(report: NormalizedReport, d: Detection): LatestEvent {
  return {
    time: report.time,
    checkId: report.instance,
    pos: d.pos,
    score: d.score,
    details: d.details,
    impactDetails: d.impactDetails,
    resources: d.resources,
    fingerprint: d.fingerprint,
    affectedResourceString: d.affectedResourceString,
    sourceId: report.sourceId,
    sourceName: report.name,
    sourceComponent: report.component,
    sourceInstance: report.instance,
    sourceOptions: report.options,
  };
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
  family_periods: { family_id: string; found_at: number; fixed_at: number }[];
  details: string;
  impact_details: string;
  resources: string;
  fingerprint: string;
  affected_resource_string: string;
  last_event_time: number;
  last_event_check_id: string;
  last_event_pos: number;
  source_id: string;
  source_name: string;
  source_component: string;
  source_instance: string;
  source_options: string;
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
    (state.familyPeriods.get(family_id) ?? []).map((p) => ({ family_id, found_at: p.found, fixed_at: p.fixed })),
  );
  const periods = unionPeriods([...state.familyPeriods.values()].flat());
  const summary = summarise(periods);
  const l = state.latest;
  return {
    id: state.id,
    target_id: state.targetId,
    issue_id: state.issueId,
    affected_resource: state.affectedResource,
    status: summary.status,
    score: l.score,
    severity: severityOf(l.score),
    found_at: periods.map((p) => p.found),
    fixed_at: periods.map((p) => p.fixed),
    first_found_at: summary.firstFoundAt,
    last_found_at: summary.lastFoundAt,
    closed_exposure: summary.closedExposure,
    ttr_sum: summary.ttrSum,
    ttr_count: summary.ttrCount,
    family_ids: families,
    family_periods: familyPeriods,
    details: l.details,
    impact_details: l.impactDetails,
    resources: l.resources,
    fingerprint: l.fingerprint,
    affected_resource_string: l.affectedResourceString,
    last_event_time: l.time,
    last_event_check_id: l.checkId,
    last_event_pos: l.pos,
    source_id: l.sourceId,
    source_name: l.sourceName,
    source_component: l.sourceComponent,
    source_instance: l.sourceInstance,
    source_options: l.sourceOptions,
  };
}

export const signatureOf = (content: FindingContent) => JSON.stringify(content);

/**
 * The row to append for a state, or undefined when nothing stored would change. Versions count
 * up per finding, so the latest version is always the one derived last (and a retried batch,
 * finding its own write already there, writes nothing again).
 */
export function nextFindingRow(state: FindingState, now: number): FindingRow | undefined {
  const content = findingContent(state);
  const stored = state.stored;
  if (stored && stored.signature === signatureOf(content)) return undefined;
  return {
    ...content,
    version: (stored?.version ?? 0) + 1,
    prev_status: stored?.status ?? 'NONE',
    prev_severity: stored?.severity ?? 'informational',
    updated_at: now,
  };
}
