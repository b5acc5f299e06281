import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { entityMttrResponse, findingListResponse, findingResponse } from '../src/findings/schema.js';
import { issueListResponse } from '../src/issues/schema.js';
import { assetStatsResponse, openStatsResponse } from '../src/stats/schema.js';
import { targetListResponse, targetResponse } from '../src/targets/schema.js';
import { byteOrder, epoch, failure, get, ingest } from './support/api.js';
import { fid, I1, I2, I3, I4, iid, idsWhere, loadCatalog, NOW, T1, T2, T3, T4, TEAM_A, TEAM_B, tid } from './support/api-catalog.js';
import { report, V } from './support/reports.js';
import { json, startTestService, type TestService } from './support/service.js';

/**
 * The target endpoints (SPEC §6.5, §6.6, §6.9) on the catalog of test/support/api-catalog.ts plus a
 * target created by POST /targets that has no findings.
 */

const T5 = 'epsilon.example.com'; // created by POST /targets, TEAM_B, no findings
const EMPTY_PAGE = { limit: 20, offset: 0, total: 0, more: false };

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ now: () => epoch(NOW) });
  await loadCatalog(svc);
  await json(svc.postJson('/targets', { identifier: T5, teams: [TEAM_B] }), 201);
});
afterAll(() => svc.close());

const targetIds = async (query = '') =>
  (await get(svc, `/targets${query ? `?${query}` : ''}`, targetListResponse)).targets.map((t) => t.id);
const ids = (...identifiers: string[]) => byteOrder(identifiers.map(tid));

describe('GET /targets', () => {
  it('lists every target, those without findings included, in ascending id order', async () => {
    const { pagination, targets } = await get(svc, '/targets', targetListResponse);
    expect(pagination).toEqual({ limit: 20, offset: 0, total: 5, more: false });
    expect(targets.map((t) => t.id)).toEqual(ids(T1, T2, T3, T4, T5));
    expect(targets.find((t) => t.identifier === T2)).toEqual({ id: tid(T2), identifier: T2, teams: [TEAM_A, TEAM_B] });
    expect(targets.find((t) => t.identifier === T4)).toEqual({ id: tid(T4), identifier: T4, teams: [] });
  });

  it('pages targets', async () => {
    const { pagination, targets } = await get(svc, '/targets?size=2&page=3', targetListResponse);
    expect(pagination).toEqual({ limit: 2, offset: 4, total: 5, more: false });
    expect(targets.map((t) => t.id)).toEqual(ids(T1, T2, T3, T4, T5).slice(4));
    expect(await failure(svc, '/targets?size=2&page=4')).toEqual({ status: 404, body: { message: 'Page Not Found' } });
  });

  it('team selects the targets associated with it', async () => {
    expect(await targetIds(`team=${TEAM_B}`)).toEqual(ids(T2, T3, T5));
  });

  it('teams lists a target associated with two listed teams once', async () => {
    const { pagination, targets } = await get(svc, `/targets?teams=${TEAM_A},${TEAM_B}`, targetListResponse);
    expect(pagination.total).toBe(4);
    expect(targets.map((t) => t.id)).toEqual(ids(T1, T2, T3, T5));
  });

  it('identifier matches a substring, or the whole identifier with identifiermatch', async () => {
    expect(await targetIds('identifier=example.com')).toEqual(ids(T1, T2, T5));
    expect(await targetIds(`identifier=${T3}&identifiermatch=T`)).toEqual(ids(T3));
    expect(await targetIds('identifier=gamma&identifiermatch=True')).toEqual([]);
    expect(await targetIds('identifier=Gamma')).toEqual([]);
  });

  it('identifiers selects exact identifiers', async () => {
    expect(await targetIds(`identifiers=${T4},${T5},missing.example.com`)).toEqual(ids(T4, T5));
  });

  it('filters combine with AND', async () => {
    expect(await targetIds(`team=${TEAM_A}&identifier=beta`)).toEqual(ids(T2));
    expect(await targetIds(`teams=${TEAM_B}&identifiers=${T1}`)).toEqual([]);
  });
});

