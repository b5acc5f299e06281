import { createSecretKey } from 'node:crypto';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signJwt } from '../src/metrics/sign.js';
import { json, startTestService, type TestService } from './support/service.js';

/**
 * POST /imports/{format} (SPEC §13) end to end: documents converted, queued on `checks` and applied
 * by the real worker, then read back through the database API.
 */

const fixture = (name: string) => fs.readFileSync(`test/fixtures/trivy/${name}`, 'utf8');
const TRIVY = fixture('alpine-310.json.golden');
const SARIF = fixture('alpine-310.sarif.golden');
const IMAGE = 'ghcr.io/aquasecurity/trivy-test-images:alpine-310';
const RESULT_TARGET = 'testdata/fixtures/images/alpine-310.tar.gz (alpine 3.10.2)';

const post = (svc: TestService, path: string, body: string, contentType = 'application/json') =>
  svc.db(path, { method: 'POST', headers: { 'Content-Type': contentType }, body });

async function findingsOf(svc: TestService, identifier: string): Promise<any[]> {
  const page = await json(svc.db(`/findings?identifier=${encodeURIComponent(identifier)}&identifiermatch=true&size=100`));
  return page.findings;
}
const size = async (svc: TestService) => (await json(svc.db('/stats/size'))).size;
const ZERO = { sources: 0, targets: 0, issues: 0, findings: 0, finding_events: 0 };

/** The Trivy document of a later scan of the image: `CreatedAt` moved on, the vulnerabilities kept by `keep`. */
function laterTrivyScan(createdAt: string, keep: (v: any) => boolean): string {
  const doc = JSON.parse(TRIVY);
  doc.CreatedAt = createdAt;
  doc.Results[0].Vulnerabilities = doc.Results[0].Vulnerabilities.filter(keep);
  return JSON.stringify(doc, null, 2);
}

