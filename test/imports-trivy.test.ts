import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { documentSha256, importDocument } from '../src/imports/formats.js';
import type { ConvertContext, VulcanReport } from '../src/imports/report.js';
import { trivyReports } from '../src/imports/trivy.js';

/** SPEC §13, Trivy JSON: the mapping on Trivy's own test outputs (test/fixtures/README.md). */

const bytesOf = (name: string) => fs.readFileSync(`test/fixtures/trivy/${name}`);
const NOW = '2025-03-01T08:00:00Z';
const ctxOf = (bytes: Buffer, extra: Partial<ConvertContext> = {}): ConvertContext => ({
  sha256: documentSha256(bytes),
  now: NOW,
  ...extra,
});

function convert(bytes: Buffer, extra: Partial<ConvertContext> = {}, document: unknown = JSON.parse(bytes.toString())): VulcanReport[] {
  // The converter's reports as it builds them, before validation (importDocument validates and bounds them).
  return [...trivyReports(document, ctxOf(bytes, extra))].map(({ fields, vulnerabilities }) => ({
    ...fields,
    vulnerabilities: [...vulnerabilities].filter((v) => v !== undefined),
  }));
}

const LIMITS = { maxBytes: 10 * 1024 * 1024 };
/** What importDocument makes of a document: its validated reports, or why it refuses it. */
const imported = (document: unknown, ctx: ConvertContext) => importDocument('trivy', document, ctx, LIMITS);

const alpine = bytesOf('alpine-310.json.golden');
const dockerfile = bytesOf('dockerfile.json.golden');
const IMAGE_TARGET = 'testdata/fixtures/images/alpine-310.tar.gz (alpine 3.10.2)';

