import * as ids from '../domain/ids.js';
import { parseTimestamp } from '../domain/time.js';
import type { FinishedReport, ReportVulnerability, ResourceGroupInput } from '../queue/contract.js';
import type { Interned } from './interned.js';

/**
 * Turns a validated FINISHED report into the facts ingestion works with (SPEC §2–§3.4):
 * deterministic ids, the source time, one detection per finding key (collapsed, §3.4.5) and the
 * issue claims the report makes (§2.2).
 */

/** Rank of a detection inside the whole history: time, then check_id, then array position. */
export interface DetectionRank {
  time: number;
  checkId: string;
  pos: number;
}

export function compareRank(a: DetectionRank, b: DetectionRank): number {
  if (a.time !== b.time) return a.time - b.time;
  if (a.checkId !== b.checkId) return a.checkId < b.checkId ? -1 : 1;
  return a.pos - b.pos;
}

export interface Detection {
  findingId: string;
  issueId: string;
  affectedResource: string;
  pos: number;
  score: number;
  details: string;
  impactDetails: string;
  /** JSON text of the exposed resource groups: [{name, attributes, resources}]. */
  resources: string;
  fingerprint: string;
  affectedResourceString: string;
}

export interface IssueClaim {
  issueId: string;
  summary: string;
  description: string;
  /** Earliest entry of this issue in the report: its details claim. */
  details: { pos: number; cweId: number; recommendations: string[]; referenceLinks: string[] };
  /** Last entry of this issue in the report with non-empty labels, if any. */
  labels?: { pos: number; labels: string[] };
}

export interface NormalizedReport {
  sourceId: string;
  familyId: string;
  targetId: string;
  identifier: string;
  name: string;
  component: string;
  instance: string;
  options: string;
  time: number;
  detections: Detection[];
  issues: IssueClaim[];
}

/** Labels are exposed sorted (byte order), unique, without empty strings (SPEC §2.2). */
function normalizeLabels(labels: readonly string[] | null | undefined): string[] {
  const unique = [...new Set((labels ?? []).filter((l) => l !== ''))];
  // JavaScript's order is the byte order for ASCII; other text is compared as UTF-8 bytes.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the test is "ASCII only", control characters included
  if (unique.every((l) => /^[\x00-\x7f]*$/.test(l))) return unique.sort();
  return unique.sort((a, b) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')));
}

function exposeResources(groups: readonly ResourceGroupInput[] | null | undefined): string {
  return JSON.stringify((groups ?? []).map((g) => ({ name: g.name ?? '', attributes: g.header ?? [], resources: g.rows ?? [] })));
}

function sourceTime(report: FinishedReport): number {
  const text = report.end_time ? report.end_time : (report.start_time as string);
  return parseTimestamp(text) as number; // validated by the contract
}

function detectionOf(v: ReportVulnerability, pos: number, targetId: string, identifier: string, shared: Interned): Detection {
  const description = v.description ?? '';
  const issueId = shared.issueId(v.summary, description);
  const affectedResource = v.affected_resource ? v.affected_resource : identifier;
  return {
    findingId: shared.findingId(targetId, issueId, affectedResource),
    issueId,
    affectedResource,
    pos,
    score: v.score ?? 0,
    details: shared.text(v.details ?? ''),
    impactDetails: shared.text(v.impact_details ?? ''),
    resources: shared.text(exposeResources(v.resources)),
    fingerprint: v.fingerprint ? shared.text(v.fingerprint) : 'NOT_PROVIDED',
    affectedResourceString: shared.text(v.affected_resource_string ?? ''),
  };
}

/** The report as ingestion holds it; its texts and lists are `shared`'s instances. */
export function normalizeReport(report: FinishedReport, shared: Interned): NormalizedReport {
  const identifier = report.target;
  const targetId = ids.targetId(identifier);
  const options = report.options ?? '';
  const vulnerabilities = report.vulnerabilities ?? [];

  // §3.4.5: several entries mapping to one finding collapse; highest score wins, first on ties.
  const byFinding = new Map<string, Detection>();
  const issues = new Map<string, IssueClaim>();
  vulnerabilities.forEach((v, pos) => {
    const d = detectionOf(v, pos, targetId, identifier, shared);
    const kept = byFinding.get(d.findingId);
    if (!kept || d.score > kept.score) byFinding.set(d.findingId, d);

    const labels = shared.list(normalizeLabels(v.labels));
    const claim = issues.get(d.issueId);
    if (!claim) {
      issues.set(d.issueId, {
        issueId: d.issueId,
        summary: shared.text(v.summary),
        description: shared.text(v.description ?? ''),
        details: {
          pos,
          cweId: v.cwe_id ?? 0,
          recommendations: shared.list(v.recommendations ?? []),
          referenceLinks: shared.list(v.references ?? []),
        },
        ...(labels.length > 0 ? { labels: { pos, labels } } : {}),
      });
    } else if (labels.length > 0) {
      claim.labels = { pos, labels };
    }
  });

  return {
    sourceId: ids.sourceId(ids.SOURCE_NAME, report.checktype_name, report.check_id, options),
    familyId: ids.familyId(ids.SOURCE_NAME, report.checktype_name, options),
    targetId,
    identifier,
    name: ids.SOURCE_NAME,
    component: report.checktype_name,
    instance: report.check_id,
    options,
    time: sourceTime(report),
    detections: [...byFinding.values()],
    issues: [...issues.values()],
  };
}
