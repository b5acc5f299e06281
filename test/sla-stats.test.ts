import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDate } from '../src/domain/time.js';
import { DEFAULT_SLA_POLICY, parseSlaDays } from '../src/sla/policy.js';
import type { StatFilters } from '../src/stats/filters.js';
import { slaStats } from '../src/stats/sla.js';
import { epoch, ingest } from './support/api.js';
import { json, startTestService, type TestService } from './support/service.js';
import { SLA_NOW, SLA_REPORTS, SLA_TARGETS, TEAM_X, TEAM_Y } from './support/sla-history.js';

/**
 * SPEC §12.2 computed by the statement itself (src/stats/sla.ts) on the history of
 * test/support/sla-history.ts, ingested through the real queue and worker. Every expected value
 * below is counted by hand from that table.
 */

const NOW = epoch(SLA_NOW);
const DEFAULT_DAYS = { critical: 7, high: 30, medium: 90, low: 180, informational: null };
const day = (d: string) => parseDate(d)!;

let svc: TestService;
const stats = (f: StatFilters = {}, policy = DEFAULT_SLA_POLICY) => slaStats(svc.store, svc.suppression, f, NOW, policy);

beforeAll(async () => {
  svc = await startTestService({ now: () => NOW });
  for (const [identifier, teams] of Object.entries(SLA_TARGETS)) {
    if (teams.length > 0) await json(svc.postJson('/targets', { identifier, teams }), 201);
  }
  await ingest(svc, SLA_REPORTS);
}, 60_000);

afterAll(async () => {
  await svc?.close();
});