describe('a Trivy image scan', () => {
  const [report] = convert(alpine);

  it('is one FINISHED report of check type trivy on the scanned artifact, at the scan time', () => {
    expect(convert(alpine)).toHaveLength(1);
    expect(report).toMatchObject({
      status: 'FINISHED',
      checktype_name: 'trivy',
      checktype_version: 'dev',
      target: 'testdata/fixtures/images/alpine-310.tar.gz',
      end_time: '2021-08-25T12:20:30.000000005Z',
    });
  });

  it('holds every vulnerability of every result, each package a resource of its own', () => {
    expect(report!.vulnerabilities!.map((v) => [v.summary, v.affected_resource])).toEqual([
      ['CVE-2019-1549: openssl: information disclosure in fork()', `libcrypto1.1@1.1.1c-r0 (${IMAGE_TARGET})`],
      ['CVE-2019-1551: openssl: Integer overflow in RSAZ modular exponentiation on x86_64', `libcrypto1.1@1.1.1c-r0 (${IMAGE_TARGET})`],
      ['CVE-2019-1549: openssl: information disclosure in fork()', `libssl1.1@1.1.1c-r0 (${IMAGE_TARGET})`],
      ['CVE-2019-1551: openssl: Integer overflow in RSAZ modular exponentiation on x86_64', `libssl1.1@1.1.1c-r0 (${IMAGE_TARGET})`],
    ]);
  });

  it('scores each vulnerability with its highest CVSS v3 score (nvd 5.3 over redhat 4.8)', () => {
    expect(report!.vulnerabilities!.map((v) => v.score)).toEqual([5.3, 5.3, 5.3, 5.3]);
  });

  it('takes the CWE id, the upgrade advice, the references, the description and the result class', () => {
    const [v1549, v1551] = report!.vulnerabilities!;
    expect(v1549).toMatchObject({
      cwe_id: 330,
      recommendations: ['Upgrade libcrypto1.1 to 1.1.1d-r0'],
      labels: ['os-pkgs'],
      details: expect.stringMatching(/^OpenSSL 1\.1\.1 introduced a rewritten random number generator/),
    });
    expect(v1551).toMatchObject({ cwe_id: 200, recommendations: ['Upgrade libcrypto1.1 to 1.1.1d-r2'] });
    expect(v1549!.references).toHaveLength(20);
    expect(v1549!.references!.slice(0, 2)).toEqual([
      'https://access.redhat.com/security/cve/CVE-2019-1549',
      'https://cve.mitre.org/cgi-bin/cvename.cgi?name=CVE-2019-1549',
    ]);
    expect(v1551!.references).toHaveLength(30);
  });

  it('gets the same check id from the same bytes and another from any other bytes', () => {
    const again = convert(Buffer.from(alpine))[0]!;
    const reformatted = Buffer.from(JSON.stringify(JSON.parse(alpine.toString())));
    expect(again.check_id).toBe(report!.check_id);
    expect(report!.check_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(convert(reformatted)[0]!.check_id).not.toBe(report!.check_id);
  });

  it('passes the validation of SPEC §3.3 unchanged', async () => {
    const out = await importDocument('trivy', JSON.parse(alpine.toString()), ctxOf(alpine), LIMITS);
    expect('reports' in out && out.reports[0]!.vulnerabilities).toHaveLength(4);
  });
});

describe('the Trivy mapping rules', () => {
  const doc = () => JSON.parse(alpine.toString());

  it('lets the target parameter override ArtifactName', () => {
    expect(convert(alpine, { target: 'registry.example.com/app:1.2' })[0]!.target).toBe('registry.example.com/app:1.2');
  });

  it('takes the time parameter, then the request time, when the document has no CreatedAt', () => {
    const d = doc();
    delete d.CreatedAt;
    expect(convert(alpine, { time: '2024-06-01T12:00:00Z' }, d)[0]!.end_time).toBe('2024-06-01T12:00:00Z');
    expect(convert(alpine, {}, d)[0]!.end_time).toBe(NOW);
    // The document's own time wins over the parameter.
    expect(convert(alpine, { time: '2024-06-01T12:00:00Z' })[0]!.end_time).toBe('2021-08-25T12:20:30.000000005Z');
  });

  it('scores by Severity without a CVSS v3 score, skips non-CWE ids, and advises nothing without a fixed version', () => {
    const d = doc();
    const [a, b, c] = d.Results[0].Vulnerabilities;
    delete a.CVSS;
    a.Severity = 'CRITICAL';
    a.CweIDs = ['NVD-CWE-Other', 'CWE-79'];
    b.CVSS = { nvd: { V2Score: 5 } };
    b.Severity = 'UNKNOWN';
    delete c.FixedVersion;
    delete c.Title;
    const [va, vb, vc] = convert(alpine, {}, d)[0]!.vulnerabilities!;
    expect(va).toMatchObject({ score: 9.0, cwe_id: 79 });
    expect(vb!.score).toBe(0);
    expect(vc).toMatchObject({ summary: 'CVE-2019-1549', recommendations: [] });
  });

  it.each([
    ['HIGH', 7.0],
    ['MEDIUM', 4.0],
    ['LOW', 1.0],
  ])('scores Severity %s as %d', (severity, score) => {
    const d = doc();
    const v = d.Results[0].Vulnerabilities[0];
    delete v.CVSS;
    v.Severity = severity;
    expect(convert(alpine, {}, d)[0]!.vulnerabilities![0]!.score).toBe(score);
  });

  it('refuses a document that is not Trivy JSON, and one that names no target', async () => {
    expect(await imported({ runs: [] }, ctxOf(alpine))).toEqual({
      reason: expect.stringMatching(/^not a Trivy JSON document: SchemaVersion/),
    });
    expect(await imported([1, 2], ctxOf(alpine))).toEqual({ reason: expect.stringContaining('not a Trivy JSON document') });
    const d = doc();
    d.Results[0].Vulnerabilities[1].CweIDs = 'CWE-1';
    expect(await imported(d, ctxOf(alpine))).toEqual({ reason: expect.stringContaining('Results[0].Vulnerabilities[1].CweIDs') });
    const anonymous = doc();
    delete anonymous.ArtifactName;
    expect(await imported(anonymous, ctxOf(alpine))).toEqual({ reason: expect.stringContaining('names no target') });
    expect(convert(alpine, { target: 'app' }, anonymous)[0]!.target).toBe('app');
  });

  it('makes a scan without results a clean report', () => {
    const d = doc();
    delete d.Results;
    expect(convert(alpine, {}, d)[0]!.vulnerabilities).toEqual([]);
  });
});

describe('a Trivy configuration and secret scan', () => {
  it('maps a failed misconfiguration to a vulnerability of the file, scored by severity', () => {
    const [report] = convert(dockerfile);
    expect(report!.target).toBe('testdata/fixtures/repo/dockerfile');
    expect(report!.vulnerabilities).toEqual([
      {
        summary: "DS-0002: Image user should not be 'root'",
        score: 7.0,
        affected_resource: 'Dockerfile',
        details: expect.stringMatching(/^Running containers with 'root' user/),
        recommendations: ["Add 'USER <non root user name>' line to the Dockerfile"],
        references: [
          'https://docs.docker.com/develop/develop-images/dockerfile_best-practices/',
          'https://avd.aquasec.com/misconfig/ds-0002',
        ],
        labels: ['config'],
      },
    ]);
  });

  it('leaves out passed checks and maps secrets to their file and line', () => {
    const d = JSON.parse(dockerfile.toString());
    d.Results[0].Misconfigurations.push({ ...d.Results[0].Misconfigurations[0], ID: 'DS-0001', Status: 'PASS' });
    d.Results.push({
      Target: 'deploy/.env',
      Class: 'secret',
      Secrets: [
        { RuleID: 'aws-access-key-id', Category: 'AWS', Severity: 'CRITICAL', Title: 'AWS Access Key ID', StartLine: 3, Match: 'AWS=****' },
        { RuleID: 'private-key', Severity: 'HIGH' },
      ],
    });
    const vulnerabilities = convert(dockerfile, {}, d)[0]!.vulnerabilities!;
    expect(vulnerabilities.map((v) => v.summary)).toEqual([
      "DS-0002: Image user should not be 'root'",
      'aws-access-key-id: AWS Access Key ID',
      'private-key',
    ]);
    expect(vulnerabilities[1]).toEqual({
      summary: 'aws-access-key-id: AWS Access Key ID',
      score: 9.0,
      affected_resource: 'deploy/.env:3',
      labels: ['secret'],
    });
    expect(vulnerabilities[2]).toMatchObject({ score: 7.0, affected_resource: 'deploy/.env' });
  });
});
