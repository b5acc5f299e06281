import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findingId, issueId, targetId } from '../src/domain/ids.js';
import { entityMttrResponse, findingListResponse, findingResponse } from '../src/findings/schema.js';
import { issueListResponse, issueResponse } from '../src/issues/schema.js';
import { targetListResponse } from '../src/targets/schema.js';
import { byteOrder, epoch, failure, get, ingest, ingestInOrder } from './support/api.js';
import { fid, I1, I2, I3, I4, I5, iid, loadCatalog, NOW, T1, T2, T3, TEAM_B, tid } from './support/api-catalog.js';
import { report, type VulnSpec } from './support/reports.js';
import { startTestService, type TestService } from './support/service.js';

/**
 * The issue endpoints (SPEC §2.2, §6.4, §6.9) on the catalog of test/support/api-catalog.ts plus
 * reports exercising the earliest/latest detection rules (arriving out of order) and findings of
 * one issue on one target at several affected resources.
 */

const vuln = (v: VulnSpec) => v;
// Issue details come from the earliest detection, labels from the latest with labels (SPEC §2.2).
const Q = (extra: Partial<VulnSpec>) => vuln({ summary: 'Header Missing', description: 'X-Frame-Options is not set.', score: 4, ...extra });
const qReports = [
  report({
    check_id: 'q3',
    target: 'q.example.com',
    end_time: '2024-01-03 00:00:00',
    vulnerabilities: [Q({ cwe_id: 3, recommendations: ['third'], references: ['https://3'], labels: ['c'] })],
  }),
  report({
    check_id: 'q4',
    target: 'q.example.com',
    end_time: '2024-01-04 00:00:00',
    vulnerabilities: [Q({ cwe_id: 4, recommendations: ['fourth'] })],
  }),
  report({
    check_id: 'q1',
    target: 'q.example.com',
    end_time: '2024-01-01 00:00:00',
    vulnerabilities: [Q({ cwe_id: 1, recommendations: ['first'], references: ['https://1'], labels: [] })],
  }),
  report({
    check_id: 'q2',
    target: 'q.example.com',
    end_time: '2024-01-02 00:00:00',
    vulnerabilities: [Q({ cwe_id: 2, labels: ['b', 'a', 'b', ''] })],
  }),
];
const QID = issueId('Header Missing', 'X-Frame-Options is not set.');

// Equal source times: details from the smallest check_id, labels from the greatest.
const TIE = (extra: Partial<VulnSpec>) => vuln({ summary: 'Tie', description: 'Equal times.', score: 1, ...extra });
const tieReports = [
  report({
    check_id: 'k-b',
    target: 'kb.example.com',
    end_time: '2024-01-05 00:00:00',
    vulnerabilities: [TIE({ cwe_id: 22, labels: ['from-b'] })],
  }),
  report({
    check_id: 'k-a',
    target: 'ka.example.com',
    end_time: '2024-01-05 00:00:00',
    vulnerabilities: [TIE({ cwe_id: 11, labels: ['from-a'] })],
  }),
];
// One report, two entries of an issue: details from the first position, labels from the last.
const POS = (extra: Partial<VulnSpec>) => vuln({ summary: 'Positions', description: 'Two entries.', score: 1, ...extra });
const positionReport = report({
  check_id: 'pos',
  target: 'pos.example.com',
  end_time: '2024-01-06 00:00:00',
  vulnerabilities: [
    POS({ affected_resource: 'a', cwe_id: 10, labels: ['zeta', 'Alpha', 'alpha', '', 'zeta'] }),
    POS({ affected_resource: 'b', cwe_id: 20, labels: ['last', 'Last'] }),
  ],
});

// One issue, several affected resources on a target (SPEC §6.4): the latest FOUND event wins, ties by id.
const R = (affected_resource: string, extra: Partial<VulnSpec> = {}) =>
  vuln({ summary: 'Directory Listing', description: 'Listing enabled.', score: 5, affected_resource, ...extra });
