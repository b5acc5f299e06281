import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  assetStatsResponse,
  currentExposureStatsResponse,
  exposureStatsResponse,
  fixedStatsResponse,
  issueStatsResponse,
  openStatsResponse,
  sizeStatsResponse,
} from '../src/stats/schema.js';
import { byteOrder, epoch, failure, get, hoursBefore, ingest } from './support/api.js';
import { I1, I2, I3, I4, I5, iid, loadCatalog, NOW, T1, T4, TEAM_A, TEAM_B } from './support/api-catalog.js';
import { report, type VulnSpec } from './support/reports.js';
import { json, startTestService, type TestService } from './support/service.js';

/**
 * The statistics of the database API (SPEC §6.7, §6.9, §7) on the catalog of
 * test/support/api-catalog.ts (plus a target without findings), read at now = 2024-03-01T00:00:00Z.
 *
 *   finding  score  severity       status  found             total exposure at now
 *   T1/I1    9.5    critical       FIXED   02-01 10:00       216 (fixed 02-10 10:00)
 *   T1/I2    6.1    medium         OPEN    02-01 10:00       686
 *   T2/I1    9.5    critical       OPEN    02-05 00:00       600
 *   T2/I3    0      informational  OPEN    02-05 00:00       600
 *   T2/I4    3.2    low            OPEN    02-05 00:00       600
 *   T3/I5    7.5    high           OPEN    02-15 12:00       348
 *   T3/I2    6.1    medium         OPEN    02-15 12:00       348
 *   T4/I3    0      informational  OPEN    02-20 00:00       240
 * Teams: T1 A, T2 A and B, T3 B, T4 none, T5 (no findings) A.
 */

const T5 = 'empty.example.com';
const sev = (counts: Partial<Record<'critical' | 'high' | 'medium' | 'low' | 'informational', number>>) => ({
  critical: 0,
  high: 0,
  medium: 0,
  low: 0,
  informational: 0,
  ...counts,
});
const zeros = { percentile_10: 0, percentile_25: 0, percentile_50: 0, percentile_75: 0, percentile_90: 0, mean: 0 };

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ now: () => epoch(NOW) });
  await loadCatalog(svc);
  await json(svc.postJson('/targets', { identifier: T5, teams: [TEAM_A] }), 201);
});
afterAll(() => svc.close());

const open = async (query = '') => (await get(svc, `/stats/open?${query}`, openStatsResponse)).open_issues;
const fixed = async (query = '') => (await get(svc, `/stats/fixed?${query}`, fixedStatsResponse)).fixed_issues;

describe('/stats/open and /stats/fixed (SPEC §7.1, §7.2)', () => {
  it('count current OPEN and FIXED findings by severity', async () => {
    expect(await open()).toEqual(sev({ critical: 1, high: 1, medium: 2, low: 1, informational: 2 }));
    expect(await fixed()).toEqual(sev({ critical: 1 }));
  });

  it("count the findings of a team's targets", async () => {
    expect(await open(`team=${TEAM_A}`)).toEqual(sev({ critical: 1, medium: 1, low: 1, informational: 1 }));
    expect(await fixed(`team=${TEAM_A}`)).toEqual(sev({ critical: 1 }));
  });

  it('count a finding of a target in two listed teams once', async () => {
    expect(await open(`teams=${TEAM_A},${TEAM_B}`)).toEqual(sev({ critical: 1, high: 1, medium: 2, low: 1, informational: 1 }));
  });

  it('combine team and teams with AND', async () => {
    expect(await open(`team=${TEAM_A}&teams=${TEAM_B}`)).toEqual(sev({ critical: 1, low: 1, informational: 1 }));
  });

  it('filter by identifiers, labels and scores, 0 included', async () => {
    expect(await open(`identifiers=${T4}`)).toEqual(sev({ informational: 1 }));
    expect(await open('labels=web')).toEqual(sev({ critical: 1, medium: 2 }));
    expect(await open('maxScore=0')).toEqual(sev({ informational: 2 }));
    expect(await open('minScore=0&maxScore=0')).toEqual(sev({ informational: 2 }));
    expect(await open('minScore=9.5')).toEqual(sev({ critical: 1 }));
    expect(await fixed('maxScore=9')).toEqual(sev({}));
  });

  it('with atDate count the state at the start of that day, by current score', async () => {
    expect(await open('atDate=2024-02-06')).toEqual(sev({ critical: 2, medium: 1, low: 1, informational: 1 }));
    expect(await fixed('atDate=2024-02-06')).toEqual(sev({}));
    expect(await fixed('atDate=2024-02-11')).toEqual(sev({ critical: 1 }));
    expect(await open('atDate=2024-01-01')).toEqual(sev({}));
  });

  it('with a range apply rule 1 (opened in the range) and rule 2 (fixed in it, still FIXED at its end)', async () => {
    expect(await open('minDate=2024-02-15')).toEqual(sev({ high: 1, medium: 1, informational: 1 }));
    expect(await open('minDate=2024-02-01&maxDate=2024-02-01')).toEqual(sev({ critical: 1, medium: 1 }));
    expect(await open(`team=${TEAM_B}&minDate=2024-02-05&maxDate=2024-02-05`)).toEqual(sev({ critical: 1, low: 1, informational: 1 }));
    expect(await fixed('minDate=2024-02-10&maxDate=2024-02-10')).toEqual(sev({ critical: 1 }));
    expect(await fixed('maxDate=2024-02-09')).toEqual(sev({}));
    expect(await fixed('minDate=2024-02-11')).toEqual(sev({}));
  });

  it('answer zeros for an unknown team', async () => {
    expect(await open('team=nobody')).toEqual(sev({}));
  });
});

