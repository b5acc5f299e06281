import { eventId } from '../domain/ids.js';
import { compareRank, type DetectionRank, type IssueClaim, type NormalizedReport } from './normalize.js';
import type { IssueClaimKeys } from './queries.js';

/** The rows a batch appends for issues (claims) and FOUND events. */

interface BestClaims {
  claim: IssueClaim;
  detail: DetectionRank;
  details: IssueClaim['details'];
  labelsRank?: DetectionRank;
  labels?: string[];
}

/** The issue claims of the batch that beat the stored ones (earliest details, latest labels). */
export function issueRows(reports: NormalizedReport[], stored: Map<string, IssueClaimKeys>) {
  const best = new Map<string, BestClaims>();
  for (const r of reports) {
    for (const claim of r.issues) {
      const detail = { time: r.time, checkId: r.instance, pos: claim.details.pos };
      const labelsRank = claim.labels ? { time: r.time, checkId: r.instance, pos: claim.labels.pos } : undefined;
      const b = best.get(claim.issueId);
      if (!b) {
        best.set(claim.issueId, { claim, detail, details: claim.details, ...(labelsRank ? { labelsRank, labels: claim.labels!.labels } : {}) });
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
  const rows = [];
  for (const [id, b] of best) {
    const known = stored.get(id);
    const improvesDetail = !known || compareRank(b.detail, known.detail) < 0;
    const improvesLabels = b.labelsRank !== undefined && (!known?.labels || compareRank(b.labelsRank, known.labels) > 0);
    if (!improvesDetail && !improvesLabels) continue;
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

/** FOUND event rows of the reports (also the ingest benchmark's raw insert baseline). */
export function eventRows(reports: NormalizedReport[]) {
  return reports.flatMap((r) =>
    r.detections.map((d) => ({
      id: eventId(d.findingId, r.sourceId),
      finding_id: d.findingId,
      source_id: r.sourceId,
      family_id: r.familyId,
      target_id: r.targetId,
      source_name: r.name,
      component: r.component,
      options: r.options,
      time: r.time,
      check_id: r.instance,
      pos: d.pos,
      score: d.score,
      details: d.details,
      resources: d.resources,
      fingerprint: d.fingerprint,
      affected_resource_string: d.affectedResourceString,
      impact_details: d.impactDetails,
    })),
  );
}

