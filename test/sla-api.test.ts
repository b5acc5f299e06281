import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { slaStatsResponse } from '../src/stats/schema.js';
import { epoch, failure, get, ingest } from './support/api.js';
import { fetchMetric, METRICS_SECRET, metricsToken } from './support/metrics.js';
import { json, startTestService, type TestService } from './support/service.js';
import { C, H, I, L, M, SLA_NOW, SLA_REPORTS, SLA_TARGETS, slaFinding, TEAM_X, TEAM_Y } from './support/sla-history.js';

/**
 * SPEC §12.1–§12.2 through both APIs, on the history of test/support/sla-history.ts (expected
 * values counted by hand from its table): GET /stats/sla, the metrics API's team and global
 * /stats/sla, `sla_due` on finding objects and `sla=` on every findings list, and SLA_DAYS
 * reaching the answers.
 */

const NOW = epoch(SLA_NOW);
let svc: TestService;

const ids = {
  s1: slaFinding('s1', C),
  s2: slaFinding('s2', C),
  s3: slaFinding('s3', H),
  s4: slaFinding('s4', M),
  s5: slaFinding('s5', L),
  s6: slaFinding('s6', I),
  s7: slaFinding('s7', I),
  s8: slaFinding('s8', H),
};
const nameOf = (id: string) => Object.entries(ids).find(([, v]) => v === id)?.[0] ?? id;

async function findings(path: string): Promise<{ name: string; status: string; sla_due: string | null }[]> {
  const res = await svc.db(path);
  const body = (await json(res, 200)) as { findings: { id: string; status: string; sla_due: string | null }[] };
  return body.findings
    .map((f) => ({ name: nameOf(f.id), status: f.status, sla_due: f.sla_due }))
    .sort((a, b) => (a.name < b.name ? -1 : 1));
}
const names = async (path: string) => (await findings(path)).map((f) => f.name);

async function metric(path: string, token = metricsToken({ admin: true })) {
  const res = await fetchMetric(svc.metricsApiUrl!, path, token);
  return { status: res.status, body: res.body };
}

beforeAll(async () => {
  svc = await startTestService({ now: () => NOW, env: { JWT_SECRET: METRICS_SECRET } });
  for (const [identifier, teams] of Object.entries(SLA_TARGETS)) {
    if (teams.length > 0) await json(svc.postJson('/targets', { identifier, teams }), 201);
  }
  await ingest(svc, SLA_REPORTS);
}, 60_000);

afterAll(async () => {
  await svc?.close();
});

describe('GET /stats/sla', () => {
  it('answers the hand-computed statistic now, with the default policy', async () => {
    expect(await get(svc, '/stats/sla', slaStatsResponse)).toEqual({
      sla: {
        policy_days: { critical: 7, high: 30, medium: 90, low: 180, informational: null },
        open: { critical: 2, high: 1, medium: 1, low: 0, informational: 1, total: 5 },
        breached: { critical: 1, high: 1, medium: 1, low: 0, informational: 0, total: 3 },
        fixed: { critical: 0, high: 2, medium: 0, low: 1, informational: 1, total: 4 },
        fixed_within: { critical: 0, high: 1, medium: 0, low: 1, informational: null, total: 2 },
        compliance: { critical: null, high: 0.5, medium: null, low: 1, informational: null, total: 0.6667 },
      },
    });
  });

  it('takes atDate, a range, teams and scores, and accepts includeSuppressed', async () => {
    const at = await get(svc, '/stats/sla?atDate=2024-05-25', slaStatsResponse);
    expect(at.sla.breached).toEqual({ critical: 0, high: 0, medium: 1, low: 0, informational: 0, total: 1 });
    const april = await get(svc, '/stats/sla?minDate=2024-04-01&maxDate=2024-04-30', slaStatsResponse);
    expect(april.sla.fixed).toEqual({ critical: 0, high: 1, medium: 0, low: 0, informational: 0, total: 1 });
    expect(april.sla.compliance.total).toBe(0);
    const both = await get(svc, `/stats/sla?teams=${TEAM_X},${TEAM_Y}`, slaStatsResponse);
    expect(both.sla.open.total).toBe(4);
    expect((await get(svc, `/stats/sla?team=${TEAM_Y}&minScore=4&maxScore=6`, slaStatsResponse)).sla.open.total).toBe(1);
    expect((await get(svc, '/stats/sla?identifiers=s3.sla.example.com&labels=crit', slaStatsResponse)).sla.fixed.total).toBe(0);
    expect(await get(svc, '/stats/sla?includeSuppressed=true', slaStatsResponse)).toEqual(await get(svc, '/stats/sla', slaStatsResponse));
  });

  it.each([
    ['atDate=2024-05-25&minDate=2024-01-01', 'Filter parameters combination is invalid'],
    ['minDate=2024-05-02&maxDate=2024-05-01', 'Filter parameters combination is invalid'],
    ['atDate=2024-02-30', 'Malformed Date'],
    ['minScore=high', 'Malformed Score'],
    ['includeSuppressed=yes', 'Malformed Boolean'],
  ])('refuses %s with 400 %s', async (query, message) => {
    expect(await failure(svc, `/stats/sla?${query}`)).toEqual({ status: 400, body: { message } });
  });
});

