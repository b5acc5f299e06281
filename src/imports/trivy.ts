import { at, fail, integer, type JsonObject, list, number, object, requiredObject, text, texts } from './read.js';
import {
  type ConvertContext,
  type Conversion,
  documentCheckId,
  fallbackTime,
  firstPresent,
  noTarget,
  present,
  Unconvertible,
  type VulcanVulnerability,
} from './report.js';

/**
 * Trivy JSON (`trivy image|fs|repo --format json`, schema version 2) to a Vulcan report, SPEC §13:
 * one report per document; each vulnerability, failed misconfiguration and secret of each result
 * is a vulnerability. Only the fields the mapping reads are read (and type-checked).
 */

/** Trivy's `Severity` when no CVSS v3 score is given. */
const SEVERITY_SCORES: Record<string, number> = { CRITICAL: 9.0, HIGH: 7.0, MEDIUM: 4.0, LOW: 1.0 };
const CWE_ID = /^CWE-(\d+)$/i;

/** What every finding of a result shares: the file or package set it is in, and its class. */
interface Result {
  target: string;
  labels: string[];
}

const required = (value: unknown, path: string) => present(text(value, path)) ?? fail(path, 'a non-empty string');
const severityScore = (entry: JsonObject, path: string) => SEVERITY_SCORES[text(entry.Severity, at(path, 'Severity')) ?? ''] ?? 0;

const summaryOf = (id: string, title: string | undefined) => {
  const t = present(title);
  return t === undefined ? id : `${id}: ${t}`;
};

/** The highest CVSS v3 score of any source (nvd, redhat, ghsa…), else undefined. */
function highestV3(value: unknown, path: string): number | undefined {
  const sources = object(value, path);
  let best: number | undefined;
  for (const name in sources) {
    const s = number(object(sources[name], at(path, name))?.V3Score, at(path, `${name}.V3Score`));
    if (s !== undefined && (best === undefined || s > best)) best = s;
  }
  return best;
}

/** The first entry of CweIDs that is a CWE id (`CWE-79`; NVD also writes `NVD-CWE-Other`). */
function cweOf(value: unknown, path: string): number | null {
  for (const id of texts(value, path)) {
    const m = CWE_ID.exec(id);
    if (m) return Number(m[1]);
  }
  return null;
}

function vulnerability(v: JsonObject, result: Result, path: string): VulcanVulnerability {
  const pkg = text(v.PkgName, at(path, 'PkgName')) ?? fail(at(path, 'PkgName'), 'a string');
  const installed = present(text(v.InstalledVersion, at(path, 'InstalledVersion')));
  const fixed = present(text(v.FixedVersion, at(path, 'FixedVersion')));
  return {
    summary: summaryOf(required(v.VulnerabilityID, at(path, 'VulnerabilityID')), text(v.Title, at(path, 'Title'))),
    score: highestV3(v.CVSS, at(path, 'CVSS')) ?? severityScore(v, path),
    cwe_id: cweOf(v.CweIDs, at(path, 'CweIDs')),
    affected_resource: `${installed === undefined ? pkg : `${pkg}@${installed}`} (${result.target})`,
    details: present(text(v.Description, at(path, 'Description'))) ?? null,
    recommendations: fixed === undefined ? [] : [`Upgrade ${pkg} to ${fixed}`],
    references: texts(v.References, at(path, 'References')),
    labels: result.labels,
  };
}

function misconfiguration(m: JsonObject, result: Result, path: string): VulcanVulnerability {
  const resolution = present(text(m.Resolution, at(path, 'Resolution')));
  return {
    summary: summaryOf(required(m.ID, at(path, 'ID')), text(m.Title, at(path, 'Title'))),
    score: severityScore(m, path),
    affected_resource: result.target,
    details: present(text(m.Description, at(path, 'Description'))) ?? null,
    recommendations: resolution === undefined ? [] : [resolution],
    references: texts(m.References, at(path, 'References')),
    labels: result.labels,
  };
}

function secret(s: JsonObject, result: Result, path: string): VulcanVulnerability {
  const line = integer(s.StartLine, at(path, 'StartLine'));
  return {
    summary: summaryOf(required(s.RuleID, at(path, 'RuleID')), text(s.Title, at(path, 'Title'))),
    score: severityScore(s, path),
    affected_resource: line === undefined ? result.target : `${result.target}:${line}`,
    labels: result.labels,
  };
}

/** Each entry of a result's list, read by `read` (undefined: not a finding; an entry that is not an object is malformed). */
function* entries(
  value: unknown,
  path: string,
  read: (entry: JsonObject, path: string) => VulcanVulnerability | undefined,
): Generator<VulcanVulnerability | undefined> {
  const items = list(value, path);
  for (let i = 0; i < items.length; i++) yield read(requiredObject(items[i], at(path, i)), at(path, i));
}

function* vulnerabilitiesOf(value: unknown, path: string): Generator<VulcanVulnerability | undefined> {
  const results = list(value, path);
  for (let i = 0; i < results.length; i++) {
    const where = at(path, i);
    const r = requiredObject(results[i], where);
    const target = text(r.Target, at(where, 'Target')) ?? fail(at(where, 'Target'), 'a string');
    const kind = present(text(r.Class, at(where, 'Class')));
    const result: Result = { target, labels: kind === undefined ? [] : [kind] };
    yield* entries(r.Vulnerabilities, at(where, 'Vulnerabilities'), (v, p) => vulnerability(v, result, p));
    // Passed checks are listed too with --include-non-failures: they are not findings.
    yield* entries(r.Misconfigurations, at(where, 'Misconfigurations'), (m, p) =>
      m.Status === 'PASS' ? undefined : misconfiguration(m, result, p),
    );
    yield* entries(r.Secrets, at(where, 'Secrets'), (s, p) => secret(s, result, p));
  }
}

/** SPEC §13: a Trivy JSON document as one Vulcan report. */
export function* trivyReports(document: unknown, ctx: ConvertContext): Conversion {
  const doc = object(document, 'document') ?? fail('document', 'an object');
  number(doc.SchemaVersion, 'SchemaVersion') ?? fail('SchemaVersion', 'a number (a Trivy JSON document has one)');
  const target = firstPresent(ctx.target, text(doc.ArtifactName, 'ArtifactName'));
  if (target === undefined) throw new Unconvertible(noTarget('the document (no ArtifactName)'));
  yield {
    part: undefined,
    fields: {
      status: 'FINISHED',
      check_id: documentCheckId(ctx.sha256),
      checktype_name: 'trivy',
      checktype_version: present(text(object(doc.Trivy, 'Trivy')?.Version, 'Trivy.Version')) ?? null,
      target,
      end_time: present(text(doc.CreatedAt, 'CreatedAt')) ?? fallbackTime(ctx),
    },
    vulnerabilities: vulnerabilitiesOf(doc.Results, 'Results'),
  };
}