describe('GET /targets/{id}', () => {
  it('answers the target with its teams in association order', async () => {
    expect(await get(svc, `/targets/${tid(T2)}`, targetResponse)).toEqual({
      target: { id: tid(T2), identifier: T2, teams: [TEAM_A, TEAM_B] },
    });
  });

  it('answers 404 Not Found for an unknown id and for an identifier used as id', async () => {
    for (const id of ['00000000-0000-4000-8000-000000000000', T1]) {
      expect(await failure(svc, `/targets/${id}`)).toEqual({ status: 404, body: { message: 'Not Found' } });
    }
  });
});

describe('GET /targets/{id}/findings', () => {
  it("lists the target's findings in ascending id order", async () => {
    const { pagination, findings } = await get(svc, `/targets/${tid(T2)}/findings`, findingListResponse);
    expect(pagination).toEqual({ limit: 20, offset: 0, total: 3, more: false });
    expect(findings.map((f) => f.id)).toEqual(idsWhere((f) => f.target === T2));
    // Found 2024-02-05 00:00, read at 2024-03-01 00:00: 25 days.
    expect(findings.every((f) => f.total_exposure === 600 && f.current_exposure === 600)).toBe(true);
  });

  it('applies the common filters and sortBy', async () => {
    expect((await get(svc, `/targets/${tid(T2)}/findings?labels=web,network`, findingListResponse)).findings.map((f) => f.id)).toEqual(
      idsWhere((f) => f.target === T2 && (f.issue === I1 || f.issue === I3)),
    );
    expect((await get(svc, `/targets/${tid(T2)}/findings?sortBy=score`, findingListResponse)).findings.map((f) => f.score)).toEqual([
      0, 3.2, 9.5,
    ]);
    expect((await get(svc, `/targets/${tid(T1)}/findings?status=FIXED`, findingListResponse)).findings.map((f) => f.id)).toEqual([
      fid(T1, I1),
    ]);
  });

  it("pages the target's findings", async () => {
    expect((await get(svc, `/targets/${tid(T2)}/findings?size=2&page=2`, findingListResponse)).pagination).toEqual({
      limit: 2,
      offset: 2,
      total: 3,
      more: false,
    });
    expect(await failure(svc, `/targets/${tid(T2)}/findings?size=1&page=5`)).toEqual({ status: 404, body: { message: 'Page Not Found' } });
  });

  it('answers an empty list for a target without findings, an unknown target, and an id that is not a UUID', async () => {
    for (const id of [tid(T5), '00000000-0000-4000-8000-000000000000', T1]) {
      expect(await get(svc, `/targets/${id}/findings`, findingListResponse)).toEqual({ pagination: EMPTY_PAGE, findings: [] });
    }
  });
});

describe('GET /targets/{id}/issues', () => {
  it('lists the issues with a finding on the target in ascending id order', async () => {
    const { pagination, issues } = await get(svc, `/targets/${tid(T2)}/issues`, issueListResponse);
    expect(pagination).toEqual({ limit: 20, offset: 0, total: 3, more: false });
    expect(issues.map((i) => i.id)).toEqual(byteOrder([iid(I1), iid(I3), iid(I4)]));
    expect(issues.find((i) => i.id === iid(I4))).toEqual({
      id: iid(I4),
      summary: 'Weak Cipher',
      cwe_id: 0,
      description: 'A weak TLS cipher suite.',
      recommendations: [],
      reference_links: [],
      labels: [],
    });
  });

  it('includes issues whose finding on the target is FIXED, and pages', async () => {
    const { pagination, issues } = await get(svc, `/targets/${tid(T1)}/issues?size=1&page=2`, issueListResponse);
    expect(pagination).toEqual({ limit: 1, offset: 1, total: 2, more: false });
    expect(issues.map((i) => i.id)).toEqual(byteOrder([iid(I1), iid(I2)]).slice(1));
  });

  it('answers an empty list for a target without findings and for unknown targets', async () => {
    for (const id of [tid(T5), '00000000-0000-4000-8000-000000000000', 'nope']) {
      expect(await get(svc, `/targets/${id}/issues`, issueListResponse)).toEqual({ pagination: EMPTY_PAGE, issues: [] });
    }
  });
});

