import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SuppressedRows, suppressedRows, withSuppressedRows } from '../src/decisions/suppression.js';
import { DEFAULT_SLA_POLICY } from '../src/sla/policy.js';
import { assetStats } from '../src/stats/assets.js';
import { currentExposureStats, totalExposureStats } from '../src/stats/exposure.js';
import { findingCounts } from '../src/stats/counts.js';
import type { StatFilters } from '../src/stats/filters.js';
import { issueStats } from '../src/stats/issues.js';
import { mttrStats } from '../src/stats/mttr.js';
import { slaStats } from '../src/stats/sla.js';
import type { Store } from '../src/storage/gateway.js';
import { DataChanged } from '../src/storage/store-errors.js';
import { epoch } from './support/api.js';
import { METRICS_SECRET, metricsToken, putDecision } from './support/metrics.js';
import { json, startTestService, type TestService } from './support/service.js';
import { C, H, I, L, M, SLA_NOW, SLA_REPORTS, SLA_TARGETS, scan, slaFinding, TEAM_X, TEAM_Y } from './support/sla-history.js';

/**
 * Additive statistics (and the counts per value exposure percentiles are read from) subtract the findings suppressed at their reference instant (SPEC §12.3),
 * read either from the copy of their rows the process keeps for a quiet state of the data
 * (src/decisions/suppressed-rows.ts) or, once the data changed, by the statement itself. Both
 * must give the same answers for every statistic, scope and filter; the answers themselves are
 * checked by hand in decisions-stats.test.ts and sla-*.test.ts.
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
async function additive(f: StatFilters, store: Store = svc.store) {
  const current = f.atDate === undefined && f.minDate === undefined;
  return {
    open: await findingCounts(store, 'OPEN', f, now),
    fixed: await findingCounts(store, 'FIXED', f, now),
    mttr: await mttrStats(store, f, now),
    sla: await slaStats(store, f, now, DEFAULT_SLA_POLICY),
    exposure: f.minDate === undefined ? await totalExposureStats(store, f, now) : null,
    current: f.minDate === undefined ? await currentExposureStats(store, f, now) : null,
    assets: current && f.minScore === undefined ? await assetStats(store, f, now) : null,
    issues: (await issueStats(store, f, { page: 1, size: 50 }, now)).rows,
  };
}

const referenceOf = (f: StatFilters) => f.atDate ?? (f.maxDateEnd !== undefined ? Math.min(f.maxDateEnd, now) : now);

/** The rows a statistic of `f` would subtract now, once the copy for its instant is made. */
async function fromCopy(f: StatFilters): Promise<SuppressedRows | undefined> {
  for (let i = 0; i < 100; i++) {
    const rows = await suppressedRows(svc.store, f, referenceOf(f));
    if (!rows || rows.options.unchangedSince !== undefined) return rows;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('no copy of the suppressed rows was made');
}

/** A statement that, as far as the store can tell, may have changed data: every copy is outdated. */
const change = () => svc.store.command('SELECT 1');

describe('suppressed findings subtracted from additive statistics (SPEC §12.3)', () => {
  it('gives the same answers from the copy of their rows as from the statement, in every scope and filter', async () => {
    let compared = 0;
    for (const scope of SCOPES) {
      for (const filter of FILTERS) {
        const f = { ...scope, ...filter };
        const copy = await fromCopy(f);
        const viaCopy = await additive(f);
        await change();
        expect((await suppressedRows(svc.store, f, referenceOf(f)))?.options.unchangedSince).toBeUndefined();
        expect(viaCopy, JSON.stringify(f)).toEqual(await additive(f));
        if (copy) compared++;
      }
    }
    // Most selections have a suppressed finding (not those before the first decision).
    expect(compared).toBeGreaterThanOrEqual(15);
  });

  it('gives the same answers where the store is a server: the rows read by the activity predicate, lapses in the statement', async () => {
    // The same engine seen as a server: no process-held intervals, sets, lapses or copies.
    const server: Store = { ...svc.store, mode: 'server' };
    expect(await suppressedRows(server, {}, now)).toMatchObject({ from: 'findings FINAL', options: {} });
    for (const scope of SCOPES) {
      for (const filter of FILTERS) {
        const f = { ...scope, ...filter };
        expect(await additive(f, server), JSON.stringify(f)).toEqual(await additive(f));
      }
    }
  });

  it('subtracts: without includeSuppressed the decided findings are not counted', async () => {
    await fromCopy({});
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

  it('reads the rows in the statement when the data changed after the copy it was given', async () => {
    const f: StatFilters = { team: TEAM_X };
    await fromCopy(f);
    const given: (number | undefined)[] = [];
    const n = await withSuppressedRows(svc.store, f, now, async (rows) => {
      given.push(rows!.options.unchangedSince);
      // A change reaches the engine between the copy's choice and the statement: it is refused.
      if (given.length === 1) await change();
      const [row] = await svc.store.query<{ n: number }>(
        `SELECT count() AS n FROM ${rows!.from} WHERE ${rows!.scope.where.join(' AND ')}`,
        rows!.scope.params,
        rows!.options,
      );
      return row!.n;
    });
    expect(given).toHaveLength(2);
    expect(given[0]).toBeTypeOf('number');
    expect(given[1]).toBeUndefined();
    // Team X: s1's critical, s3's high and s4's medium.
    expect(n).toBe(3);
  });

  it('refuses a statement bound to a state of the data that has changed, before it runs', async () => {
    const before = svc.store.changes();
    await change();
    expect(svc.store.changes()).toBe(before + 1);
    await expect(svc.store.query('SELECT 1', {}, { unchangedSince: before })).rejects.toBeInstanceOf(DataChanged);
    await expect(svc.store.query('SELECT 1 AS one', {}, { unchangedSince: before + 1 })).resolves.toEqual([{ one: 1 }]);
    // Scratch statements (the process's own tables) and reads change nothing.
    await svc.store.command('SELECT 1', {}, { scratch: true });
    await svc.store.query('SELECT 1');
    expect(svc.store.changes()).toBe(before + 1);
  });
});
