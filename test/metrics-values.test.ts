import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { report, worked } from './support/reports.js';
import { bySeverity, METRICS_SECRET, metricsToken } from './support/metrics.js';
import { json, startTestService, type TestService } from './support/service.js';

/**
 * Every metric (SPEC §7, §8.3) against hand-computed values: the §3.8 worked example and a small
 * multi-team history, with the clock fixed at 2024-01-06T10:00:00Z.
 */

const SECRET = METRICS_SECRET;
const NOW = Date.parse('2024-01-06T10:00:00Z') / 1000;
const TEAM_W = '0c0c0c0c-1111-4222-8333-444444444444';
const TEAM_A = 'a3c5e7f9-1b2d-4f6a-8c0e-2b4d6f8a0c1e';
const TEAM_B = 'b7d9e1f3-5a7c-4e9b-8d1f-3a5c7e9b1d3f';
const TEAM_D = 'd1d1d1d1-2222-4333-8444-555555555555'; // one target, no findings
const TEAM_EMPTY = 'e0e0e0e0-0000-4000-8000-000000000000'; // no targets at all

const token = metricsToken;
const ADMIN = token({ admin: true });

const sev = bySeverity;
const all = (v: number) => ({ percentile_10: v, percentile_25: v, percentile_50: v, percentile_75: v, percentile_90: v, mean: v });
const pct = (p10: number, p25: number, p50: number, p75: number, p90: number, mean: number) => ({
  percentile_10: p10,
  percentile_25: p25,
  percentile_50: p50,
  percentile_75: p75,
  percentile_90: p90,
  mean,
});

/** Percentiles differ from exact halves by float noise at most (SPEC §0.2: ±0.01). */
function expectClose(actual: Record<string, number>, expected: Record<string, number>) {
  expect(Object.keys(actual).sort()).toEqual(Object.keys(expected).sort());
  for (const [k, v] of Object.entries(expected)) expect(actual[k], k).toBeCloseTo(v, 2);
}

function metricsClient(svc: () => TestService) {
  return (path: string, bearer = ADMIN) =>
    json(fetch(`${svc().metricsApiUrl}/api/v1/${path}`, { headers: { Authorization: `Bearer ${bearer}` } }));
}

