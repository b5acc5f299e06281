import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Suppression } from '../src/decisions/suppression.js';
import { DEFAULT_SLA_POLICY } from '../src/sla/policy.js';
import { assetStats } from '../src/stats/assets.js';
import { currentExposureStats, totalExposureStats } from '../src/stats/exposure.js';
import { findingCounts } from '../src/stats/counts.js';
import type { StatFilters } from '../src/stats/filters.js';
import { issueStats } from '../src/stats/issues.js';
import { mttrStats } from '../src/stats/mttr.js';
import { slaStats } from '../src/stats/sla.js';
import type { Store } from '../src/storage/gateway.js';
import { epoch } from './support/api.js';
import { METRICS_SECRET, metricsToken, putDecision } from './support/metrics.js';
import { json, startTestService, type TestService } from './support/service.js';
import { C, H, I, L, M, SLA_NOW, SLA_REPORTS, SLA_TARGETS, scan, slaFinding, TEAM_X, TEAM_Y } from './support/sla-history.js';

/**
 * Statistics leave out the findings suppressed at their reference instant (SPEC §12.3). Checked
 * here by hand on one history; decisions-suppression.property.test.ts checks every statistic
 * against the history without the suppressed findings.
 */

const ADMIN = metricsToken({ sub: 'root', admin: true });
let clock = epoch('2024-03-15T00:00:00Z');
let svc: TestService;
const now = epoch(SLA_NOW);

const decide = (finding: string, body: unknown) => json(putDecision(svc.metricsApiUrl!, finding, body, ADMIN));

beforeAll(async () => {
  svc = await startTestService({ now: () => clock, env: { JWT_SECRET: METRICS_SECRET } });
  for (const [identifier, teams] of Object.entries(SLA_TARGETS)) await json(svc.postJson('/targets', { identifier, teams }), 201);
  // s4's medium is also fixed on 04-10 and found again on 04-20: a period after a range's end; s5's
  // low is found again on 05-01 with a medium: two findings open since the same instant.
  const more = [scan('s4', '04-10', []), scan('s4', '04-20', [M]), scan('s5', '05-01', [L, M])];
  for (const r of [...SLA_REPORTS, ...more]) await json(svc.postJson('/checks', r), 202);
  await svc.settle();
  // Decided on 03-15: the high on s3 (fixed twice), the medium on s4 (in both teams).
  await decide(slaFinding('s3', H), { decision: 'accepted_risk', reason: 'Compensating control.', expires_at: '2024-09-01T00:00:00Z' });
  await decide(slaFinding('s4', M), { decision: 'false_positive', reason: 'Not reachable.' });
  // Decided the day before now: a critical and an informational, both open.
  clock = now - 86_400;
  await decide(slaFinding('s1', C), { decision: 'false_positive', reason: 'Scanner misread the banner.' });
  await decide(slaFinding('s7', I), { decision: 'accepted_risk', reason: 'Lab host.', expires_at: '2024-07-01T00:00:00Z' });
  // Both findings of s5 (same exposure), and s8's high, breached exactly at now (no team).
  for (const v of [L, M]) await decide(slaFinding('s5', v), { decision: 'false_positive', reason: 'Decommissioned port.' });
  await decide(slaFinding('s8', H), { decision: 'accepted_risk', reason: 'Fix scheduled.', expires_at: '2024-06-15T00:00:00Z' });
  clock = now;
});
afterAll(() => svc.close());

const SCOPES: StatFilters[] = [
  {},
  { team: TEAM_X },
  { team: TEAM_Y },
  { teams: [TEAM_X, TEAM_Y] },
  { identifier: 's4.sla', identifierMatch: false },
  // Selections that leave some suppressed findings out (the copy tells them apart itself).
  { teams: [TEAM_Y] },
  { identifiers: ['s1.sla.example.com', 's2.sla.example.com'] },
  { identifier: 's4.sla.example.com', identifierMatch: true },
];
const FILTERS: StatFilters[] = [
  {},
  { atDate: epoch('2024-04-20T00:00:00Z') },
  { minDate: epoch('2024-01-15T00:00:00Z'), maxDateEnd: epoch('2024-05-01T00:00:00Z') },
  { minDate: epoch('2024-02-15T00:00:00Z'), maxDateEnd: epoch('2024-04-15T00:00:00Z') },
  { labels: ['crit'] },
  { minScore: 4 },
];

/** Every additive statistic of a selection, as the API computes it (on `store`: the service's by default). */
async function additive(f: StatFilters, store: Store = svc.store, suppression = svc.suppression) {
  const current = f.atDate === undefined && f.minDate === undefined;
  return {
    open: await findingCounts(store, suppression, 'OPEN', f, now),
    fixed: await findingCounts(store, suppression, 'FIXED', f, now),
    mttr: await mttrStats(store, suppression, f, now),
    sla: await slaStats(store, suppression, f, now, DEFAULT_SLA_POLICY),
    exposure: f.minDate === undefined ? await totalExposureStats(store, suppression, f, now) : null,
    current: f.minDate === undefined ? await currentExposureStats(store, suppression, f, now) : null,
    assets: current && f.minScore === undefined ? await assetStats(store, suppression, f, now) : null,
    issues: (await issueStats(store, suppression, f, { page: 1, size: 50 }, now)).rows,
  };
}

describe('suppressed findings left out of statistics (SPEC §12.3)', () => {
  it('without includeSuppressed the decided findings are not counted', async () => {
    const left = await additive({});
    const all = await additive({ includeSuppressed: true });
    // Open now: the critical on s1 and the informational on s7 are suppressed; s4's and s5's
    // mediums, s5's low and s8's high too.
    expect(all.open.critical - left.open.critical).toBe(1);
    expect(all.open.medium - left.open.medium).toBe(2);
    expect(all.open.low - left.open.low).toBe(1);
    expect(all.open.high - left.open.high).toBe(1);
    expect(all.open.informational - left.open.informational).toBe(1);
    // s8 is breached exactly at now.
    expect(all.sla.breached.high - left.sla.breached.high).toBe(1);
    // s3's high: two periods of 30 d (720 h) and 45 d (1,080 h) leave MTTR.
    expect(all.sla.fixed.high - left.sla.fixed.high).toBe(2);
    expect(left.mttr.high).toBe(0);
    expect(all.assets!.total).toBe(left.assets!.total);
  });

  it('gives the same answers where the store is shared with other processes (decisions always considered)', async () => {
    const shared: Store = { ...svc.store, exclusive: false };
    const suppression = new Suppression(shared);
    for (const scope of SCOPES) {
      for (const filter of FILTERS) {
        const f = { ...scope, ...filter };
        expect(await additive(f, shared, suppression), JSON.stringify(f)).toEqual(await additive(f));
      }
    }
  });

  it('adds no condition with includeSuppressed, else one on the findings ids', async () => {
    const fresh = new Suppression(svc.store);
    expect(await fresh.mayExist()).toBe(true); // this store holds decisions
    fresh.decided();
    expect(await fresh.notSuppressedAt({ includeSuppressed: true }, now)).toBeUndefined();
    expect((await fresh.notSuppressedAt({}, now))?.where[0]).toMatch(/^NOT id IN/);
  });
});
