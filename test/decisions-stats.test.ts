import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { epoch } from './support/api.js';
import { bySeverity, fetchMetric, METRICS_SECRET, metricsToken, putDecision } from './support/metrics.js';
import { report, worked } from './support/reports.js';
import { json, startTestService, type TestService } from './support/service.js';

/**
 * Suppression in statistics and metrics (SPEC §7, §12.3), at each statistic's reference instant,
 * and the metrics cache following decisions and expiries. The APIs' clock is the test's.
 *
 *   F1 www.example.com   medium 6.5  OPEN 01-01 10:00, FIXED 01-03 10:00 (TTR 48 h), OPEN again 01-05 10:00
 *   F2 api.example.com   high 7.5    OPEN 01-10 10:00
 * Both targets belong to team A.
 */

const TEAM_A = 'a3c5e7f9-1b2d-4f6a-8c0e-2b4d6f8a0c1e';
const ADMIN = metricsToken({ sub: 'root', admin: true });

let clock = epoch('2024-02-01T00:00:00Z');
let svc: TestService;
let f1: string;
let f2: string;

beforeAll(async () => {
  svc = await startTestService({ now: () => clock, env: { JWT_SECRET: METRICS_SECRET } });
  for (const identifier of ['www.example.com', 'api.example.com']) {
    await json(svc.postJson('/targets', { identifier, teams: [TEAM_A] }), 201);
  }
  const api = report({
    check_id: 'api-0001',
    target: 'api.example.com',
    end_time: '2024-01-10 10:00:00',
    vulnerabilities: [{ summary: 'Verbose errors', description: 'Stack traces in answers.', score: 7.5 }],
  });
  for (const r of [worked.r1, worked.r2, worked.r3, worked.r4, api]) await json(svc.postJson('/checks', r), 202);
  await svc.settle();
  const findings = (await json(svc.db('/findings?sortBy=score'))).findings as { id: string; score: number }[];
  [f1, f2] = [findings.find((f) => f.score === 6.5)!.id, findings.find((f) => f.score === 7.5)!.id];
});
afterAll(() => svc.close());

const stat = async (path: string) => json(svc.db(path));
const metric = (path: string) => fetchMetric(svc.metricsApiUrl!, path, ADMIN);
const decide = (finding: string, body: unknown) => json(putDecision(svc.metricsApiUrl!, finding, body, ADMIN));
const revoke = (finding: string) =>
  fetch(`${svc.metricsApiUrl}/api/v1/findings/${finding}/decision`, { method: 'DELETE', headers: { Authorization: `Bearer ${ADMIN}` } });