const RID = issueId('Directory Listing', 'Listing enabled.');
const URLISH = 'https://r1.example.com/a b?c=d/e&f=%41';
const resourceReports = [
  report({
    check_id: 'r1',
    target: 'r1.example.com',
    end_time: '2024-01-01 00:00:00',
    vulnerabilities: [
      R('/login'),
      R('/admin'),
      R(URLISH, {
        affected_resource_string: 'Login page',
        details: 'Listing of /a',
        impact_details: 'Reveals files',
        resources: [{ Name: 'Forms', Header: ['Path', 'Method'], Rows: [{ Path: '/a', Method: 'POST' }] }],
      }),
    ],
  }),
  report({ check_id: 'r2a', target: 'r2.example.com', end_time: '2024-01-01 00:00:00', vulnerabilities: [R('/login'), R('/admin')] }),
  report({
    check_id: 'r2b',
    target: 'r2.example.com',
    options: '{"deep":true}',
    end_time: '2024-01-02 00:00:00',
    vulnerabilities: [R('/login')],
  }),
];
const rFinding = (target: string, resource: string) => findingId(targetId(target), RID, resource);

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ now: () => epoch(NOW) });
  await loadCatalog(svc);
  // Each claim stays in its own part: the read, not a background merge, must pick the winners.
  await svc.store.command('SYSTEM STOP MERGES issues');
  await ingestInOrder(svc, qReports);
  await ingest(svc, [...tieReports, positionReport, ...resourceReports]);
});
afterAll(() => svc.close());

const ALL_ISSUES = () =>
  byteOrder([iid(I1), iid(I2), iid(I3), iid(I4), iid(I5), QID, issueId('Tie', 'Equal times.'), issueId('Positions', 'Two entries.'), RID]);

describe('GET /issues', () => {
  it('lists every issue in ascending id order', async () => {
    const { pagination, issues } = await get(svc, '/issues', issueListResponse);
    expect(pagination).toEqual({ limit: 20, offset: 0, total: 9, more: false });
    expect(issues.map((i) => i.id)).toEqual(ALL_ISSUES());
  });

  it('pages issues, 404 Page Not Found past the end and an empty page at the end', async () => {
    const second = await get(svc, '/issues?size=4&page=2', issueListResponse);
    expect(second.pagination).toEqual({ limit: 4, offset: 4, total: 9, more: true });
    expect(second.issues.map((i) => i.id)).toEqual(ALL_ISSUES().slice(4, 8));
    expect(await get(svc, '/issues?size=9&page=2', issueListResponse)).toEqual({
      pagination: { limit: 9, offset: 9, total: 9, more: false },
      issues: [],
    });
    expect(await failure(svc, '/issues?size=4&page=4')).toEqual({ status: 404, body: { message: 'Page Not Found' } });
  });
});

describe('GET /issues/{id}', () => {
  it('answers the issue with every field', async () => {
    expect(await get(svc, `/issues/${iid(I1)}`, issueResponse)).toEqual({
      issue: {
        id: iid(I1),
        summary: 'SQL Injection',
        cwe_id: 0,
        description: 'Unsanitised input reaches SQL.',
        recommendations: [],
        reference_links: [],
        labels: ['owasp', 'web'],
      },
    });
  });

  it('takes details from the earliest detection and labels from the latest with labels, whatever the arrival order', async () => {
    const [stored] = await svc.store.query<{ parts: number }>(
      "SELECT count() AS parts FROM system.parts WHERE active AND database = currentDatabase() AND table = 'issues'",
    );
    expect(stored?.parts).toBeGreaterThanOrEqual(qReports.length); // the claims were not merged before this read
    const { issue } = await get(svc, `/issues/${QID}`, issueResponse);
    expect(issue).toMatchObject({ cwe_id: 1, recommendations: ['first'], reference_links: ['https://1'], labels: ['c'] });
    const { issues } = await get(svc, '/issues?size=100', issueListResponse);
    expect(issues.filter((i) => i.id === QID)).toHaveLength(1);
  });

  it('breaks equal source times by check_id: details from the smallest, labels from the greatest', async () => {
    const { issue } = await get(svc, `/issues/${issueId('Tie', 'Equal times.')}`, issueResponse);
    expect([issue.cwe_id, issue.labels]).toEqual([11, ['from-b']]);
  });

  it('breaks ties within a report by position: details from the first entry, labels from the last', async () => {
    const { issue } = await get(svc, `/issues/${issueId('Positions', 'Two entries.')}`, issueResponse);
    expect([issue.cwe_id, issue.labels]).toEqual([10, ['Last', 'last']]);
  });

  it('answers 404 Not Found for an unknown id and for an id that is not a UUID', async () => {
    for (const id of ['00000000-0000-4000-8000-000000000000', 'SQL%20Injection', tid(T1)]) {
      expect(await failure(svc, `/issues/${id}`)).toEqual({ status: 404, body: { message: 'Not Found' } });
    }
  });
});