describe('importing documents over HTTP', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(() => svc.close());

  it('stores a Trivy image scan as the findings §13 maps it to', async () => {
    const accepted = await json(post(svc, `/imports/trivy?target=${encodeURIComponent(IMAGE)}`, TRIVY), 202);
    expect(accepted).toEqual({ job_ids: [expect.any(String)], reports: 1 });
    await svc.settle();

    const findings = await findingsOf(svc, IMAGE);
    const doc = JSON.parse(TRIVY);
    const vulnerabilities = doc.Results[0].Vulnerabilities;
    // Packages with the same CVE share its issue, whose recommendations come from the earliest detection: the first package's.
    const firstOf = (id: string) => vulnerabilities.find((v: any) => v.VulnerabilityID === id);
    const expected = vulnerabilities.map((v: any) => {
      const summary = `${v.VulnerabilityID}: ${v.Title}`;
      const resource = `${v.PkgName}@${v.InstalledVersion} (${RESULT_TARGET})`;
      const finding = {
        affected_resource: resource,
        status: 'OPEN',
        score: 5.3,
        details: v.Description,
        issue: expect.objectContaining({
          summary,
          description: '',
          cwe_id: Number(v.CweIDs[0].slice(4)),
          recommendations: [`Upgrade ${firstOf(v.VulnerabilityID).PkgName} to ${v.FixedVersion}`],
          reference_links: v.References,
          labels: ['os-pkgs'],
        }),
        source: expect.objectContaining({ component: 'trivy', time: '2021-08-25T12:20:30Z' }),
      };
      return [`${summary} on ${resource}`, expect.objectContaining(finding)];
    });
    expect(Object.fromEntries(findings.map((f) => [`${f.issue.summary} on ${f.affected_resource}`, f]))).toEqual(
      Object.fromEntries(expected),
    );
    expect(findings).toHaveLength(4);
  });

  it('finds the same document imported twice a duplicate with no effect', async () => {
    const before = await size(svc);
    await json(post(svc, `/imports/trivy?target=${encodeURIComponent(IMAGE)}`, TRIVY), 202);
    await svc.settle();
    expect(await size(svc)).toEqual(before);
  });

  it('fixes exactly the vulnerability a later scan of the image no longer reports', async () => {
    const later = laterTrivyScan('2021-08-26T12:00:00Z', (v) => !(v.VulnerabilityID === 'CVE-2019-1551' && v.PkgName === 'libssl1.1'));
    await json(post(svc, `/imports/trivy?target=${encodeURIComponent(IMAGE)}`, later), 202);
    await svc.settle();
    const findings = await findingsOf(svc, IMAGE);
    const states = Object.fromEntries(
      findings.map((f) => [`${f.issue.summary.slice(0, 13)} ${f.affected_resource.split('@')[0]}`, f.status]),
    );
    expect(states).toEqual({
      'CVE-2019-1549 libcrypto1.1': 'OPEN',
      'CVE-2019-1551 libcrypto1.1': 'OPEN',
      'CVE-2019-1549 libssl1.1': 'OPEN',
      'CVE-2019-1551 libssl1.1': 'FIXED',
    });
  });

  it("stores a SARIF document's results, one finding per rule and location, at the time given", async () => {
    const target = 'sarif.example.com';
    const accepted = await json(post(svc, `/imports/sarif?target=${target}&time=2024-06-01T12:00:00.750%2B02:00`, SARIF), 202);
    expect(accepted).toEqual({ job_ids: [expect.any(String)], reports: 1 });
    await svc.settle();
    const findings = await findingsOf(svc, target);
    const rules = JSON.parse(SARIF).runs[0].tool.driver.rules;
    // Four results, two per rule on the same location: the same finding twice (SPEC §3.4 step 5).
    expect(findings.map((f) => f.issue.summary).sort()).toEqual(rules.map((r: any) => r.shortDescription.text).sort());
    for (const f of findings) {
      const rule = rules.find((r: any) => r.shortDescription.text === f.issue.summary);
      expect(f).toMatchObject({
        affected_resource: 'testdata/fixtures/images/alpine-310.tar.gz:1',
        score: Number(rule.properties['security-severity']),
        status: 'OPEN',
        issue: {
          cwe_id: 0,
          recommendations: [rule.help.text],
          reference_links: [rule.helpUri],
          labels: ['MEDIUM', 'security', 'vulnerability'],
        },
        source: { component: 'Trivy', time: '2024-06-01T10:00:00Z' },
      });
    }
  });

  it('accepts the SARIF media type for SARIF documents', async () => {
    const res = await post(svc, '/imports/sarif?target=sarif-type.example.com', SARIF, 'application/sarif+json');
    expect(res.status).toBe(202);
    expect((await post(svc, '/imports/trivy', TRIVY, 'application/sarif+json')).status).toBe(415);
  });

  it('accepts a real-sized document with thousands of vulnerabilities as one report', async () => {
    const doc = JSON.parse(TRIVY);
    const [template] = doc.Results[0].Vulnerabilities;
    doc.Results[0].Vulnerabilities = Array.from({ length: 3000 }, (_, i) => ({ ...template, PkgName: `pkg-${i}` }));
    const body = JSON.stringify(doc);
    expect(body.length).toBeGreaterThan(5 * 1024 * 1024);
    const accepted = await json(post(svc, '/imports/trivy?target=big.example.com', body), 202);
    expect(accepted.reports).toBe(1);
    await svc.settle(120_000);
    const page = await json(svc.db('/findings?identifier=big.example.com&identifiermatch=true&size=1'));
    expect(page.pagination.total).toBe(3000);
  }, 180_000);
});