describe('suppression in statistics (SPEC §12.3)', () => {
  it('a decision leaves its finding out of the cached metric at once, and includeSuppressed brings it back', async () => {
    expect(await metric('stats/open')).toMatchObject({ cache: 'MISS', body: { open_issues: bySeverity({ medium: 1, high: 1 }) } });
    expect((await metric('stats/open')).cache).toBe('HIT');
    // Accepted until 02-10.
    await decide(f2, { decision: 'accepted_risk', reason: 'Behind the VPN.', expires_at: '2024-02-10T00:00:00Z' });
    expect(await metric('stats/open')).toMatchObject({ cache: 'MISS', body: { open_issues: bySeverity({ medium: 1 }) } });
    expect((await metric('stats/open?includeSuppressed=true')).body).toEqual({ open_issues: bySeverity({ medium: 1, high: 1 }) });
    expect((await metric(`teams/${TEAM_A}/stats/open`)).body).toEqual({ open_issues: bySeverity({ medium: 1 }) });
  });

  it('counts the finding at an atDate before the decision, not after it', async () => {
    expect((await stat('/stats/open?atDate=2024-01-20')).open_issues).toEqual(bySeverity({ medium: 1, high: 1 }));
    expect((await stat('/stats/open?atDate=2024-02-05')).open_issues).toEqual(bySeverity({ medium: 1 }));
    expect((await stat('/stats/open?atDate=2024-02-05&includeSuppressed=true')).open_issues).toEqual(bySeverity({ medium: 1, high: 1 }));
    // A range is judged at its end: before the decision, and (ending after now) at now.
    expect((await stat('/stats/open?minDate=2024-01-10&maxDate=2024-01-30')).open_issues).toEqual(bySeverity({ high: 1 }));
    expect((await stat('/stats/open?minDate=2024-01-10&maxDate=2024-03-31')).open_issues).toEqual(bySeverity({}));
    // Filtered (not from the materialized counters) and plain agree.
    expect((await stat('/stats/open?minScore=0')).open_issues).toEqual((await stat('/stats/open')).open_issues);
  });

  it('leaves it out of exposures and assets', async () => {
    // At 02-01 00:00: F1 OPEN since 01-05 10:00 (638 h), F2 since 01-10 10:00 (518 h).
    expect((await stat('/stats/exposure/current')).current_exposure.percentile_50).toBe(638);
    expect((await stat('/stats/exposure/current?includeSuppressed=true')).current_exposure.percentile_50).toBe(578);
    expect((await stat('/stats/exposure/current?atDate=2024-01-20')).current_exposure.mean).toBe((350 + 230) / 2);
    // Total exposure of F1: 48 h + 638 h.
    expect((await stat('/stats/exposure')).exposure.mean).toBe(686);
    expect((await stat(`/stats/assets?team=${TEAM_A}`)).assets).toEqual({ total: 2, ...bySeverity({ medium: 1 }) });
    expect((await stat(`/stats/assets?team=${TEAM_A}&includeSuppressed=true`)).assets).toEqual({
      total: 2,
      ...bySeverity({ medium: 1, high: 1 }),
    });
    expect((await metric('stats/assets')).body.assets).toEqual({ total: 2, ...bySeverity({ medium: 1 }) });
  });

  it('leaves a false positive out of MTTR, and counts it again once revoked', async () => {
    expect((await stat('/stats/mttr')).mttr).toMatchObject({ total: 48, medium: 48 });
    await decide(f1, { decision: 'false_positive', reason: 'Test instance.' });
    expect((await stat('/stats/mttr')).mttr).toMatchObject({ total: 0, medium: 0 });
    expect((await metric('stats/mttr')).body.mttr).toMatchObject({ total: 0 });
    expect((await stat('/stats/mttr?includeSuppressed=1')).mttr).toMatchObject({ total: 48, medium: 48 });
    expect((await stat('/stats/fixed?minDate=2024-01-03&maxDate=2024-01-04')).fixed_issues).toEqual(bySeverity({ medium: 1 }));
    expect((await revoke(f1)).status).toBe(204);
    expect((await metric('stats/mttr')).body.mttr).toMatchObject({ total: 48 });
  });

  it('leaves suppressed findings out of /stats/issues at its reference instant, unless includeSuppressed', async () => {
    // F2 (the only finding of its issue) is accepted since 02-01; F1 is counted.
    const counted = async (path: string) =>
      ((await stat(path)).issues as { summary: string; open: number; fixed: number }[]).map((i) => [i.summary, i.open, i.fixed]);
    const f2Issue = ['Verbose errors', 1, 0];
    expect(await counted('/stats/issues')).not.toContainEqual(f2Issue);
    expect(await counted('/stats/issues')).toHaveLength(1);
    expect(await counted('/stats/issues?includeSuppressed=true')).toContainEqual(f2Issue);
    expect(await counted('/stats/issues?includeSuppressed=true')).toHaveLength(2);
    // A range ending before the decision is judged at its end, when F2 was not suppressed.
    expect(await counted('/stats/issues?minDate=2024-01-01&maxDate=2024-01-30')).toContainEqual(f2Issue);
    expect(await counted('/stats/issues?minDate=2024-01-01&maxDate=2024-03-31')).not.toContainEqual(f2Issue);
    expect((await json(svc.db('/stats/issues?includeSuppressed=maybe'), 400)).message).toBe('Malformed Boolean');
  });

  it("retires the cached answers about its finding's target: all targets' and its teams', not another team's", async () => {
    const TEAM_B = 'b4d6f8a0-2c4e-4a6b-8d0f-3c5e7a9b1d2f';
    await json(svc.postJson('/targets', { identifier: 'other.example.com', teams: [TEAM_B] }), 201);
    const paths = [`teams/${TEAM_B}/stats/mttr`, `teams/${TEAM_A}/stats/mttr`, 'stats/mttr'];
    for (const path of paths) {
      await metric(path);
      expect((await metric(path)).cache, path).toBe('HIT');
    }
    await decide(f1, { decision: 'false_positive', reason: 'Test instance.' });
    expect((await metric(paths[0]!)).cache).toBe('HIT');
    expect(await metric(paths[1]!)).toMatchObject({ cache: 'MISS', body: { mttr: { total: 0 } } });
    expect(await metric(paths[2]!)).toMatchObject({ cache: 'MISS', body: { mttr: { total: 0 } } });
    expect((await revoke(f1)).status).toBe(204);
    expect((await metric(paths[0]!)).cache).toBe('HIT');
    expect(await metric(paths[1]!)).toMatchObject({ cache: 'MISS', body: { mttr: { total: 48 } } });
  });

  it('rejects an includeSuppressed that is not a boolean', async () => {
    expect(await json(svc.db('/stats/open?includeSuppressed=yes'), 400)).toEqual({ message: 'Malformed Boolean' });
    expect((await metric('stats/open?includeSuppressed=yes')).status).toBe(422);
  });

  it('counts the finding again once its decision expired, in the cached metric too, without anyone acting', async () => {
    expect((await metric('stats/open')).body.open_issues).toEqual(bySeverity({ medium: 1 }));
    expect((await metric('stats/open')).cache).toBe('HIT');
    clock = epoch('2024-02-10T00:00:00Z');
    const deadline = Date.now() + 10_000;
    let body = (await metric('stats/open')).body;
    while (body.open_issues.high !== 1 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      body = (await metric('stats/open')).body;
    }
    expect(body.open_issues).toEqual(bySeverity({ medium: 1, high: 1 }));
  });
});
