import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { documentSha256, importDocument } from '../src/imports/formats.js';
import type { ConvertContext, VulcanReport } from '../src/imports/report.js';
import { sarifReports } from '../src/imports/sarif.js';

/** SPEC §13, SARIF 2.1.0: the mapping on Trivy's SARIF output (test/fixtures/README.md) and on a CodeQL-shaped document. */

const trivySarif = fs.readFileSync('test/fixtures/trivy/alpine-310.sarif.golden');
const NOW = '2025-03-01T08:00:00Z';
const ctxOf = (bytes: Buffer, extra: Partial<ConvertContext> = {}): ConvertContext => ({
  sha256: documentSha256(bytes),
  now: NOW,
  ...extra,
});

function convert(document: unknown, extra: Partial<ConvertContext> = {}, bytes = Buffer.from(JSON.stringify(document))): VulcanReport[] {
  // The converter's reports as it builds them, before validation (importDocument validates and bounds them).
  return [...sarifReports(document, ctxOf(bytes, extra))].map(({ fields, vulnerabilities }) => ({
    ...fields,
    vulnerabilities: [...vulnerabilities].filter((v) => v !== undefined),
  }));
}

const LIMITS = { maxBytes: 10 * 1024 * 1024 };
/** What importDocument makes of a document: its validated reports, or why it refuses it. */
const imported = (document: unknown, ctx: ConvertContext) => importDocument('sarif', document, ctx, LIMITS);

describe("Trivy's SARIF output", () => {
  const document = JSON.parse(trivySarif.toString());
  const [report] = convert(document, { target: 'ghcr.io/aquasecurity/trivy-test-images:alpine-310' }, trivySarif);

  it('is one report per run, of the check type the tool names, on the target given', () => {
    expect(report).toMatchObject({
      status: 'FINISHED',
      checktype_name: 'Trivy',
      checktype_version: 'dev',
      target: 'ghcr.io/aquasecurity/trivy-test-images:alpine-310',
      options: null,
    });
  });

  it('is refused without a target parameter: the run names no repository', async () => {
    expect(await imported(document, ctxOf(trivySarif))).toEqual({ reason: expect.stringMatching(/^runs\[0\].*names no target/) });
  });

  it('holds a vulnerability per result, described by its rule', () => {
    const vulnerabilities = report!.vulnerabilities!;
    expect(vulnerabilities.map((v) => v.summary)).toEqual([
      'openssl: information disclosure in fork()',
      'openssl: Integer overflow in RSAZ modular exponentiation on x86_64',
      'openssl: information disclosure in fork()',
      'openssl: Integer overflow in RSAZ modular exponentiation on x86_64',
    ]);
    const [first] = vulnerabilities;
    expect(first).toMatchObject({
      score: 5.3, // the rule's security-severity "5.3", not the level (warning: 4.0)
      cwe_id: null,
      affected_resource: 'testdata/fixtures/images/alpine-310.tar.gz:1',
      details: expect.stringMatching(/^Package: libcrypto1\.1\nInstalled Version: 1\.1\.1c-r0\nVulnerability CVE-2019-1549/),
      references: ['https://avd.aquasec.com/nvd/cve-2019-1549'],
      labels: ['vulnerability', 'security', 'MEDIUM'],
      fingerprint: null,
    });
    expect(first!.recommendations).toEqual([expect.stringMatching(/^Vulnerability CVE-2019-1549\nSeverity: MEDIUM\nPackage: libssl1\.1/)]);
  });

  it('gets its check id from the bytes of the document and the run index', () => {
    const again = convert(document, { target: 'x' }, Buffer.from(trivySarif))[0]!;
    expect(again.check_id).toBe(report!.check_id);
    const reformatted = convert(document, { target: 'x' }, Buffer.from(JSON.stringify(document)))[0]!;
    expect(reformatted.check_id).not.toBe(report!.check_id);
  });

  it('takes the time parameter, then the request time, as the report time (the run has no invocation)', () => {
    expect(report!.end_time).toBe(NOW);
    expect(convert(document, { target: 'x', time: '2024-06-01T12:00:00+02:00' }, trivySarif)[0]!.end_time).toBe(
      '2024-06-01T12:00:00+02:00',
    );
  });

  it('passes the validation of SPEC §3.3', async () => {
    const out = await importDocument('sarif', document, ctxOf(trivySarif, { target: 'x' }), LIMITS);
    expect('reports' in out && out.reports[0]!.vulnerabilities).toHaveLength(4);
  });
});