describe('the metrics API /stats/sla', () => {
  it('answers for a team, several teams and globally what the database API answers for the same scope', async () => {
    for (const q of ['', 'atDate=2024-03-05', 'minDate=2024-01-05&maxDate=2024-04-30', 'minScore=7', 'labels=crit']) {
      const team = await metric(`teams/${TEAM_X}/stats/sla${q ? `?${q}` : ''}`);
      expect(team.status).toBe(200);
      expect(team.body, q).toEqual(await get(svc, `/stats/sla?team=${TEAM_X}${q ? `&${q}` : ''}`, slaStatsResponse));
      const global = await metric(`stats/sla${q ? `?${q}` : ''}`);
      expect(global.body, q).toEqual(await get(svc, `/stats/sla${q ? `?${q}` : ''}`, slaStatsResponse));
      const teams = await metric(`stats/sla?teams=${TEAM_X},${TEAM_Y}${q ? `&${q}` : ''}`);
      expect(teams.body, q).toEqual(await get(svc, `/stats/sla?teams=${TEAM_X},${TEAM_Y}${q ? `&${q}` : ''}`, slaStatsResponse));
    }
    expect((await metric(`teams/${TEAM_X}/stats/sla`)).body.sla.breached.total).toBe(2);
  });

  it('applies the metrics API authorization and validation rules', async () => {
    const member = metricsToken({ teams: [TEAM_X] });
    expect((await metric(`teams/${TEAM_X}/stats/sla`, member)).status).toBe(200);
    expect((await metric(`teams/${TEAM_Y}/stats/sla`, member)).body).toMatchObject({ code: 403, type: 'Forbidden' });
    expect((await metric('stats/sla', member)).body).toMatchObject({ code: 403, type: 'Forbidden' });
    expect((await metric(`stats/sla?teams=${TEAM_X}`, member)).status).toBe(200);
    expect((await metric('teams/not-a-uuid/stats/sla')).body).toMatchObject({ code: 422, error: 'ID is malformed' });
    for (const q of ['atDate=2024-13-01', 'atDate=2024-05-25&maxDate=2024-06-01', 'minScore=x', 'includeSuppressed=maybe']) {
      expect((await metric(`teams/${TEAM_X}/stats/sla?${q}`)).body, q).toEqual({
        code: 422,
        error: 'Invalid query params',
        type: 'Validation',
      });
    }
    const anonymous = await fetch(`${svc.metricsApiUrl}/api/v1/stats/sla`);
    expect(anonymous.status).toBe(401);
  });
});

describe('sla_due and sla= on findings lists', () => {
  it('gives each finding the deadline of its period OPEN now, or null (not OPEN, or no SLA)', async () => {
    expect(await findings('/findings')).toEqual([
      { name: 's1', status: 'OPEN', sla_due: '2024-05-27T00:00:00Z' },
      { name: 's2', status: 'OPEN', sla_due: '2024-06-06T00:00:00Z' },
      { name: 's3', status: 'FIXED', sla_due: null },
      { name: 's4', status: 'OPEN', sla_due: '2024-05-01T00:00:00Z' },
      { name: 's5', status: 'FIXED', sla_due: null },
      { name: 's6', status: 'FIXED', sla_due: null },
      { name: 's7', status: 'OPEN', sla_due: null },
      { name: 's8', status: 'OPEN', sla_due: '2024-06-01T00:00:00Z' },
    ]);
  });

  it('gives the deadline of the period OPEN at atDate: a reopened finding counts from its re-detection', async () => {
    const at = await findings('/findings?atDate=2024-03-05');
    expect(at.find((f) => f.name === 's3')).toEqual({ name: 's3', status: 'OPEN', sla_due: '2024-03-31T00:00:00Z' });
    expect(at.find((f) => f.name === 's5')).toEqual({ name: 's5', status: 'OPEN', sla_due: '2024-08-28T00:00:00Z' });
    expect(at.find((f) => f.name === 's6')).toEqual({ name: 's6', status: 'FIXED', sla_due: null });
    const single = (await json(svc.db(`/findings/${ids.s1}`), 200)) as { finding: { sla_due: string | null } };
    expect(single.finding.sla_due).toBe('2024-05-27T00:00:00Z');
  });

  it('selects breached and within findings now and at atDate; a deadline reached exactly now is breached', async () => {
    expect(await names('/findings?sla=breached')).toEqual(['s1', 's4', 's8']);
    expect(await names('/findings?sla=within')).toEqual(['s2', 's7']);
    expect(await names('/findings?sla=breached&atDate=2024-05-25')).toEqual(['s4']);
    expect(await names('/findings?sla=within&atDate=2024-05-25')).toEqual(['s1', 's7', 's8']);
    expect(await names('/findings?sla=within&atDate=2024-03-05')).toEqual(['s3', 's4', 's5']);
    expect(await names(`/findings?sla=breached&team=${TEAM_X}&minScore=9`)).toEqual(['s1']);
    expect(await names('/findings?sla=')).toHaveLength(8);
  });

  it('filters every findings sub-list the same way', async () => {
    const target = (await json(svc.db(`/findings/${ids.s1}`), 200)) as { finding: { target: { id: string }; issue: { id: string } } };
    expect(await names(`/targets/${target.finding.target.id}/findings?sla=breached`)).toEqual(['s1']);
    expect(await names(`/targets/${target.finding.target.id}/findings?sla=within`)).toEqual([]);
    expect(await names(`/issues/${target.finding.issue.id}/findings?sla=within`)).toEqual(['s2']);
    expect(await names(`/issues/${target.finding.issue.id}/findings?sla=breached&atDate=2024-05-25`)).toEqual([]);
  });

  it('refuses another sla value with 400 Invalid SLA on every list', async () => {
    for (const path of ['/findings?sla=late', '/findings?sla=BREACHED', `/issues/${ids.s1}/findings?sla=x`]) {
      expect(await failure(svc, path)).toEqual({ status: 400, body: { message: 'Invalid SLA' } });
    }
  });
});

