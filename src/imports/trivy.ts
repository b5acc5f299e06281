import { z } from 'zod';
import { describeIssues } from '../queue/contract.js';
import {
  type ConvertContext,
  type Conversion,
  documentCheckId,
  fallbackTime,
  firstPresent,
  noTarget,
  present,
  type VulcanReport,
  type VulcanVulnerability,
} from './report.js';

/**
 * Trivy JSON (`trivy image|fs|repo --format json`, schema version 2) to a Vulcan report, SPEC §13:
 * one report per document; each vulnerability, failed misconfiguration and secret of each result
 * is a vulnerability. Only the fields the mapping reads are described (and type-checked).
 */

const str = z.string().nullish();
const strings = z.array(z.string()).nullish();

const vulnerabilitySchema = z.object({
  VulnerabilityID: z.string().min(1),
  PkgName: z.string(),
  InstalledVersion: str,
  FixedVersion: str,
  Title: str,
  Description: str,
  Severity: str,
  CweIDs: strings,
  CVSS: z.record(z.string(), z.object({ V3Score: z.number().nullish() }).nullish()).nullish(),
  References: strings,
});
type Vulnerability = z.infer<typeof vulnerabilitySchema>;

const misconfigurationSchema = z.object({
  ID: z.string().min(1),
  Title: str,
  Description: str,
  Resolution: str,
  Severity: str,
  References: strings,
  Status: str,
});
type Misconfiguration = z.infer<typeof misconfigurationSchema>;

const secretSchema = z.object({ RuleID: z.string().min(1), Title: str, Severity: str, StartLine: z.number().int().nullish() });
type Secret = z.infer<typeof secretSchema>;

const resultSchema = z.object({
  Target: z.string(),
  Class: str,
  Vulnerabilities: z.array(vulnerabilitySchema).nullish(),
  Misconfigurations: z.array(misconfigurationSchema).nullish(),
  Secrets: z.array(secretSchema).nullish(),
});
type Result = z.infer<typeof resultSchema>;

const trivySchema = z.object(
  {
    SchemaVersion: z.number({ error: 'must be a number (a Trivy JSON document has one)' }),
    ArtifactName: str,
    CreatedAt: str,
    Trivy: z.object({ Version: str }).nullish(),
    Results: z.array(resultSchema).nullish(),
  },
  { error: 'must be a JSON object' },
);

/** Trivy's `Severity` when no CVSS v3 score is given. */
const SEVERITY_SCORES: Record<string, number> = { CRITICAL: 9.0, HIGH: 7.0, MEDIUM: 4.0, LOW: 1.0 };
const bySeverity = (severity: string | null | undefined) => SEVERITY_SCORES[severity ?? ''] ?? 0;
const CWE_ID = /^CWE-(\d+)$/i;

const summaryOf = (id: string, title: string | null | undefined) => {
  const t = present(title);
  return t === undefined ? id : `${id}: ${t}`;
};
const labelsOf = (result: Result) => (present(result.Class) === undefined ? [] : [result.Class!]);

/** The highest CVSS v3 score of any source (nvd, redhat, ghsa…), else the score of the severity. */
function scoreOf(v: Vulnerability): number {
  let best: number | undefined;
  for (const source of Object.values(v.CVSS ?? {})) {
    const s = source?.V3Score;
    if (s != null && (best === undefined || s > best)) best = s;
  }
  return best ?? bySeverity(v.Severity);
}

/** The first entry of CweIDs that is a CWE id (`CWE-79`; NVD also writes `NVD-CWE-Other`). */
function cweOf(v: Vulnerability): number | null {
  for (const id of v.CweIDs ?? []) {
    const m = CWE_ID.exec(id);
    if (m) return Number(m[1]);
  }
  return null;
}

export function trivyVulnerability(v: Vulnerability, result: Result): VulcanVulnerability {
  const installed = present(v.InstalledVersion);
  const fixed = present(v.FixedVersion);
  return {
    summary: summaryOf(v.VulnerabilityID, v.Title),
    score: scoreOf(v),
    cwe_id: cweOf(v),
    affected_resource: `${installed === undefined ? v.PkgName : `${v.PkgName}@${installed}`} (${result.Target})`,
    details: present(v.Description) ?? null,
    recommendations: fixed === undefined ? [] : [`Upgrade ${v.PkgName} to ${fixed}`],
    references: v.References ?? [],
    labels: labelsOf(result),
  };
}

export function trivyMisconfiguration(m: Misconfiguration, result: Result): VulcanVulnerability {
  const resolution = present(m.Resolution);
  return {
    summary: summaryOf(m.ID, m.Title),
    score: bySeverity(m.Severity),
    affected_resource: result.Target,
    details: present(m.Description) ?? null,
    recommendations: resolution === undefined ? [] : [resolution],
    references: m.References ?? [],
    labels: labelsOf(result),
  };
}

export function trivySecret(s: Secret, result: Result): VulcanVulnerability {
  return {
    summary: summaryOf(s.RuleID, s.Title),
    score: bySeverity(s.Severity),
    affected_resource: s.StartLine == null ? result.Target : `${result.Target}:${s.StartLine}`,
    labels: labelsOf(result),
  };
}

function vulnerabilitiesOf(result: Result): VulcanVulnerability[] {
  return [
    ...(result.Vulnerabilities ?? []).map((v) => trivyVulnerability(v, result)),
    // Passed checks are listed too with --include-non-failures: they are not findings.
    ...(result.Misconfigurations ?? []).filter((m) => m.Status !== 'PASS').map((m) => trivyMisconfiguration(m, result)),
    ...(result.Secrets ?? []).map((s) => trivySecret(s, result)),
  ];
}

/** SPEC §13: a Trivy JSON document as one Vulcan report. */
export function trivyReports(document: unknown, ctx: ConvertContext): Conversion {
  const parsed = trivySchema.safeParse(document);
  if (!parsed.success) return { reason: `not a Trivy JSON document: ${describeIssues(parsed.error)}` };
  const doc = parsed.data;
  const target = firstPresent(ctx.target, doc.ArtifactName);
  if (target === undefined) return { reason: noTarget('the document (no ArtifactName)') };
  const report: VulcanReport = {
    status: 'FINISHED',
    check_id: documentCheckId(ctx.sha256),
    checktype_name: 'trivy',
    checktype_version: present(doc.Trivy?.Version) ?? null,
    target,
    end_time: present(doc.CreatedAt) ?? fallbackTime(ctx),
    vulnerabilities: (doc.Results ?? []).flatMap(vulnerabilitiesOf),
  };
  return { reports: [report] };
}
