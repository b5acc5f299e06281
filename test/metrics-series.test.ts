import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { epoch, ingest } from './support/api.js';
import { fetchMetric, METRICS_SECRET, metricsToken, putDecision } from './support/metrics.js';
import { json, startTestService, type TestService } from './support/service.js';
import { C, H, M, SLA_NOW, SLA_REPORTS, SLA_TARGETS, slaFinding, TEAM_X, TEAM_Y } from './support/sla-history.js';

/**
 * GET /api/v1/stats/open/series (an extension beyond SPEC §8.3, for the triage page's chart): each
 * point equals /stats/open?atDate=<that day> with the same parameters, in every scope, with
 * filters, and with findings suppressed by decisions made in the middle of the series (SPEC §12.3).
 * The history is test/support/sla-history.ts (January to June 2024); the APIs' clock is the test's.
 */

const ADMIN = metricsToken({ sub: 'root', admin: true });
const MEMBER_X = metricsToken({ sub: 'maria', teams: [TEAM_X] });
let clock = epoch(SLA_NOW);
let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({ now: () => clock, env: { JWT_SECRET: METRICS_SECRET } });
  for (const [identifier, teams] of Object.entries(SLA_TARGETS)) {
    if (teams.length > 0) await json(svc.postJson('/targets', { identifier, teams }), 201);
  }
  await ingest(svc, SLA_REPORTS);
}, 60_000);
afterAll(() => svc?.close());

const metric = async (path: string, token = ADMIN) => {
  const res = await fetchMetric(svc.metricsApiUrl!, path, token);
  expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(200);
  return res;
};

/** Every tenth day from late December to mid-June, the decisions' instants and a day after now included. */
const DAYS = [
  ...Array.from({ length: 18 }, (_, i) => new Date(Date.UTC(2023, 11, 25) + i * 10 * 86_400_000).toISOString().slice(0, 10)),
  '2024-04-21',
  '2024-05-15',
  '2024-05-16',
];

/** The series of `path` (a metric path and its parameters) over DAYS against one request per day. */
async function expectPointByPoint(path: string, token = ADMIN): Promise<void> {
  const [base, params = ''] = path.split('?');
  const and = params ? `&${params}` : '';
  const series = (await metric(`${base}/series?atDates=${DAYS.join(',')}${and}`, token)).body.open_issues_series as {
    date: string;
    open_issues: unknown;
  }[];
  expect(series.map((p) => p.date)).toEqual([...DAYS].sort());
  const points = await Promise.all(series.map((p) => metric(`${base}?atDate=${p.date}${and}`, token)));
  expect(
    series.map((p) => p.open_issues),
    path,
  ).toEqual(points.map((p) => p.body.open_issues));
}

const SCOPES = [
  'stats/open',
  `stats/open?teams=${TEAM_X},${TEAM_Y}`,
  `teams/${TEAM_X}/stats/open`,
  `teams/${TEAM_Y}/stats/open`,
  'stats/open?minScore=7',
  'stats/open?maxScore=5&labels=crit,other',
  'stats/open?labels=crit',
  'stats/open?identifiers=s4.sla.example.com,s3.sla.example.com',
];

describe('GET /api/v1/stats/open/series', () => {
  it('answers for each date what /stats/open?atDate answers, in every scope and with filters', async () => {
    for (const path of SCOPES) await expectPointByPoint(path);
    await expectPointByPoint(`stats/open?teams=${TEAM_X}`, MEMBER_X);
    await expectPointByPoint(`teams/${TEAM_X}/stats/open`, MEMBER_X);
    // The history does show in it: s3's high open in January, fixed at the end of it.
    const { body } = await metric('stats/open/series?atDates=2024-01-15,2024-02-15');
    expect(body.open_issues_series.map((p: { open_issues: { high: number } }) => p.open_issues.high)).toEqual([1, 0]);
  });

  it('leaves out at each date the findings suppressed then, as the points do', async () => {
    // Made on 04-20 (the clock moved back): an accepted risk on s4's medium until 05-15, a false positive on s1's critical.
    clock = epoch('2024-04-20T12:00:00Z');
    await json(
      putDecision(
        svc.metricsApiUrl!,
        slaFinding('s4', M),
        { decision: 'accepted_risk', reason: 'A WAF rule.', expires_at: '2024-05-15T00:00:00Z' },
        ADMIN,
      ),
    );
    await json(putDecision(svc.metricsApiUrl!, slaFinding('s1', C), { decision: 'false_positive', reason: 'Not reachable.' }, ADMIN));
    await json(putDecision(svc.metricsApiUrl!, slaFinding('s3', H), { decision: 'false_positive', reason: 'Old.' }, ADMIN));
    clock = epoch(SLA_NOW);
    for (const path of [...SCOPES, 'stats/open?includeSuppressed=true']) await expectPointByPoint(path);
    await expectPointByPoint(`stats/open?teams=${TEAM_X}`, MEMBER_X);
    const { body } = await metric('stats/open/series?atDates=2024-04-21,2024-05-16');
    // The medium is left out while its accepted risk lasts, counted again after it expired.
    expect(body.open_issues_series.map((p: { open_issues: { medium: number } }) => p.open_issues.medium)).toEqual([0, 1]);
  });

  it('is cached like the other metrics and follows a decision', async () => {
    const path = `teams/${TEAM_Y}/stats/open/series?atDates=2024-05-01,2024-06-02`;
    // A decision made now (06-01) suppresses from then on: the second point.
    const first = await metric(path);
    expect((await metric(path)).cache).toBe('HIT');
    expect(first.body.open_issues_series[1].open_issues.informational).toBe(1);
    await json(
      putDecision(svc.metricsApiUrl!, slaFinding('s7', { summary: 'SLA informational', score: 0 }), {
        decision: 'false_positive',
        reason: 'Noise.',
      }),
    );
    const after = await metric(path);
    expect(after.cache).toBe('MISS');
    expect(after.body.open_issues_series[1].open_issues.informational).toBe(0);
  });

  it('takes each date once in ascending order, and refuses a request without dates or with bad ones', async () => {
    const { body } = await metric('stats/open/series?atDates=2024-05-01,2024-03-01,2024-05-01');
    expect(body.open_issues_series.map((p: { date: string }) => p.date)).toEqual(['2024-03-01', '2024-05-01']);
    const hundredAndOne = Array.from({ length: 101 }, (_, i) => new Date(Date.UTC(2024, 0, 1) + i * 86_400_000).toISOString().slice(0, 10));
    for (const query of ['', '?atDates=', '?atDates=2024-02-30', '?atDates=2024-01-01,x', `?atDates=${hundredAndOne.join(',')}`]) {
      const res = await fetchMetric(svc.metricsApiUrl!, `stats/open/series${query}`, ADMIN);
      expect([res.status, res.body], query).toEqual([422, { code: 422, error: 'Invalid query params', type: 'Validation' }]);
    }
    expect((await metric(`stats/open/series?atDates=${hundredAndOne.slice(1).join(',')}`)).body.open_issues_series).toHaveLength(100);
  });

  it('is authorized like the other metrics', async () => {
    expect((await fetchMetric(svc.metricsApiUrl!, 'stats/open/series?atDates=2024-05-01', MEMBER_X)).status).toBe(403);
    expect((await fetchMetric(svc.metricsApiUrl!, `teams/${TEAM_Y}/stats/open/series?atDates=2024-05-01`, MEMBER_X)).status).toBe(403);
    expect((await fetchMetric(svc.metricsApiUrl!, 'stats/open/series?atDates=2024-05-01', 'nonsense')).status).toBe(401);
  });
});