/** A CodeQL-shaped run: rules with CWE tags and no security-severity, one rule in an extension. */
function codeqlRun(overrides: Record<string, unknown> = {}) {
  return {
    tool: {
      driver: {
        name: 'CodeQL',
        semanticVersion: '2.15.0',
        version: '2.15.0-beta',
        rules: [
          {
            id: 'js/xss',
            name: 'js/xss',
            shortDescription: { text: 'Client-side cross-site scripting' },
            help: { text: 'Escape user input.' },
            helpUri: 'https://codeql.github.com/js-xss',
            defaultConfiguration: { level: 'error' },
            properties: { tags: ['security', 'external/cwe/cwe-079', 'external/cwe/cwe-116'] },
          },
          { id: 'js/unused-local', properties: { tags: ['maintainability'] } },
        ],
      },
      extensions: [
        { name: 'codeql/js-queries', rules: [{ id: 'js/sql', name: 'SqlInjection', properties: { 'security-severity': '8.8' } }] },
      ],
    },
    versionControlProvenance: [{ repositoryUri: 'https://github.com/example/app' }],
    automationDetails: { id: 'codeql/analyze/javascript/' },
    invocations: [{ startTimeUtc: '2024-05-01T09:00:00.123Z', endTimeUtc: '2024-05-01T09:05:00.456Z' }],
    results: [
      {
        ruleId: 'js/xss',
        ruleIndex: 0,
        message: { text: 'Cross-site scripting from a user-provided value.' },
        locations: [{ physicalLocation: { artifactLocation: { uri: 'src/app.js' }, region: { startLine: 42 } } }],
        partialFingerprints: { primaryLocationLineHash: 'abc123:1', other: 'zzz' },
      },
      { ruleId: 'js/unused-local', level: 'note', message: { text: 'Unused variable x.' }, fingerprints: { v1: 'f-1' } },
      { rule: { id: 'js/sql', index: 0, toolComponent: { index: 0 } }, message: { text: 'SQL from user input.' } },
      { ruleId: 'js/xss', ruleIndex: 0, kind: 'pass', message: { text: 'Checked: escaped.' } },
      { ruleId: 'no-rule', level: 'none', properties: { 'security-severity': 'high' } },
      { ruleId: 'warn-rule', properties: { 'security-severity': 6.1 } },
    ],
    ...overrides,
  };
}