describe('GET /issues/{id}/findings', () => {
  it("lists the issue's findings, whatever their status, in ascending id order", async () => {
    const { pagination, findings } = await get(svc, `/issues/${iid(I1)}/findings`, findingListResponse);
    expect(pagination.total).toBe(2);
    expect(findings.map((f) => f.id)).toEqual(byteOrder([fid(T1, I1), fid(T2, I1)]));
  });

  it('applies the common filters', async () => {
    expect((await get(svc, `/issues/${iid(I1)}/findings?status=OPEN`, findingListResponse)).findings.map((f) => f.id)).toEqual([
      fid(T2, I1),
    ]);
    expect((await get(svc, `/issues/${iid(I2)}/findings?team=${TEAM_B}`, findingListResponse)).findings.map((f) => f.id)).toEqual([
      fid(T3, I2),
    ]);
    expect(
      (await get(svc, `/issues/${iid(I1)}/findings?status=FIXED&minDate=2024-02-10`, findingListResponse)).findings.map((f) => f.id),
    ).toEqual([fid(T1, I1)]);
  });

  it('pages and sorts like /findings', async () => {
    const { pagination, findings } = await get(svc, `/issues/${RID}/findings?sortBy=-score&size=2&page=2`, findingListResponse);
    expect(pagination).toEqual({ limit: 2, offset: 2, total: 5, more: true });
    const all = byteOrder([
      rFinding('r1.example.com', '/login'),
      rFinding('r1.example.com', '/admin'),
      rFinding('r1.example.com', URLISH),
      rFinding('r2.example.com', '/login'),
      rFinding('r2.example.com', '/admin'),
    ]);
    expect(findings.map((f) => f.id)).toEqual(all.slice(2, 4)); // equal scores: ascending id
    expect(await failure(svc, `/issues/${RID}/findings?size=2&page=4`)).toEqual({ status: 404, body: { message: 'Page Not Found' } });
  });

  it('answers an empty list for an unknown issue and for an id that is not a UUID', async () => {
    const empty = { pagination: { limit: 20, offset: 0, total: 0, more: false }, findings: [] };
    expect(await get(svc, '/issues/00000000-0000-4000-8000-000000000000/findings', findingListResponse)).toEqual(empty);
    expect(await get(svc, '/issues/nope/findings?status=OPEN', findingListResponse)).toEqual(empty);
  });
});

describe('GET /issues/{id}/targets', () => {
  it('lists the targets having a finding of the issue, any status, in ascending id order', async () => {
    const { pagination, targets } = await get(svc, `/issues/${iid(I1)}/targets`, targetListResponse);
    expect(pagination).toEqual({ limit: 20, offset: 0, total: 2, more: false });
    expect(targets).toEqual(
      [
        { id: tid(T1), identifier: T1, teams: ['a3c5e7f9-1b2d-4f6a-8c0e-2b4d6f8a0c1e'] },
        { id: tid(T2), identifier: T2, teams: ['a3c5e7f9-1b2d-4f6a-8c0e-2b4d6f8a0c1e', TEAM_B] },
      ].sort((a, b) => (a.id < b.id ? -1 : 1)),
    );
  });

  it('counts a target with several findings of the issue once, and pages', async () => {
    const first = await get(svc, `/issues/${RID}/targets?size=1`, targetListResponse);
    expect(first.pagination).toEqual({ limit: 1, offset: 0, total: 2, more: true });
    expect(first.targets.map((t) => t.id)).toEqual(byteOrder([tid('r1.example.com'), tid('r2.example.com')]).slice(0, 1));
    expect(await failure(svc, `/issues/${RID}/targets?size=1&page=4`)).toEqual({ status: 404, body: { message: 'Page Not Found' } });
  });

  it('answers an empty list for an unknown issue', async () => {
    const empty = { pagination: { limit: 20, offset: 0, total: 0, more: false }, targets: [] };
    expect(await get(svc, '/issues/00000000-0000-4000-8000-000000000000/targets', targetListResponse)).toEqual(empty);
    expect(await get(svc, '/issues/nope/targets', targetListResponse)).toEqual(empty);
  });
});