describe('/stats/issues (SPEC §7.3)', () => {
  const all = () =>
    [
      { id: iid(I1), open: 1, fixed: 1 },
      { id: iid(I2), open: 2, fixed: 0 },
      { id: iid(I3), open: 2, fixed: 0 },
      { id: iid(I4), open: 1, fixed: 0 },
      { id: iid(I5), open: 1, fixed: 0 },
    ].sort((a, b) => (a.id < b.id ? -1 : 1));
  const counts = async (query = '') =>
    (await get(svc, `/stats/issues?${query}`, issueStatsResponse)).issues.map(({ id, open: o, fixed: f }) => ({ id, open: o, fixed: f }));

  it('lists each issue with its OPEN and FIXED findings, in ascending id order', async () => {
    const { pagination, issues } = await get(svc, '/stats/issues', issueStatsResponse);
    expect(pagination).toEqual({ limit: 20, offset: 0, total: 5, more: false });
    expect(issues.map(({ id, open: o, fixed: f }) => ({ id, open: o, fixed: f }))).toEqual(all());
    expect(issues.find((i) => i.id === iid(I1))).toEqual({
      id: iid(I1),
      summary: 'SQL Injection',
      cwe_id: 0,
      description: 'Unsanitised input reaches SQL.',
      recommendations: [],
      reference_links: [],
      labels: ['owasp', 'web'],
      open: 1,
      fixed: 1,
    });
  });

  it('pages issues', async () => {
    const full = await get(svc, '/stats/issues?size=2&page=2', issueStatsResponse);
    expect(full.pagination).toEqual({ limit: 2, offset: 2, total: 5, more: true });
    expect(full.issues.map((i) => i.id)).toEqual(
      all()
        .slice(2, 4)
        .map((i) => i.id),
    );
    const { pagination, issues } = await get(svc, '/stats/issues?size=2&page=3', issueStatsResponse);
    expect(pagination).toEqual({ limit: 2, offset: 4, total: 5, more: false });
    expect(issues.map((i) => i.id)).toEqual(
      all()
        .slice(4)
        .map((i) => i.id),
    );
    expect(await failure(svc, '/stats/issues?size=2&page=4')).toEqual({ status: 404, body: { message: 'Page Not Found' } });
  });

  it('counts only findings whose score is within minScore/maxScore, 0 included', async () => {
    expect(await counts('minScore=9')).toEqual([{ id: iid(I1), open: 1, fixed: 1 }]);
    expect(await counts('maxScore=0')).toEqual([{ id: iid(I3), open: 2, fixed: 0 }]);
  });

  it('with dates counts only findings with a FOUND event in the range', async () => {
    expect(await counts('minDate=2024-02-20')).toEqual([{ id: iid(I3), open: 1, fixed: 0 }]);
    // On 02-10 only c2 ran (on T1), reporting I2: T1/I1 is not counted.
    expect(await counts('minDate=2024-02-10&maxDate=2024-02-10')).toEqual([{ id: iid(I2), open: 1, fixed: 0 }]);
  });

  it('validates atDate but otherwise ignores it', async () => {
    expect(await counts('atDate=2024-01-01')).toEqual(all());
  });

  it('counts the same from the per-issue counters (no filter) as from the findings (a filter every finding passes)', async () => {
    expect(await counts('minScore=0')).toEqual(all());
    expect(await counts('minDate=2000-01-01')).toEqual(all());
  });
});

