import { eventId } from '../domain/ids.js';
import { compareRank, type DetectionRank, type IssueClaim, type NormalizedReport } from './normalize.js';
import type { IssueWinners } from './queries.js';

/** The rows a batch appends for issues (claims and objects) and FOUND events. */

export interface BestClaims {
  claim: IssueClaim;
  detail: DetectionRank;
  details: IssueClaim['details'];
  labelsRank?: DetectionRank;
  labels?: string[];
}

/** Each issue's earliest details claim and latest labels claim among the batch's reports. */
export function bestClaims(reports: NormalizedReport[]): Map<string, BestClaims> {
  const best = new Map<string, BestClaims>();
  for (const r of reports) {
    for (const claim of r.issues) {
      const detail = { time: r.time, checkId: r.instance, pos: claim.details.pos };
      const labelsRank = claim.labels ? { time: r.time, checkId: r.instance, pos: claim.labels.pos } : undefined;
      const b = best.get(claim.issueId);
      if (!b) {
        best.set(claim.issueId, {
          claim,
          detail,
          details: claim.details,
          ...(labelsRank ? { labelsRank, labels: claim.labels!.labels } : {}),
        });
        continue;
      }
      if (compareRank(detail, b.detail) < 0) {
        b.detail = detail;
        b.details = claim.details;
      }
      if (labelsRank && (!b.labelsRank || compareRank(labelsRank, b.labelsRank) > 0)) {
        b.labelsRank = labelsRank;
        b.labels = claim.labels!.labels;
      }
    }
  }
  return best;
}

const improvesDetail = (b: BestClaims, known: IssueWinners | undefined) => !known || compareRank(b.detail, known.detail) < 0;
const improvesLabels = (b: BestClaims, known: IssueWinners | undefined) =>
  b.labelsRank !== undefined && (!known?.labelsRank || compareRank(b.labelsRank, known.labelsRank) > 0);

/** The issue claims of the batch that beat the stored ones (earliest details, latest labels). */
export function issueRows(best: Map<string, BestClaims>, stored: Map<string, IssueWinners>) {
  const rows = [];
  for (const [id, b] of best) {
    const known = stored.get(id);
    if (!improvesDetail(b, known) && !improvesLabels(b, known)) continue;
    rows.push({
      id,
      summary: b.claim.summary,
      description: b.claim.description,
      cwe_id: b.details.cweId,
      recommendations: b.details.recommendations,
      reference_links: b.details.referenceLinks,
      detail_time: b.detail.time,
      detail_check_id: b.detail.checkId,
      detail_pos: b.detail.pos,
      labels: b.labels ?? [],
      labels_time: b.labelsRank?.time ?? 0,
      labels_check_id: b.labelsRank?.checkId ?? '',
      labels_pos: b.labelsRank?.pos ?? 0,
    });
  }
  return rows;
}

/**
 * The exposed form of each issue the batch's claims change (SPEC §2.2), merged from the stored
 * winners and the batch's best claims; with `all`, of every issue of the batch (a retry, whose
 * claims may be stored already while the objects are not).
 */
export function issueObjectRows(best: Map<string, BestClaims>, stored: Map<string, IssueWinners>, all: boolean) {
  const rows = [];
  for (const [id, b] of best) {
    const known = stored.get(id);
    const newDetail = improvesDetail(b, known);
    const newLabels = improvesLabels(b, known);
    if (!all && !newDetail && !newLabels) continue;
    const details = newDetail || !known ? b.details : known.details;
    const labels = newLabels ? b.labels! : (known?.labels ?? []);
    // A later claim that says what the stored winners say leaves the object as it is: scans
    // repeat their issues, and an empty insert is one statement less in the batch.
    if (!all && known && showsTheSame(known, details, labels)) continue;
    rows.push({
      id,
      summary: b.claim.summary,
      description: b.claim.description,
      cwe_id: details.cweId,
      recommendations: details.recommendations,
      reference_links: details.referenceLinks,
      labels,
    });
  }
  return rows;
}

const sameStrings = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/** Whether an object with these details and labels shows what the stored winners show (summary and description are the issue's identity). */
const showsTheSame = (known: IssueWinners, details: IssueWinners['details'], labels: readonly string[]) =>
  details.cweId === known.details.cweId &&
  sameStrings(details.recommendations, known.details.recommendations) &&
  sameStrings(details.referenceLinks, known.details.referenceLinks) &&
  sameStrings(labels, known.labels);

/**
 * Whether an event becomes its finding's latest FOUND event (SPEC §3.5.6), flagged on the event
 * row: sql/0012 copies flagged rows into finding_latest_events.
 */
export type BecameLatest = (findingId: string, rank: DetectionRank) => boolean;

/** The columns a FOUND event takes from its report. */
const sourceColumns = (r: NormalizedReport) => ({
  source_id: r.sourceId,
  family_id: r.familyId,
  target_id: r.targetId,
  source_name: r.name,
  component: r.component,
  options: r.options,
  time: r.time,
  check_id: r.instance,
});

/**
 * The reports' FOUND events as the worker writes them: a row per report with its detections as
 * parallel arrays, which sql/0013 spreads into finding_events (deriving each event's id as
 * eventId does). `keep` drops detections whose events are stored already (a retry).
 */
export function detectionRows(
  reports: NormalizedReport[],
  becameLatest: BecameLatest,
  keep: (findingId: string, sourceId: string) => boolean = () => true,
) {
  const rows = [];
  for (const r of reports) {
    const detections = r.detections.filter((d) => keep(d.findingId, r.sourceId));
    if (detections.length === 0) continue;
    rows.push({
      ...sourceColumns(r),
      finding_ids: detections.map((d) => d.findingId),
      positions: detections.map((d) => d.pos),
      scores: detections.map((d) => d.score),
      details: detections.map((d) => d.details),
      resources: detections.map((d) => d.resources),
      fingerprints: detections.map((d) => d.fingerprint),
      affected_resource_strings: detections.map((d) => d.affectedResourceString),
      impact_details: detections.map((d) => d.impactDetails),
      became_latest: detections.map((d) => (becameLatest(d.findingId, { time: r.time, checkId: r.instance, pos: d.pos }) ? 1 : 0)),
    });
  }
  return rows;
}

/** FOUND event rows of the reports, one per event with its id (recovery, and the ingest benchmark's raw insert baseline). */
export function eventRows(reports: NormalizedReport[], becameLatest: BecameLatest = () => false) {
  return reports.flatMap((r) =>
    r.detections.map((d) => ({
      id: eventId(d.findingId, r.sourceId),
      finding_id: d.findingId,
      ...sourceColumns(r),
      pos: d.pos,
      score: d.score,
      details: d.details,
      resources: d.resources,
      fingerprint: d.fingerprint,
      affected_resource_string: d.affectedResourceString,
      impact_details: d.impactDetails,
      became_latest: becameLatest(d.findingId, { time: r.time, checkId: r.instance, pos: d.pos }) ? 1 : 0,
    })),
  );
}

export type EventRow = ReturnType<typeof eventRows>[number];

/** A flagged event as its finding's row of finding_latest_events (what the view of sql/0012 copies). */
export const latestEventRow = (e: EventRow) => ({
  finding_id: e.finding_id,
  time: e.time,
  check_id: e.check_id,
  pos: e.pos,
  source_id: e.source_id,
  source_name: e.source_name,
  component: e.component,
  options: e.options,
  details: e.details,
  impact_details: e.impact_details,
  resources: e.resources,
  affected_resource_string: e.affected_resource_string,
});