describe('GET /issues/{id}/targets/{target_id}', () => {
  it("answers the issue's finding on the target", async () => {
    const { finding } = await get(svc, `/issues/${iid(I5)}/targets/${tid(T3)}`, findingResponse);
    expect(finding).toMatchObject({ id: fid(T3, I5), score: 7.5, status: 'OPEN', total_exposure: 348 });
  });

  it('answers the finding with the latest FOUND event when the target holds several', async () => {
    const { finding } = await get(svc, `/issues/${RID}/targets/${tid('r2.example.com')}`, findingResponse);
    expect(finding.id).toBe(rFinding('r2.example.com', '/login'));
  });

  it('breaks equal latest FOUND events by ascending id', async () => {
    const { finding } = await get(svc, `/issues/${RID}/targets/${tid('r1.example.com')}`, findingResponse);
    expect(finding.id).toBe(byteOrder(['/login', '/admin', URLISH].map((r) => rFinding('r1.example.com', r)))[0]);
  });

  it('answers 404 Not Found when the target holds no finding of the issue, or either id is unknown', async () => {
    for (const path of [
      `/issues/${iid(I5)}/targets/${tid(T1)}`,
      `/issues/00000000-0000-4000-8000-000000000000/targets/${tid(T1)}`,
      `/issues/${iid(I1)}/targets/nope`,
    ]) {
      expect(await failure(svc, path)).toEqual({ status: 404, body: { message: 'Not Found' } });
    }
  });
});

describe('GET /issues/{id}/targets/{target_id}/resources/{resource}', () => {
  it('answers the finding of that exact affected resource', async () => {
    const { finding } = await get(svc, `/issues/${RID}/targets/${tid('r1.example.com')}/resources/%2Fadmin`, findingResponse);
    expect(finding.id).toBe(rFinding('r1.example.com', '/admin'));
  });

  it('URL-decodes the resource and shows affected_resource_string, details and resources of the finding', async () => {
    const { finding } = await get(
      svc,
      `/issues/${RID}/targets/${tid('r1.example.com')}/resources/${encodeURIComponent(URLISH)}`,
      findingResponse,
    );
    expect(finding).toMatchObject({
      id: rFinding('r1.example.com', URLISH),
      affected_resource: 'Login page',
      details: 'Listing of /a',
      impact_details: 'Reveals files',
      resources: [{ name: 'Forms', attributes: ['Path', 'Method'], resources: [{ Path: '/a', Method: 'POST' }] }],
    });
  });

  it('finds a finding whose affected resource is the target identifier', async () => {
    const { finding } = await get(svc, `/issues/${iid(I1)}/targets/${tid(T1)}/resources/${T1}`, findingResponse);
    expect(finding).toMatchObject({ id: fid(T1, I1), status: 'FIXED', affected_resource: T1 });
  });

  it('answers 404 Not Found for another resource', async () => {
    expect(await failure(svc, `/issues/${RID}/targets/${tid('r1.example.com')}/resources/admin`)).toEqual({
      status: 404,
      body: { message: 'Not Found' },
    });
  });
});

describe('GET /issues/{id}/mttr', () => {
  it("answers the mean TTR in days of the issue's closed periods", async () => {
    // T1/I1 was OPEN from 2024-02-01 10:00 to 2024-02-10 10:00: 216 hours = 9 days; T2/I1 is still OPEN.
    expect(await get(svc, `/issues/${iid(I1)}/mttr`, entityMttrResponse)).toEqual({ mttr: 9 });
  });

  it('answers 404 Not Found for an issue without closed periods and for an unknown issue', async () => {
    for (const id of [iid(I5), '00000000-0000-4000-8000-000000000000', 'nope']) {
      expect(await failure(svc, `/issues/${id}/mttr`)).toEqual({ status: 404, body: { message: 'Not Found' } });
    }
  });
});