describe('/stats/size (SPEC §7.9)', () => {
  it('counts stored sources, targets (those of POST /targets included), issues, findings and events', async () => {
    expect((await get(svc, '/stats/size', sizeStatsResponse)).size).toEqual({
      sources: 8,
      targets: 5,
      issues: 5,
      findings: 8,
      finding_events: 12,
    });
  });
});

describe('/stats/assets (SPEC §7.7)', () => {
  const assets = async (query = '') => (await get(svc, `/stats/assets?${query}`, assetStatsResponse)).assets;

  it('counts every target, and each target with OPEN findings once in the severity of its highest score', async () => {
    expect(await assets()).toEqual({ total: 5, ...sev({ critical: 1, high: 1, medium: 1, informational: 1 }) });
  });

  it('scopes by team, counting targets without findings in the total', async () => {
    expect(await assets(`team=${TEAM_A}`)).toEqual({ total: 3, ...sev({ critical: 1, medium: 1 }) });
  });

  it('counts a target in two listed teams once', async () => {
    expect(await assets(`teams=${TEAM_A},${TEAM_B}`)).toEqual({ total: 4, ...sev({ critical: 1, high: 1, medium: 1 }) });
  });

  it('scopes by identifiers', async () => {
    expect(await assets(`identifiers=${T1},${T4}`)).toEqual({ total: 2, ...sev({ medium: 1, informational: 1 }) });
  });

  it('restricts the OPEN findings to the labels, keeping every target in the total', async () => {
    expect(await assets('labels=web')).toEqual({ total: 5, ...sev({ critical: 1, medium: 2 }) });
    expect(await assets('labels=owasp')).toEqual({ total: 5, ...sev({ critical: 1 }) });
  });
});

describe('/stats/exposure and /stats/exposure/current (SPEC §7.5, §7.6, §7.8)', () => {
  const exposure = async (query = '') => (await get(svc, `/stats/exposure?${query}`, exposureStatsResponse)).exposure;
  const current = async (query = '') => (await get(svc, `/stats/exposure/current?${query}`, currentExposureStatsResponse)).current_exposure;

  it('gives percentiles and mean of the total exposure of every finding existing now', async () => {
    // [216, 240, 348, 348, 600, 600, 600, 686]
    expect(await exposure()).toEqual({
      percentile_10: 232.8,
      percentile_25: 321,
      percentile_50: 474,
      percentile_75: 600,
      percentile_90: 625.8,
      mean: 454.75,
    });
  });

  it('evaluates the total exposure at the start of atDate', async () => {
    // Existing at 02-06 00:00: T1/I1 and T1/I2 110 h, T2's three findings 24 h.
    expect(await exposure('atDate=2024-02-06')).toEqual({
      percentile_10: 24,
      percentile_25: 24,
      percentile_50: 24,
      percentile_75: 110,
      percentile_90: 110,
      mean: 58.4,
    });
  });

  it('counts each finding of a target in two listed teams once', async () => {
    // [216, 348, 348, 600, 600, 600, 686]: T1, T2 and T3's findings, T2's once.
    expect(await exposure(`teams=${TEAM_A},${TEAM_B}`)).toEqual({
      percentile_10: 295.2,
      percentile_25: 348,
      percentile_50: 600,
      percentile_75: 600,
      percentile_90: 634.4,
      mean: 485.43,
    });
    expect((await current(`teams=${TEAM_A},${TEAM_B}`)).mean).toBe(530.33); // (686 + 3 × 600 + 2 × 348) / 6 = 530.33…
  });

  it('scopes the total exposure by team and score', async () => {
    expect(await exposure(`team=${TEAM_B}`)).toEqual({
      percentile_10: 348,
      percentile_25: 348,
      percentile_50: 600,
      percentile_75: 600,
      percentile_90: 600,
      mean: 499.2,
    });
    expect(await exposure('minScore=9')).toEqual({
      percentile_10: 254.4,
      percentile_25: 312,
      percentile_50: 408,
      percentile_75: 504,
      percentile_90: 561.6,
      mean: 408,
    });
  });

  it('gives the current exposure of OPEN findings only, rounded to 2 decimals', async () => {
    // [240, 348, 348, 600, 600, 600, 686]; mean 3422 / 7 = 488.857…
    expect(await current()).toEqual({
      percentile_10: 304.8,
      percentile_25: 348,
      percentile_50: 600,
      percentile_75: 600,
      percentile_90: 634.4,
      mean: 488.86,
    });
  });

  it('scopes the current exposure by labels', async () => {
    // [348, 600, 686]; mean 1634 / 3 = 544.666…
    expect(await current('labels=web')).toEqual({
      percentile_10: 398.4,
      percentile_25: 474,
      percentile_50: 600,
      percentile_75: 643,
      percentile_90: 668.8,
      mean: 544.67,
    });
  });

  it('evaluates the current exposure at the start of atDate', async () => {
    // OPEN at 02-11 00:00: T1/I2 for 230 h, T2's three findings for 144 h.
    expect(await current('atDate=2024-02-11')).toEqual({
      percentile_10: 144,
      percentile_25: 144,
      percentile_50: 144,
      percentile_75: 165.5,
      percentile_90: 204.2,
      mean: 165.5,
    });
  });

  it('answers zeros without values', async () => {
    expect(await exposure('team=nobody')).toEqual(zeros);
    expect(await current('atDate=2024-01-01')).toEqual(zeros);
  });
});