describe('a CodeQL-shaped SARIF document', () => {
  const [report] = convert({ version: '2.1.0', runs: [codeqlRun()] });
  const [xss, unused, sql, none, warn] = report!.vulnerabilities!;

  it('takes the target from the repository, the options from the automation id and the time from the invocation', () => {
    expect(report).toMatchObject({
      checktype_name: 'CodeQL',
      checktype_version: '2.15.0',
      target: 'https://github.com/example/app',
      options: 'codeql/analyze/javascript/',
      end_time: '2024-05-01T09:05:00.456Z',
    });
  });

  it('scores by level without a security-severity: error 7.0, note 1.0, none 0, and the default level warning 4.0', () => {
    expect(xss!.score).toBe(7.0);
    expect(unused!.score).toBe(1.0);
    expect(none!.score).toBe(0);
    expect(warn!.score).toBe(6.1); // the result's own security-severity, the rule having none
  });

  it('takes the first CWE tag as cwe_id and the other tags as labels', () => {
    expect(xss).toMatchObject({ cwe_id: 79, labels: ['security'] });
  });

  it('writes the resource as uri:line, and leaves it empty without a location', () => {
    expect(xss!.affected_resource).toBe('src/app.js:42');
    expect(unused!.affected_resource).toBeNull();
  });

  it('takes the first partial fingerprint, else the first fingerprint', () => {
    expect(xss!.fingerprint).toBe('abc123:1');
    expect(unused!.fingerprint).toBe('f-1');
  });

  it('finds a rule in the extension the result names, and falls back to the rule name, then the rule id, as summary', () => {
    expect(sql).toMatchObject({ summary: 'SqlInjection', score: 8.8, details: 'SQL from user input.' });
    expect(unused!.summary).toBe('js/unused-local');
    expect(none!.summary).toBe('no-rule');
  });

  it('maps help and helpUri to recommendations and references only when present', () => {
    expect(xss).toMatchObject({ recommendations: ['Escape user input.'], references: ['https://codeql.github.com/js-xss'] });
    expect(unused).toMatchObject({ recommendations: [], references: [] });
  });

  it('leaves out results of kind pass', () => {
    expect(report!.vulnerabilities).toHaveLength(5);
  });
});

describe('the SARIF run rules', () => {
  it('makes a report per run with the check id of the run index, or the automation guid', () => {
    const guid = '7c4b1e2a-1111-4222-8333-444455556666';
    const document = { runs: [codeqlRun(), codeqlRun(), codeqlRun({ automationDetails: { id: 'nightly', guid } })] };
    const reports = convert(document);
    expect(reports).toHaveLength(3);
    expect(new Set(reports.map((r) => r.check_id)).size).toBe(3);
    expect(reports[2]!.check_id).toBe(guid);
    expect(convert(document).map((r) => r.check_id)).toEqual(reports.map((r) => r.check_id));
  });

  it('takes startTimeUtc when the invocation has no end, and the version when there is no semanticVersion', () => {
    const run = codeqlRun({ invocations: [{ startTimeUtc: '2024-05-01T09:00:00Z' }] });
    delete (run.tool.driver as { semanticVersion?: string }).semanticVersion;
    expect(convert({ runs: [run] })[0]).toMatchObject({ end_time: '2024-05-01T09:00:00Z', checktype_version: '2.15.0-beta' });
  });

  it('lets the target parameter override the repository', () => {
    expect(convert({ runs: [codeqlRun()] }, { target: 'app.example.com' })[0]!.target).toBe('app.example.com');
  });

  it('refuses a document that is not SARIF, or holds no runs', async () => {
    const ctx = ctxOf(Buffer.from('{}'));
    expect(await imported({ SchemaVersion: 2 }, ctx)).toEqual({ reason: expect.stringMatching(/^not a SARIF 2\.1\.0 document: runs/) });
    expect(await imported({ runs: [{ tool: {} }] }, ctx)).toEqual({ reason: expect.stringContaining('runs[0].tool.driver') });
    expect(await imported({ runs: [] }, ctx)).toEqual({ reason: 'the SARIF document holds no runs' });
  });

  it('refuses the whole document when one converted report fails validation', async () => {
    const bad = codeqlRun({ invocations: [{ endTimeUtc: 'yesterday' }] });
    const out = await importDocument('sarif', { runs: [codeqlRun(), bad] }, ctxOf(Buffer.from('x')), LIMITS);
    expect(out).toEqual({ reason: expect.stringMatching(/^report of runs\[1\]: end_time: must be a timestamp/) });
    const noSummary = codeqlRun({ results: [{ message: { text: 'no rule at all' } }] });
    expect(await importDocument('sarif', { runs: [noSummary] }, ctxOf(Buffer.from('x')), LIMITS)).toEqual({
      reason: expect.stringContaining('vulnerabilities[0].summary: must be a non-empty string'),
    });
  });
});