describe('documents an import refuses', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ env: { MAX_REPORT_BYTES: String(64 * 1024) } });
  });
  afterAll(() => svc.close());

  const twoRuns = (second: Record<string, unknown>) => {
    const run = JSON.parse(SARIF).runs[0];
    return JSON.stringify({ version: '2.1.0', runs: [run, { ...run, ...second }] });
  };

  it.each([
    ['not JSON', '/imports/sarif?target=x', '{"runs": [', /^request body is not valid JSON/],
    ['a SARIF document sent as Trivy', '/imports/trivy?target=x', SARIF, /^not a Trivy JSON document: SchemaVersion/],
    ['a Trivy document sent as SARIF', '/imports/sarif?target=x', TRIVY, /^not a SARIF 2\.1\.0 document: runs/],
    ['a SARIF run without a target', '/imports/sarif', SARIF, /^runs\[0\] .*names no target/],
    [
      'a document one of whose reports is invalid',
      '/imports/sarif?target=x',
      twoRuns({ invocations: [{ endTimeUtc: 'last tuesday' }] }),
      /^report of runs\[1\]: end_time: must be a timestamp/,
    ],
  ])('refuses %s with 400 and the reason, and stores nothing', async (_, path, body, reason) => {
    const res = await post(svc, path, body);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { message: string }).message).toMatch(reason);
    await svc.settle();
    expect(await svc.queue!.getJobCounts('waiting', 'active', 'completed', 'failed')).toEqual({
      waiting: 0,
      active: 0,
      completed: 0,
      failed: 0,
    });
    expect(await size(svc)).toEqual(ZERO);
  });

  it.each([
    ['an unknown format', 'POST', '/imports/cyclonedx', 404, 'Not Found'],
    ['a malformed time', 'POST', '/imports/sarif?target=x&time=2024-02-30T10:00:00Z', 400, 'Malformed Time'],
    ['a time that is not RFC 3339', 'POST', '/imports/sarif?target=x&time=2024-02-01', 400, 'Malformed Time'],
    ['two targets', 'POST', '/imports/sarif?target=x&target=y', 400, 'Malformed Target'],
    ['another method', 'GET', '/imports/sarif', 405, 'Method Not Allowed'],
  ])('answers %s with %s %i', async (_, method, path, status, message) => {
    const res = await svc.db(path, method === 'GET' ? {} : { method, headers: { 'Content-Type': 'application/json' }, body: SARIF });
    expect({ status: res.status, body: await res.json() }).toEqual({ status, body: { message } });
  });

  it('answers 413 beyond MAX_REPORT_BYTES and 415 for a body that is not JSON', async () => {
    const big = JSON.stringify({ runs: [], padding: 'x'.repeat(64 * 1024) });
    expect(await json(post(svc, '/imports/sarif?target=x', big), 413)).toEqual({ message: 'Request Entity Too Large' });
    expect(await json(post(svc, '/imports/sarif?target=x', SARIF, 'text/plain'), 415)).toEqual({ message: 'Unsupported Media Type' });
    expect(await size(svc)).toEqual(ZERO);
  });
});

describe('imports under DB_API_AUTH=jwt', () => {
  const SECRET = 'imports-auth-test-secret-0123456789abcdef';
  const key = createSecretKey(Buffer.from(SECRET));
  const now = () => Math.floor(Date.now() / 1000);
  const bearer = (claims: Record<string, unknown>) => ({
    Authorization: `Bearer ${signJwt({ sub: 't', exp: now() + 600, ...claims }, key, 'HS256')}`,
  });
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ worker: false, env: { DB_API_AUTH: 'jwt', JWT_SECRET: SECRET } });
  });
  afterAll(() => svc.close());

  const send = (headers: Record<string, string>) =>
    svc.db('/imports/trivy', { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body: TRIVY });

  it('needs the write scope of POST /checks: none 401, a team member 403, ingest or admin 202', async () => {
    expect((await send({})).status).toBe(401);
    expect((await send(bearer({ teams: ['a1000000-0000-4000-8000-00000000000a'] }))).status).toBe(403);
    expect((await send(bearer({ scopes: ['ingest'] }))).status).toBe(202);
    expect((await send(bearer({ admin: true }))).status).toBe(202);
  });
});