describe('metrics of the SPEC §3.8 worked example (team W, now 2024-01-06T10:00:00Z)', () => {
  let svc: TestService;
  const get = metricsClient(() => svc);
  const team = `teams/${TEAM_W}`;
  const member = token({ teams: [TEAM_W] });

  beforeAll(async () => {
    svc = await startTestService({ now: () => NOW, env: { JWT_SECRET: SECRET } });
    await json(svc.postJson('/targets', { identifier: 'www.example.com', teams: [TEAM_W] }), 201);
    for (const r of [worked.r3, worked.r1, worked.r4, worked.r2]) await json(svc.postJson('/checks', r), 202);
    await svc.settle();
  });
  afterAll(() => svc.close());

  it('given F OPEN at now, when a member reads open and fixed, then F is one medium open finding', async () => {
    expect(await get(`${team}/stats/open`, member)).toEqual({ open_issues: sev({ medium: 1 }) });
    expect(await get(`${team}/stats/fixed`, member)).toEqual({ fixed_issues: sev() });
  });

  it('given one closed period of 48 h, when MTTR is read, then total and medium are 48 hours', async () => {
    expect(await get(`${team}/stats/mttr`, member)).toEqual({ mttr: { total: 48, ...sev({ medium: 48 }) } });
  });

  it('given total_exposure 72 and current_exposure 24, when exposures are read, then every percentile is that value', async () => {
    expect(await get(`${team}/stats/exposure`, member)).toEqual({ exposure: all(72) });
    expect(await get(`${team}/stats/exposure/current`, member)).toEqual({ current_exposure: all(24) });
  });

  it('given one target with a medium open finding, when assets are read, then total 1 and medium 1', async () => {
    expect(await get(`${team}/stats/assets`, member)).toEqual({ assets: { total: 1, ...sev({ medium: 1 }) } });
  });

  it('given the §4.3 ranges, when open/fixed are filtered by minDate/maxDate, then rules 1 and 2 apply', async () => {
    expect(await get(`${team}/stats/open?minDate=2024-01-04&maxDate=2024-01-05`, member)).toEqual({ open_issues: sev({ medium: 1 }) });
    expect(await get(`${team}/stats/open?minDate=2024-01-02&maxDate=2024-01-02`, member)).toEqual({ open_issues: sev() });
    expect(await get(`${team}/stats/fixed?minDate=2024-01-03&maxDate=2024-01-04`, member)).toEqual({ fixed_issues: sev({ medium: 1 }) });
    expect(await get(`${team}/stats/fixed?minDate=2024-01-03&maxDate=2024-01-05`, member)).toEqual({ fixed_issues: sev() });
  });

  it('given atDate=2024-01-04 (FIXED then), when counts and exposures are read, then F is fixed with total_exposure 48', async () => {
    expect(await get(`${team}/stats/open?atDate=2024-01-04`, member)).toEqual({ open_issues: sev() });
    expect(await get(`${team}/stats/fixed?atDate=2024-01-04`, member)).toEqual({ fixed_issues: sev({ medium: 1 }) });
    expect(await get(`${team}/stats/exposure?atDate=2024-01-04`, member)).toEqual({ exposure: all(48) });
    expect(await get(`${team}/stats/exposure/current?atDate=2024-01-04`, member)).toEqual({ current_exposure: all(0) });
  });

  it('given atDate=2024-01-02 (OPEN since 01-01 10:00), when exposures are read, then both are 14 hours', async () => {
    expect(await get(`${team}/stats/exposure?atDate=2024-01-02`, member)).toEqual({ exposure: all(14) });
    expect(await get(`${team}/stats/exposure/current?atDate=2024-01-02`, member)).toEqual({ current_exposure: all(14) });
  });

  it('given MTTR ranges, when the fix (01-03) is inside or outside, then the sample is counted or not', async () => {
    expect(await get(`${team}/stats/mttr?minDate=2024-01-03&maxDate=2024-01-03`, member)).toEqual({
      mttr: { total: 48, ...sev({ medium: 48 }) },
    });
    expect(await get(`${team}/stats/mttr?minDate=2024-01-04`, member)).toEqual({ mttr: { total: 0, ...sev() } });
  });

  it('given score 6.5, when minScore/maxScore bound it, then it is in or out of scope', async () => {
    expect(await get(`${team}/stats/open?minScore=7`, member)).toEqual({ open_issues: sev() });
    expect(await get(`${team}/stats/open?minScore=6.5&maxScore=6.5`, member)).toEqual({ open_issues: sev({ medium: 1 }) });
    expect(await get(`${team}/stats/mttr?maxScore=6`, member)).toEqual({ mttr: { total: 0, ...sev() } });
    expect(await get(`${team}/stats/exposure?minScore=7`, member)).toEqual({ exposure: all(0) });
    expect(await get(`${team}/stats/exposure/current?maxScore=6.4`, member)).toEqual({ current_exposure: all(0) });
  });

  it('given labels TLS and issue, when labels filter the metrics that list them, then only matching labels count', async () => {
    expect(await get(`${team}/stats/open?labels=TLS`, member)).toEqual({ open_issues: sev({ medium: 1 }) });
    expect(await get(`${team}/stats/open?labels=web,other`, member)).toEqual({ open_issues: sev() });
    expect(await get(`${team}/stats/mttr?labels=other`, member)).toEqual({ mttr: { total: 0, ...sev() } });
    expect(await get(`${team}/stats/exposure/current?labels=issue`, member)).toEqual({ current_exposure: all(24) });
    expect(await get(`${team}/stats/assets?labels=other`, member)).toEqual({ assets: { total: 1, ...sev() } });
    // labels is not a parameter of the total exposure: ignored.
    expect(await get(`${team}/stats/exposure?labels=other`, member)).toEqual({ exposure: all(72) });
  });

  it('given identifiers, when they name the target or another one, then the scope follows', async () => {
    expect(await get(`${team}/stats/open?identifiers=www.example.com`, member)).toEqual({ open_issues: sev({ medium: 1 }) });
    expect(await get(`${team}/stats/open?identifiers=other.example.com`, member)).toEqual({ open_issues: sev() });
    expect(await get(`${team}/stats/assets?identifiers=other.example.com,x.example.com`, member)).toEqual({
      assets: { total: 0, ...sev() },
    });
  });

  it('given the same statistic in the database API, when both are asked with the same filters, then the bodies are identical', async () => {
    for (const [metric, db] of [
      ['stats/open?minDate=2024-01-04&maxDate=2024-01-05', 'stats/open?minDate=2024-01-04&maxDate=2024-01-05'],
      ['stats/fixed?atDate=2024-01-04', 'stats/fixed?atDate=2024-01-04'],
      ['stats/mttr', 'stats/mttr'],
      ['stats/exposure', 'stats/exposure'],
      ['stats/exposure/current?atDate=2024-01-02', 'stats/exposure/current?atDate=2024-01-02'],
      ['stats/assets?labels=TLS', 'stats/assets?labels=TLS'],
    ] as const) {
      const sep = db.includes('?') ? '&' : '?';
      expect(await get(`${team}/${metric}`, member)).toEqual(await json(svc.db(`/${db}${sep}team=${TEAM_W}`)));
    }
  });
});