describe('triage decisions (SPEC §12.3)', () => {
  it('leave a suppressed finding out of /stats/sla of both APIs at and after the decision, unless includeSuppressed=true', async () => {
    const url = `${svc.metricsApiUrl}/api/v1/findings/${ids.s1}/decision`;
    const headers = { Authorization: `Bearer ${metricsToken({ admin: true })}`, 'Content-Type': 'application/json' };
    const made = await fetch(url, {
      method: 'PUT',
      headers,
      body: JSON.stringify({ decision: 'false_positive', reason: 'scanner error' }),
    });
    expect(made.status).toBe(200);
    try {
      // s1 (critical, breached) is gone from open, breached and compliance's scope.
      const now = await get(svc, '/stats/sla', slaStatsResponse);
      expect(now.sla.open).toEqual({ critical: 1, high: 1, medium: 1, low: 0, informational: 1, total: 4 });
      expect(now.sla.breached).toEqual({ critical: 0, high: 1, medium: 1, low: 0, informational: 0, total: 2 });
      expect((await metric(`teams/${TEAM_X}/stats/sla`)).body.sla.breached.total).toBe(1);
      const all = await get(svc, '/stats/sla?includeSuppressed=true', slaStatsResponse);
      expect(all.sla.breached.total).toBe(3);
      // Before the decision (made at now) s1 still counts.
      expect((await get(svc, '/stats/sla?atDate=2024-05-25', slaStatsResponse)).sla.open.critical).toBe(1);
      expect(await names('/findings?sla=breached')).toEqual(['s1', 's4', 's8']);
    } finally {
      expect((await fetch(url, { method: 'DELETE', headers })).status).toBe(204);
    }
    expect((await get(svc, '/stats/sla', slaStatsResponse)).sla.breached.total).toBe(3);
  });
});

describe('a custom SLA_DAYS', () => {
  it('reaches the statistic of both APIs, sla_due and the sla= filter', async () => {
    const custom = await startTestService({ now: () => NOW, env: { JWT_SECRET: METRICS_SECRET, SLA_DAYS: 'critical=3,informational=10' } });
    try {
      await ingest(custom, SLA_REPORTS);
      const res = await custom.db('/stats/sla');
      const body = slaStatsResponse.parse(await json(res, 200));
      expect(body.sla.policy_days).toEqual({ critical: 3, high: null, medium: null, low: null, informational: 10 });
      // s1 (05-20 + 3 d) and s7 (04-01 + 10 d); s2 is due 06-02; high, medium and low have no SLA.
      expect(body.sla.breached).toEqual({ critical: 1, high: 0, medium: 0, low: 0, informational: 1, total: 2 });
      const viaMetrics = await fetchMetric(custom.metricsApiUrl!, 'stats/sla', metricsToken({ admin: true }));
      expect(viaMetrics.body).toEqual(body);
      const list = (await json(custom.db('/findings?sla=breached'), 200)) as { findings: { id: string; sla_due: string | null }[] };
      expect(list.findings.map((f) => [nameOf(f.id), f.sla_due]).sort()).toEqual([
        ['s1', '2024-05-23T00:00:00Z'],
        ['s7', '2024-04-11T00:00:00Z'],
      ]);
    } finally {
      await custom.close();
    }
  }, 60_000);
});
