import fc from 'fast-check';
import { text } from './fuzz-bodies.js';
import { anyJson, brokenBody, contentType, field, type FuzzContext, FuzzRequest, oddString, percentEncode, str } from './fuzz-requests.js';

/**
 * Issue 31: POST /imports/{format} in the fuzz campaign — SARIF and Trivy documents whose every
 * string is fuzzed (lone surrogates, NULs, rarely huge), of other types or absent, or no document
 * at all. Built when called: the fuzz modules import each other.
 */

/** A SARIF 2.1.0 document of one or two runs whose every string is fuzzed. */
const sarifDocument = () => {
  const s = () => field(text().map(str), 12);
  const rule = fc
    .record({ id: s(), name: s(), help: s(), helpUri: s(), severity: field(fc.constantFrom('"7.5"', '9.8', '"x"', '"\\ud800"'), 4) })
    .map(
      (r) =>
        `{"id":${r.id ?? '"R1"'},"shortDescription":{"text":${r.name ?? 'null'}},"help":{"text":${r.help ?? '""'}},` +
        `"helpUri":${r.helpUri ?? 'null'},"properties":{"security-severity":${r.severity ?? 'null'},"tags":["security"]}}`,
    );
  const result = fc
    .record({ ruleId: s(), level: field(fc.constantFrom('error', 'warning', 'note', 'none', 'odd').map(str), 6), message: s(), uri: s() })
    .map(
      (r) =>
        `{"ruleId":${r.ruleId ?? '"R1"'},"level":${r.level ?? '"error"'},"message":{"text":${r.message ?? '"m"'}},` +
        `"locations":[{"physicalLocation":{"artifactLocation":{"uri":${r.uri ?? '"a.js"'}}}}]}`,
    );
  const run = fc
    .record({
      driver: s(),
      rules: fc.array(rule, { maxLength: 3 }),
      results: fc.array(result, { maxLength: 3 }),
      end: field(fc.constant('"2024-01-05T10:00:00Z"'), 6),
    })
    .map(
      (r) =>
        `{"tool":{"driver":{"name":${r.driver ?? '"tool"'},"rules":[${r.rules.join(',')}]}},"results":[${r.results.join(',')}],` +
        `"invocations":[{"endTimeUtc":${r.end ?? 'null'}}]}`,
    );
  return fc.array(run, { minLength: 1, maxLength: 2 }).map((runs) => `{"version":"2.1.0","runs":[${runs.join(',')}]}`);
};

/** A Trivy JSON document whose every string is fuzzed. */
const trivyDocument = () => {
  const s = () => field(text().map(str), 12);
  const vulnerability = fc
    .record({
      id: s(),
      pkg: s(),
      version: s(),
      title: s(),
      severity: field(fc.constantFrom('CRITICAL', 'HIGH', 'LOW', 'UNKNOWN', 'odd').map(str), 6),
    })
    .map(
      (v) =>
        `{"VulnerabilityID":${v.id ?? '"CVE-1"'},"PkgName":${v.pkg ?? '"p"'},"InstalledVersion":${v.version ?? '"1"'},` +
        `"Title":${v.title ?? 'null'},"Severity":${v.severity ?? '"HIGH"'}}`,
    );
  const result = fc
    .record({ target: s(), vulnerabilities: fc.array(vulnerability, { maxLength: 3 }) })
    .map((r) => `{"Target":${r.target ?? '"t"'},"Vulnerabilities":[${r.vulnerabilities.join(',')}]}`);
  return fc
    .record({ artifact: s(), created: field(fc.constant('"2024-01-05T10:00:00Z"'), 6), results: fc.array(result, { maxLength: 2 }) })
    .map((d) => `{"ArtifactName":${d.artifact ?? 'null'},"CreatedAt":${d.created ?? 'null'},"Results":[${d.results.join(',')}]}`);
};

/** POST /imports/{format} with fuzzed documents, targets and times; what is accepted is queued and checked later. */
export function importRequests(ctx: FuzzContext): fc.Arbitrary<FuzzRequest> {
  const format = fc.constantFrom('sarif', 'trivy');
  return fc
    .record({
      format,
      document: fc.oneof(
        { weight: 6, arbitrary: format.chain((f) => (f === 'sarif' ? sarifDocument() : trivyDocument())) },
        { weight: 1, arbitrary: anyJson },
        { weight: 1, arbitrary: brokenBody },
      ),
      target: fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom(...ctx.identifiers) },
        { weight: 2, arbitrary: oddString },
        { weight: 2, arbitrary: fc.constant(undefined) },
      ),
      type: contentType,
    })
    .map((r) => {
      const query = r.target === undefined ? '' : `?target=${percentEncode(r.target).slice(0, 2000)}`;
      const headers: Record<string, string | string[]> = {};
      if (r.type.value !== undefined) headers['Content-Type'] = r.type.value;
      let expect: readonly number[] = [202, 400, 413];
      if (!r.type.json) expect = [415];
      else if (Buffer.byteLength(r.document) > ctx.maxReportBytes) expect = [413];
      return new FuzzRequest(
        'db',
        `POST /imports/${r.format}`,
        'POST',
        `/imports/${r.format}${query}`,
        headers,
        r.document,
        expect,
        undefined,
      );
    });
}