describe('GET /targets/{id}/issues/{issue_id} and its resources form', () => {
  it("answers the issue's finding on the target", async () => {
    const { finding } = await get(svc, `/targets/${tid(T2)}/issues/${iid(I3)}`, findingResponse);
    expect(finding).toMatchObject({ id: fid(T2, I3), score: 0, status: 'OPEN', issue: { id: iid(I3) }, target: { id: tid(T2) } });
  });

  it('answers the finding of the exact affected resource', async () => {
    const { finding } = await get(svc, `/targets/${tid(T2)}/issues/${iid(I4)}/resources/${T2}`, findingResponse);
    expect(finding.id).toBe(fid(T2, I4));
  });

  it('answers 404 Not Found when there is no such finding', async () => {
    for (const path of [
      `/targets/${tid(T2)}/issues/${iid(I2)}`,
      `/targets/${tid(T2)}/issues/${iid(I4)}/resources/other`,
      `/targets/nope/issues/${iid(I4)}/resources/${T2}`,
    ]) {
      expect(await failure(svc, path)).toEqual({ status: 404, body: { message: 'Not Found' } });
    }
  });
});

describe('GET /targets/{id}/mttr', () => {
  it("answers the mean TTR in days of the target's closed periods", async () => {
    expect(await get(svc, `/targets/${tid(T1)}/mttr`, entityMttrResponse)).toEqual({ mttr: 9 }); // 216 hours
  });

  it('answers 404 Not Found without closed periods or for an unknown target', async () => {
    for (const id of [tid(T2), tid(T5), '00000000-0000-4000-8000-000000000000', 'nope']) {
      expect(await failure(svc, `/targets/${id}/mttr`)).toEqual({ status: 404, body: { message: 'Not Found' } });
    }
  });
});

describe('team re-association with POST /targets (SPEC §6.6)', () => {
  const TEAM_C = 'c0ffee00-0000-4000-8000-00000000000c';
  let fresh: TestService;
  beforeAll(async () => {
    fresh = await startTestService({ now: () => epoch('2024-01-06T10:00:00Z') });
    await ingest(fresh, [
      report({ check_id: 'x1', target: 'one.example.com', end_time: '2024-01-01 10:00:00', vulnerabilities: [V] }),
      report({ check_id: 'x2', target: 'two.example.com', end_time: '2024-01-02 10:00:00', vulnerabilities: [V] }),
    ]);
    await json(fresh.postJson('/targets', { identifier: 'one.example.com', teams: [TEAM_C] }), 201);
  });
  afterAll(() => fresh.close());

  it("a newly associated team sees the target's findings, statistics and assets at once, also for past dates", async () => {
    expect((await get(fresh, `/findings?team=${TEAM_C}`, findingListResponse)).pagination.total).toBe(1);
    expect((await get(fresh, `/stats/open?team=${TEAM_C}`, openStatsResponse)).open_issues.medium).toBe(1);

    await json(fresh.postJson('/targets', { identifier: 'two.example.com', teams: [TEAM_C] }), 201);

    const { findings } = await get(fresh, `/findings?team=${TEAM_C}`, findingListResponse);
    expect(findings.map((f) => f.target.identifier).sort()).toEqual(['one.example.com', 'two.example.com']);
    expect(findings.every((f) => f.teams.includes(TEAM_C))).toBe(true);
    expect((await get(fresh, `/findings?team=${TEAM_C}&atDate=2024-01-03`, findingListResponse)).pagination.total).toBe(2);
    expect((await get(fresh, `/stats/open?team=${TEAM_C}`, openStatsResponse)).open_issues.medium).toBe(2);
    expect((await get(fresh, `/stats/assets?team=${TEAM_C}`, assetStatsResponse)).assets).toMatchObject({ total: 2, medium: 2 });
    expect((await get(fresh, `/targets?team=${TEAM_C}`, targetListResponse)).pagination.total).toBe(2);
  });
});