describe('percentiles of SPEC §7.8 and rounding of SPEC §0.2', () => {
  const P = 'percentile-team';
  const R = 'rounding-team';
  let fresh: TestService;
  beforeAll(async () => {
    fresh = await startTestService({ now: () => epoch(NOW) });
    // Four findings OPEN for exactly 18818, 18818, 18818 and 19323 hours.
    const hours = [18818, 18818, 18818, 19323];
    const vuln: VulnSpec = { summary: 'Long Exposure', score: 5 };
    const reports = hours.map((h, i) =>
      report({ check_id: `p${i}`, target: `p${i}.example.com`, end_time: hoursBefore(NOW, h), vulnerabilities: [vuln] }),
    );
    // Eight findings on one target: one OPEN for 1 hour, seven for 30 minutes (0 whole hours).
    const eight: VulnSpec[] = Array.from({ length: 8 }, (_, i) => ({ summary: `Round ${i}`, score: 1 }));
    reports.push(
      report({ check_id: 'r-a', target: 'round.example.com', end_time: hoursBefore(NOW, 1), vulnerabilities: eight.slice(0, 1) }),
    );
    reports.push(report({ check_id: 'r-b', target: 'round.example.com', end_time: hoursBefore(NOW, 0.5), vulnerabilities: eight }));
    await ingest(fresh, reports);
    for (let i = 0; i < hours.length; i++) await json(fresh.postJson('/targets', { identifier: `p${i}.example.com`, teams: [P] }), 201);
    await json(fresh.postJson('/targets', { identifier: 'round.example.com', teams: [R] }), 201);
  });
  afterAll(() => fresh.close());

  it('interpolates linearly: 18818, 18818, 18818, 19323 give p50 18818, p75 18944.25, p90 19171.5, mean 18944.25', async () => {
    const expected = {
      percentile_10: 18818,
      percentile_25: 18818,
      percentile_50: 18818,
      percentile_75: 18944.25,
      percentile_90: 19171.5,
      mean: 18944.25,
    };
    expect((await get(fresh, `/stats/exposure?team=${P}`, exposureStatsResponse)).exposure).toEqual(expected);
    expect((await get(fresh, `/stats/exposure/current?team=${P}`, currentExposureStatsResponse)).current_exposure).toEqual(expected);
  });

  it('rounds half away from zero: a mean of 1/8 hour is 0.13', async () => {
    expect((await get(fresh, `/stats/exposure?team=${R}`, exposureStatsResponse)).exposure).toEqual({
      percentile_10: 0,
      percentile_25: 0,
      percentile_50: 0,
      percentile_75: 0,
      percentile_90: 0.3,
      mean: 0.13,
    });
  });

  it("lists the rounding target's issues in byte order", async () => {
    const { issues } = await get(fresh, '/stats/issues?size=100', issueStatsResponse);
    const ids = issues.map((i) => i.id);
    expect(ids).toEqual(byteOrder(ids));
    expect(issues).toHaveLength(9);
  });
});