describe('GET /stats/sla as computed by the engine', () => {
  it('counts open and breached findings now; a deadline reached exactly at now is breached; fixed periods before now, s3 twice', async () => {
    expect(await stats()).toEqual({
      policy_days: DEFAULT_DAYS,
      // s1, s2 critical; s8 high; s4 medium; s7 informational.
      open: { critical: 2, high: 1, medium: 1, low: 0, informational: 1, total: 5 },
      // s1 (deadline 05-27), s8 (deadline = now), s4 (05-01); s7 has no SLA.
      breached: { critical: 1, high: 1, medium: 1, low: 0, informational: 0, total: 3 },
      // s3's two periods, s5, s6.
      fixed: { critical: 0, high: 2, medium: 0, low: 1, informational: 1, total: 4 },
      // s3's first period ended exactly at its deadline (within), its second 15 days late; s5 within.
      fixed_within: { critical: 0, high: 1, medium: 0, low: 1, informational: null, total: 2 },
      compliance: { critical: null, high: 0.5, medium: null, low: 1, informational: null, total: 0.6667 },
    });
  });

  it('at a past atDate counts the state at the start of that day and the periods fixed before it', async () => {
    // 2024-03-05: s3 reopened 03-01, s4 open since 02-01, s5 open 03-01 → 03-10; none past its deadline.
    expect(await stats({ atDate: day('2024-03-05') })).toMatchObject({
      open: { critical: 0, high: 1, medium: 1, low: 1, informational: 0, total: 3 },
      breached: { critical: 0, high: 0, medium: 0, low: 0, informational: 0, total: 0 },
      fixed: { critical: 0, high: 1, medium: 0, low: 0, informational: 1, total: 2 },
      fixed_within: { critical: 0, high: 1, medium: 0, low: 0, informational: null, total: 1 },
      compliance: { critical: null, high: 1, medium: null, low: null, informational: null, total: 1 },
    });
    // 2024-05-25: s1 within (deadline 05-27), s8 within (06-01), s4 breached since 05-01.
    expect(await stats({ atDate: day('2024-05-25') })).toMatchObject({
      open: { critical: 1, high: 1, medium: 1, low: 0, informational: 1, total: 4 },
      breached: { critical: 0, high: 0, medium: 1, low: 0, informational: 0, total: 1 },
    });
  });

  it('with a date range counts only the periods fixed in it; open and breached stay at now', async () => {
    const april = await stats({ minDate: day('2024-04-01'), maxDateEnd: day('2024-05-01') });
    expect(april).toMatchObject({
      open: { total: 5 },
      breached: { total: 3 },
      fixed: { critical: 0, high: 1, medium: 0, low: 0, informational: 0, total: 1 },
      fixed_within: { critical: 0, high: 0, medium: 0, low: 0, informational: null, total: 0 },
      compliance: { critical: null, high: 0, medium: null, low: null, informational: null, total: 0 },
    });
    // Only a lower bound: every fix from January 5 on (s6's fix on 01-05 is in, s3's 01-31 too).
    const fromJan5 = await stats({ minDate: day('2024-01-05') });
    expect(fromJan5.fixed).toEqual({ critical: 0, high: 2, medium: 0, low: 1, informational: 1, total: 4 });
    const fromJan6 = await stats({ minDate: day('2024-01-06') });
    expect(fromJan6.fixed.informational).toBe(0);
    // The upper bound is the whole of maxDate: s3's 01-31 fix is in a range ending 01-31.
    const january = await stats({ maxDateEnd: day('2024-02-01') });
    expect(january.fixed).toEqual({ critical: 0, high: 1, medium: 0, low: 0, informational: 1, total: 2 });
    expect(january.compliance.total).toBe(1);
  });

  it('takes a custom policy: severities it does not list have no SLA (nulls, never breached)', async () => {
    const policy = parseSlaDays('critical=3, informational=10');
    expect(await stats({}, policy)).toEqual({
      policy_days: { critical: 3, high: null, medium: null, low: null, informational: 10 },
      open: { critical: 2, high: 1, medium: 1, low: 0, informational: 1, total: 5 },
      // s1 (05-23), s7 (04-11); s2's deadline is 06-02; s8 and s4 have no SLA now.
      breached: { critical: 1, high: 0, medium: 0, low: 0, informational: 1, total: 2 },
      fixed: { critical: 0, high: 2, medium: 0, low: 1, informational: 1, total: 4 },
      // s6 fixed in 4 days of 10.
      fixed_within: { critical: 0, high: null, medium: null, low: null, informational: 1, total: 1 },
      compliance: { critical: null, high: null, medium: null, low: null, informational: 1, total: 1 },
    });
  });

  it('counts a finding of two selected teams once, and each team on its own', async () => {
    expect(await stats({ team: TEAM_X })).toMatchObject({
      open: { critical: 2, high: 0, medium: 1, low: 0, informational: 0, total: 3 },
      breached: { critical: 1, high: 0, medium: 1, low: 0, informational: 0, total: 2 },
      fixed: { high: 2, total: 2 },
      compliance: { high: 0.5, total: 0.5 },
    });
    expect(await stats({ team: TEAM_Y })).toMatchObject({
      open: { medium: 1, informational: 1, total: 2 },
      breached: { medium: 1, total: 1 },
      fixed: { low: 1, informational: 1, total: 2 },
      compliance: { low: 1, total: 1 },
    });
    // s4 belongs to both teams and is counted once; s8 (no team) is outside.
    expect(await stats({ teams: [TEAM_X, TEAM_Y] })).toMatchObject({
      open: { critical: 2, high: 0, medium: 1, low: 0, informational: 1, total: 4 },
      breached: { critical: 1, high: 0, medium: 1, total: 2 },
      fixed: { high: 2, low: 1, informational: 1, total: 4 },
    });
  });

  it('applies the score, label and identifier filters to the scope', async () => {
    expect((await stats({ minScore: 7 })).open).toEqual({ critical: 2, high: 1, medium: 0, low: 0, informational: 0, total: 3 });
    expect((await stats({ labels: ['crit'] })).breached.total).toBe(1);
    expect((await stats({ identifiers: ['s3.sla.example.com'] })).fixed_within.total).toBe(1);
  });

  it("at now, from the findings' durations, answers what the periods answer at T = now; before a later instant it reads the periods", async () => {
    // Without atDate the statement reads each finding's closed durations (sql/0017); atDate = now
    // unnests its periods. Both must agree in every scope, and at a "now" with later instants (a
    // report from the future of that now) the first must give way to the second.
    const scopes: StatFilters[] = [
      {},
      { team: TEAM_X },
      { team: TEAM_Y },
      { teams: [TEAM_X, TEAM_Y] },
      { minScore: 7 },
      { labels: ['crit'] },
    ];
    const policies = [DEFAULT_SLA_POLICY, parseSlaDays('critical=3, informational=10'), parseSlaDays('high=1, low=60')];
    const instants = [NOW, day('2024-05-27'), day('2024-03-05'), day('2024-01-05') + 3600, day('2023-12-01')];
    for (const now of instants) {
      for (const policy of policies) {
        for (const f of scopes) {
          const fromDurations = await slaStats(svc.store, svc.suppression, f, now, policy);
          const fromPeriods = await slaStats(svc.store, svc.suppression, { ...f, atDate: now }, now, policy);
          expect(fromDurations, `${new Date(now * 1000).toISOString()} ${JSON.stringify(f)}`).toEqual(fromPeriods);
        }
      }
    }
  });

  it('answers zeros and nulls for a scope without findings', async () => {
    expect(await stats({ team: 'no-such-team' })).toEqual({
      policy_days: DEFAULT_DAYS,
      open: { critical: 0, high: 0, medium: 0, low: 0, informational: 0, total: 0 },
      breached: { critical: 0, high: 0, medium: 0, low: 0, informational: 0, total: 0 },
      fixed: { critical: 0, high: 0, medium: 0, low: 0, informational: 0, total: 0 },
      fixed_within: { critical: 0, high: 0, medium: 0, low: 0, informational: null, total: 0 },
      compliance: { critical: null, high: null, medium: null, low: null, informational: null, total: null },
    });
  });
});
