import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bySeverity, fetchMetric, METRICS_SECRET, metricsToken } from './support/metrics.js';
import { report, V } from './support/reports.js';
import { json, REDIS_URL, startTestService, type TestService } from './support/service.js';

/**
 * Precise invalidation (issue 32): a committed batch bumps the data versions of its targets' teams
 * and of answers about all teams, so a team's cached answers outlive batches on other teams'
 * targets, while every answer the batch changed is recomputed — read right after the batch's job
 * completes, it already shows the batch (the cache is exact, SPEC).
 */

const NOW = Date.parse('2024-01-06T10:00:00Z') / 1000;
const TEAM_A = 'a3c5e7f9-1b2d-4f6a-8c0e-2b4d6f8a0c1e';
const TEAM_B = 'b7d9e1f3-5a7c-4e9b-8d1f-3a5c7e9b1d3f';
const ADMIN = metricsToken({ admin: true });
/** An issue no report named before: new to the store, it changes no other team's answers. */
const W = { summary: 'Weak cipher suites', description: 'The service offers RC4.', score: 9.8 };

describe('per-team data versions of the response cache', () => {
  let svc: TestService;
  let redis: Redis;
  const get = (path: string) => fetchMetric(svc.metricsApiUrl!, path, ADMIN);
  type Listed = { cache: string | null; text: string };
  const findings = async (query: string): Promise<Listed> => {
    const res = await svc.db(`/findings?${query}`);
    return { cache: res.headers.get('x-cache'), text: await res.text() };
  };
  const ingest = async (...reports: Record<string, unknown>[]) => {
    for (const r of reports) await json(svc.postJson('/checks', r), 202);
    await svc.settle();
  };

  beforeAll(async () => {
    svc = await startTestService({ now: () => NOW, env: { JWT_SECRET: METRICS_SECRET } });
    redis = new Redis(REDIS_URL);
    await json(svc.postJson('/targets', { identifier: 'a.example.com', teams: [TEAM_A] }), 201);
    await json(svc.postJson('/targets', { identifier: 'b.example.com', teams: [TEAM_B] }), 201);
    await ingest(
      report({ check_id: 'a-1', target: 'a.example.com', end_time: '2024-01-02 10:00:00', vulnerabilities: [V] }),
      report({ check_id: 'b-1', target: 'b.example.com', end_time: '2024-01-02 10:00:00', vulnerabilities: [V] }),
    );
  });
  afterAll(async () => {
    await redis.quit();
    await svc.close();
  });

  it("given cached answers, when a batch on team A's target commits, then B's stay HITs and A's and the global ones are MISSes with the new value", async () => {
    const paths = [`teams/${TEAM_A}/stats/open`, `teams/${TEAM_B}/stats/open`, 'stats/open', `stats/open?teams=${TEAM_B}`];
    const before = await Promise.all(paths.map(get));
    expect(before.map((r) => r.cache)).toEqual(['MISS', 'MISS', 'MISS', 'MISS']);
    expect((await Promise.all(paths.map(get))).map((r) => r.cache)).toEqual(['HIT', 'HIT', 'HIT', 'HIT']);
    const lists = [`team=${TEAM_A}`, `team=${TEAM_B}`, 'page=1'];
    const listsBefore = await Promise.all(lists.map(findings));
    expect((await Promise.all(lists.map(findings))).map((r) => r.cache)).toEqual(['HIT', 'HIT', 'HIT']);

    await ingest(report({ check_id: 'a-2', target: 'a.example.com', end_time: '2024-01-03 10:00:00', vulnerabilities: [V, W] }));

    const [a, b, all, onlyB] = await Promise.all(paths.map(get));
    expect(b).toMatchObject({ cache: 'HIT', text: before[1]!.text });
    expect(onlyB).toMatchObject({ cache: 'HIT', text: before[3]!.text });
    expect(a).toMatchObject({ cache: 'MISS', body: { open_issues: bySeverity({ medium: 1, critical: 1 }) } });
    // Open findings (V on both targets, W on A's).
    expect(all).toMatchObject({ cache: 'MISS', body: { open_issues: bySeverity({ medium: 2, critical: 1 }) } });
    expect(before[0]!.body).toMatchObject({ open_issues: bySeverity({ medium: 1 }) });
    expect(before[2]!.body).toMatchObject({ open_issues: bySeverity({ medium: 2 }) });

    const [listA, listB, listAll] = (await Promise.all(lists.map(findings))) as [Listed, Listed, Listed];
    expect(listB).toEqual({ cache: 'HIT', text: listsBefore[1]!.text });
    expect(listA.cache).toBe('MISS');
    expect(listAll.cache).toBe('MISS');
    expect(listA.text).toContain('Weak cipher suites');
    expect(listAll.text).toContain('Weak cipher suites');
  });

  it("given B's cached answer, when a batch on B's target commits, then it is read right after with the batch in it", async () => {
    const path = `teams/${TEAM_B}/stats/open`;
    await get(path);
    expect((await get(path)).cache).toBe('HIT');
    await ingest(report({ check_id: 'b-2', target: 'b.example.com', end_time: '2024-01-04 10:00:00', vulnerabilities: [] }));
    // V is fixed on B's target by that report.
    expect(await get(path)).toMatchObject({ cache: 'MISS', body: { open_issues: bySeverity() } });
  });

  it("given B's cached answer, when a change of all data (a team association) follows, then B's answer is a MISS", async () => {
    const path = `teams/${TEAM_B}/stats/open`;
    await get(path);
    expect((await get(path)).cache).toBe('HIT');
    await json(svc.postJson('/targets', { identifier: 'a.example.com', teams: [TEAM_A, TEAM_B] }), 201);
    expect(await get(path)).toMatchObject({ cache: 'MISS', body: { open_issues: bySeverity({ medium: 1, critical: 1 }) } });
  });
});