/**
 * Targets and findings (now 2024-01-06T10:00Z; hours of OPEN time at now in brackets):
 *   a.example.com  (team A)      X1 9.5 critical OPEN since 01-01 10:00 [120], labels web
 *                                X2 3.0 low FIXED 01-01 10:00 → 01-04 10:00 [72, TTR 72], labels TLS
 *   b.example.com  (team B)      Y1 7.5 high OPEN since 01-02 10:00 [96], labels web
 *   ab.example.com (teams A, B)  Z1 5.0 medium FIXED 01-03 10:00 → 01-05 10:00 [48, TTR 48], labels TLS
 *                                Z2 0 informational OPEN since 01-03 10:00 [72], no labels
 *   c.example.com  (no team)     W 8.0 high OPEN since 01-05 10:00 [24], labels web
 *   d.example.com  (team D)      no findings (created by POST /targets)
 */
describe('metrics of a multi-team history (teams A and B share ab.example.com)', () => {
  let svc: TestService;
  const get = metricsClient(() => svc);
  const X1 = { summary: 'X1 exposed admin console', score: 9.5, labels: ['web'] };
  const X2 = { summary: 'X2 weak cipher', score: 3.0, labels: ['TLS'] };
  const Y1 = { summary: 'Y1 outdated server', score: 7.5, labels: ['web'] };
  const Z1 = { summary: 'Z1 self-signed certificate', score: 5.0, labels: ['TLS'] };
  const Z2 = { summary: 'Z2 banner disclosure', score: 0 };
  const W = { summary: 'W open redirect', score: 8.0, labels: ['web'] };
  const scan = (id: string, target: string, time: string, vulnerabilities: object[]) =>
    report({ check_id: id, target, end_time: time, vulnerabilities: vulnerabilities as never });

  beforeAll(async () => {
    svc = await startTestService({ now: () => NOW, env: { JWT_SECRET: SECRET } });
    await json(svc.postJson('/targets', { identifier: 'a.example.com', teams: [TEAM_A] }), 201);
    await json(svc.postJson('/targets', { identifier: 'b.example.com', teams: [TEAM_B] }), 201);
    await json(svc.postJson('/targets', { identifier: 'ab.example.com', teams: [TEAM_A, TEAM_B] }), 201);
    await json(svc.postJson('/targets', { identifier: 'd.example.com', teams: [TEAM_D] }), 201);
    const reports = [
      scan('a-1', 'a.example.com', '2024-01-01 10:00:00', [X1, X2]),
      scan('a-2', 'a.example.com', '2024-01-04 10:00:00', [X1]),
      scan('b-1', 'b.example.com', '2024-01-02 10:00:00', [Y1]),
      scan('ab-1', 'ab.example.com', '2024-01-03 10:00:00', [Z1, Z2]),
      scan('ab-2', 'ab.example.com', '2024-01-05 10:00:00', [Z2]),
      scan('c-1', 'c.example.com', '2024-01-05 10:00:00', [W]),
    ];
    for (const r of reports) await json(svc.postJson('/checks', r), 202);
    await svc.settle();
  });
  afterAll(() => svc.close());

  it('given team A (a, ab), when every metric is read, then it counts X1, X2, Z1, Z2', async () => {
    expect(await get(`teams/${TEAM_A}/stats/open`)).toEqual({ open_issues: sev({ critical: 1, informational: 1 }) });
    expect(await get(`teams/${TEAM_A}/stats/fixed`)).toEqual({ fixed_issues: sev({ low: 1, medium: 1 }) });
    expect(await get(`teams/${TEAM_A}/stats/mttr`)).toEqual({ mttr: { total: 60, ...sev({ low: 72, medium: 48 }) } });
    expectClose((await get(`teams/${TEAM_A}/stats/exposure`)).exposure, pct(55.2, 66, 72, 84, 105.6, 78));
    expectClose((await get(`teams/${TEAM_A}/stats/exposure/current`)).current_exposure, pct(76.8, 84, 96, 108, 115.2, 96));
    expect(await get(`teams/${TEAM_A}/stats/assets`)).toEqual({ assets: { total: 2, ...sev({ critical: 1, informational: 1 }) } });
  });

  it('given team B (b, ab), when every metric is read, then it counts Y1, Z1, Z2', async () => {
    const member = token({ teams: [TEAM_B] });
    expect(await get(`teams/${TEAM_B}/stats/open`, member)).toEqual({ open_issues: sev({ high: 1, informational: 1 }) });
    expect(await get(`teams/${TEAM_B}/stats/fixed`, member)).toEqual({ fixed_issues: sev({ medium: 1 }) });
    expect(await get(`teams/${TEAM_B}/stats/mttr`, member)).toEqual({ mttr: { total: 48, ...sev({ medium: 48 }) } });
    expectClose((await get(`teams/${TEAM_B}/stats/exposure`, member)).exposure, pct(52.8, 60, 72, 84, 91.2, 72));
    expectClose((await get(`teams/${TEAM_B}/stats/exposure/current`, member)).current_exposure, pct(74.4, 78, 84, 90, 93.6, 84));
    expect(await get(`teams/${TEAM_B}/stats/assets`, member)).toEqual({ assets: { total: 2, ...sev({ high: 1, informational: 1 }) } });
  });

  it('given teams=A,B, when a member of both reads every metric, then ab.example.com counts once', async () => {
    const both = token({ teams: [TEAM_A, TEAM_B] });
    const q = `teams=${TEAM_A},${TEAM_B}`;
    expect(await get(`stats/open?${q}`, both)).toEqual({ open_issues: sev({ critical: 1, high: 1, informational: 1 }) });
    expect(await get(`stats/fixed?${q}`, both)).toEqual({ fixed_issues: sev({ low: 1, medium: 1 }) });
    expect(await get(`stats/mttr?${q}`, both)).toEqual({ mttr: { total: 60, ...sev({ low: 72, medium: 48 }) } });
    expectClose((await get(`stats/exposure?${q}`, both)).exposure, pct(57.6, 72, 72, 96, 110.4, 81.6));
    expectClose((await get(`stats/exposure/current?${q}`, both)).current_exposure, pct(76.8, 84, 96, 108, 115.2, 96));
    expect(await get(`stats/assets?${q}`, both)).toEqual({ assets: { total: 3, ...sev({ critical: 1, high: 1, informational: 1 }) } });
  });

  it('given no teams, when an admin reads the global metrics, then every finding and target counts', async () => {
    expect(await get('stats/open')).toEqual({ open_issues: sev({ critical: 1, high: 2, informational: 1 }) });
    expect(await get('stats/fixed')).toEqual({ fixed_issues: sev({ low: 1, medium: 1 }) });
    expect(await get('stats/mttr')).toEqual({ mttr: { total: 60, ...sev({ low: 72, medium: 48 }) } });
    expectClose((await get('stats/exposure')).exposure, pct(36, 54, 72, 90, 108, 72));
    expectClose((await get('stats/exposure/current')).current_exposure, pct(38.4, 60, 84, 102, 112.8, 78));
    expect(await get('stats/assets')).toEqual({ assets: { total: 5, ...sev({ critical: 1, high: 2, informational: 1 }) } });
    // An empty teams= is the global scope.
    expect(await get('stats/assets?teams=,')).toEqual({ assets: { total: 5, ...sev({ critical: 1, high: 2, informational: 1 }) } });
  });

  it('given a team with a target but no findings, when its metrics are read, then zeros and one asset', async () => {
    const member = token({ teams: [TEAM_D] });
    expect(await get(`teams/${TEAM_D}/stats/open`, member)).toEqual({ open_issues: sev() });
    expect(await get(`teams/${TEAM_D}/stats/mttr`, member)).toEqual({ mttr: { total: 0, ...sev() } });
    expect(await get(`teams/${TEAM_D}/stats/exposure`, member)).toEqual({ exposure: all(0) });
    expect(await get(`teams/${TEAM_D}/stats/assets`, member)).toEqual({ assets: { total: 1, ...sev() } });
  });

  it('given a team without targets, when a member reads every metric, then all are zero with 200', async () => {
    const member = token({ teams: [TEAM_EMPTY] });
    expect(await get(`teams/${TEAM_EMPTY}/stats/open`, member)).toEqual({ open_issues: sev() });
    expect(await get(`teams/${TEAM_EMPTY}/stats/fixed`, member)).toEqual({ fixed_issues: sev() });
    expect(await get(`teams/${TEAM_EMPTY}/stats/mttr`, member)).toEqual({ mttr: { total: 0, ...sev() } });
    expect(await get(`teams/${TEAM_EMPTY}/stats/exposure`, member)).toEqual({ exposure: all(0) });
    expect(await get(`teams/${TEAM_EMPTY}/stats/exposure/current`, member)).toEqual({ current_exposure: all(0) });
    expect(await get(`teams/${TEAM_EMPTY}/stats/assets`, member)).toEqual({ assets: { total: 0, ...sev() } });
    expect(await get(`stats/open?teams=${TEAM_EMPTY}`, member)).toEqual({ open_issues: sev() });
  });

  it('given date ranges, when open/fixed/MTTR are filtered, then rules 1 and 2 and the fix window apply', async () => {
    // Rule 1: periods started in [01-02, 01-04): Y1, Z1, Z2.
    expect(await get('stats/open?minDate=2024-01-02&maxDate=2024-01-03')).toEqual({
      open_issues: sev({ high: 1, medium: 1, informational: 1 }),
    });
    // Rule 2: X2 fixed 01-04 10:00 and still fixed at the end of 01-04.
    expect(await get('stats/fixed?minDate=2024-01-04&maxDate=2024-01-04')).toEqual({ fixed_issues: sev({ low: 1 }) });
    // Only minDate: the range ends now; X2 and Z1 were fixed since 01-04.
    expect(await get('stats/fixed?minDate=2024-01-04')).toEqual({ fixed_issues: sev({ low: 1, medium: 1 }) });
    expect(await get(`teams/${TEAM_B}/stats/fixed?minDate=2024-01-05`)).toEqual({ fixed_issues: sev({ medium: 1 }) });
    expect(await get('stats/mttr?minDate=2024-01-05&maxDate=2024-01-05')).toEqual({ mttr: { total: 48, ...sev({ medium: 48 }) } });
    expect(await get('stats/mttr?maxDate=2024-01-04')).toEqual({ mttr: { total: 72, ...sev({ low: 72 }) } });
  });

  it('given atDate=2024-01-04 (00:00), when counts and exposures are read, then the state at that instant counts', async () => {
    expect(await get('stats/open?atDate=2024-01-04')).toEqual({
      open_issues: sev({ critical: 1, high: 1, medium: 1, low: 1, informational: 1 }),
    });
    expect(await get('stats/fixed?atDate=2024-01-04')).toEqual({ fixed_issues: sev() });
    // X1 62, X2 62, Y1 38, Z1 14, Z2 14 hours; W did not exist yet.
    expectClose((await get('stats/exposure?atDate=2024-01-04')).exposure, pct(14, 14, 38, 62, 62, 38));
    expectClose((await get('stats/exposure/current?atDate=2024-01-04')).current_exposure, pct(14, 14, 38, 62, 62, 38));
    // Team B: Y1 38, Z1 14, Z2 14.
    expectClose((await get(`teams/${TEAM_B}/stats/exposure?atDate=2024-01-04`)).exposure, pct(14, 14, 14, 26, 33.2, 22));
  });

  it('given score bounds, when they cut the severities, then only findings within them count', async () => {
    expect(await get('stats/open?minScore=5&maxScore=9')).toEqual({ open_issues: sev({ high: 2 }) });
    expect(await get('stats/open?maxScore=0')).toEqual({ open_issues: sev({ informational: 1 }) });
    expect(await get(`teams/${TEAM_A}/stats/mttr?minScore=4`)).toEqual({ mttr: { total: 48, ...sev({ medium: 48 }) } });
    expectClose((await get(`teams/${TEAM_A}/stats/exposure?maxScore=5`)).exposure, pct(52.8, 60, 72, 72, 72, 64));
  });

  it('given labels, when they select issues, then only findings of issues with one of them count', async () => {
    expect(await get(`teams/${TEAM_A}/stats/open?labels=web`)).toEqual({ open_issues: sev({ critical: 1 }) });
    expect(await get(`teams/${TEAM_A}/stats/fixed?labels=TLS`)).toEqual({ fixed_issues: sev({ low: 1, medium: 1 }) });
    expect(await get(`teams/${TEAM_A}/stats/exposure/current?labels=web`)).toEqual({ current_exposure: all(120) });
    expect(await get('stats/mttr?labels=TLS,web')).toEqual({ mttr: { total: 60, ...sev({ low: 72, medium: 48 }) } });
    // ab.example.com's only open finding (Z2) has no labels: it is no longer a vulnerable asset.
    expect(await get(`teams/${TEAM_B}/stats/assets?labels=web,TLS`)).toEqual({ assets: { total: 2, ...sev({ high: 1 }) } });
  });

  it('given identifiers, when they narrow a scope, then only those targets of the scope count', async () => {
    expect(await get(`teams/${TEAM_A}/stats/open?identifiers=ab.example.com`)).toEqual({ open_issues: sev({ informational: 1 }) });
    expect(await get(`teams/${TEAM_B}/stats/assets?identifiers=ab.example.com`)).toEqual({
      assets: { total: 1, ...sev({ informational: 1 }) },
    });
    expect(await get(`teams/${TEAM_B}/stats/assets?identifiers=a.example.com`)).toEqual({ assets: { total: 0, ...sev() } });
    expect(await get('stats/open?identifiers=c.example.com,b.example.com')).toEqual({ open_issues: sev({ high: 2 }) });
  });
});
