import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findingId, issueId, sourceId, targetId } from '../src/domain/ids.js';
import { entityMttrResponse } from '../src/findings/schema.js';
import { mttrStatsResponse } from '../src/stats/schema.js';
import { epoch, failure, get, ingest } from './support/api.js';
import { report, type VulnSpec } from './support/reports.js';
import { json, startTestService, type TestService } from './support/service.js';

/**
 * Mean time to remediate: per entity in days (SPEC §6.8: findings, issues, targets, source
 * families) and /stats/mttr in hours (§7.4), rounded to 2 decimals (§0.2). Each target below
 * has hand-picked OPEN periods; TTR = whole hours of each closed period.
 *
 *   target  team  issue (score)   periods (TTR h)          family
 *   m1      X     H (8, high)      48                       W
 *   m2      X     L (2, low)       24                       W
 *   m3      X     L (2, low)       12                       W
 *   m4      Y     H                48, 24                   W
 *   m5      Z     M (5, medium)    10, 10, 11               W
 *   m7      -     TINY (2)         3 (3 h 30 min)           W
 *   m6      -     P (5, medium)    100                      W2 (other options)
 *   m8      -     H                still OPEN               W
 *   m9      -     ZERO (2)         0 (30 min)               W
 */

const NOW = '2024-06-01T00:00:00Z';
const X = 'team-x';
const Y = 'team-y';
const Z = 'team-z';
const H: VulnSpec = { summary: 'High One', score: 8, labels: ['h'] };
const L: VulnSpec = { summary: 'Low One', score: 2, labels: ['l'] };
const M: VulnSpec = { summary: 'Medium One', score: 5 };
const TINY: VulnSpec = { summary: 'Tiny', score: 2, labels: ['l'] };
const ZERO: VulnSpec = { summary: 'Zero TTR', score: 2, labels: ['l'] };
const P: VulnSpec = { summary: 'Deep Finding', score: 5 };

const W2 = '{"deep":true}';
let n = 0;
/** One scan of family vulcan/vulcan-mttr/options on `target` at `at`. */
const scan = (target: string, at: string, vulns: VulnSpec[], options = '{}') =>
  report({
    check_id: `m-${++n}`,
    checktype_name: 'vulcan-mttr',
    options,
    target: `${target}.example.com`,
    end_time: at,
    vulnerabilities: vulns,
  });
const history = [
  scan('m1', '2024-01-01 00:00:00', [H]),
  scan('m1', '2024-01-03 00:00:00', []),
  scan('m2', '2024-01-01 00:00:00', [L]),
  scan('m2', '2024-01-02 00:00:00', []),
  scan('m3', '2024-01-01 00:00:00', [L]),
  scan('m3', '2024-01-01 12:00:00', []),
  scan('m4', '2024-01-10 00:00:00', [H]),
  scan('m4', '2024-01-12 00:00:00', []),
  scan('m4', '2024-01-13 00:00:00', [H]),
  scan('m4', '2024-01-14 00:00:00', []),
  scan('m5', '2024-02-01 00:00:00', [M]),
  scan('m5', '2024-02-01 10:00:00', []),
  scan('m5', '2024-02-02 00:00:00', [M]),
  scan('m5', '2024-02-02 10:00:00', []),
  scan('m5', '2024-02-03 00:00:00', [M]),
  scan('m5', '2024-02-03 11:00:00', []),
  scan('m7', '2024-03-01 00:00:00', [TINY]),
  scan('m7', '2024-03-01 03:30:00', []),
  scan('m6', '2024-04-01 00:00:00', [P], W2),
  scan('m6', '2024-04-05 04:00:00', [], W2),
  scan('m8', '2024-05-01 00:00:00', [H]),
  scan('m9', '2024-05-02 00:00:00', [ZERO]),
  scan('m9', '2024-05-02 00:30:00', []),
];

const tid = (t: string) => targetId(`${t}.example.com`);
const iid = (v: VulnSpec) => issueId(v.summary, '');
const fid = (t: string, v: VulnSpec) => findingId(tid(t), iid(v), `${t}.example.com`);
const sid = (check: string, options = '{}') => sourceId('vulcan', 'vulcan-mttr', check, options);

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ now: () => epoch(NOW) });
  await ingest(svc, history);
  for (const [t, team] of [
    ['m1', X],
    ['m2', X],
    ['m3', X],
    ['m4', Y],
    ['m5', Z],
  ] as const) {
    await json(svc.postJson('/targets', { identifier: `${t}.example.com`, teams: [team] }), 201);
  }
});
afterAll(() => svc.close());

const days = async (path: string) => (await get(svc, path, entityMttrResponse)).mttr;
const stats = async (query = '') => (await get(svc, `/stats/mttr${query ? `?${query}` : ''}`, mttrStatsResponse)).mttr;
const notFound = { status: 404, body: { message: 'Not Found' } };

describe('per-entity MTTR in days (SPEC §6.8)', () => {
  it('is 1.5 for a finding with closed periods of 48 and 24 hours', async () => {
    expect(await days(`/findings/${fid('m4', H)}/mttr`)).toBe(1.5);
  });

  it('is 2 for a finding with one closed period of 48 hours', async () => {
    expect(await days(`/findings/${fid('m1', H)}/mttr`)).toBe(2);
  });

  it('rounds to 2 decimals: 10, 10 and 11 hours give 0.43 days', async () => {
    expect(await days(`/findings/${fid('m5', M)}/mttr`)).toBe(0.43);
  });

  it('floors each period to whole hours and rounds half away from zero: 3 h 30 min gives 3/24 = 0.125 → 0.13', async () => {
    expect(await days(`/findings/${fid('m7', TINY)}/mttr`)).toBe(0.13);
  });

  it('answers a genuine mean of 0 as 0', async () => {
    expect(await days(`/findings/${fid('m9', ZERO)}/mttr`)).toBe(0);
  });

  it('answers 404 Not Found for a finding that was never fixed, or is unknown', async () => {
    expect(await failure(svc, `/findings/${fid('m8', H)}/mttr`)).toEqual(notFound);
    expect(await failure(svc, '/findings/00000000-0000-4000-8000-000000000000/mttr')).toEqual(notFound);
    expect(await failure(svc, '/findings/nope/mttr')).toEqual(notFound);
  });

  it("averages every closed period of an issue's findings on every target: 48, 48 and 24 hours give 1.67", async () => {
    expect(await days(`/issues/${iid(H)}/mttr`)).toBe(1.67);
  });

  it("averages every closed period of a target's findings", async () => {
    expect(await days(`/targets/${tid('m4')}/mttr`)).toBe(1.5);
    expect(await failure(svc, `/targets/${tid('m8')}/mttr`)).toEqual(notFound);
  });

  it("averages every closed period found by the source's family on every target: 190 h / 10 = 0.79", async () => {
    // 48 + 24 + 12 + 48 + 24 + 10 + 10 + 11 + 3 + 0; m8's source (an open finding) gives the same family.
    expect(await days(`/sources/${sid('m-1')}/mttr`)).toBe(0.79);
    expect(await days(`/sources/${sid('m-21')}/mttr`)).toBe(0.79);
  });

  it('keeps a family with other options apart: 100 h gives 4.17', async () => {
    expect(await days(`/sources/${sid('m-20', W2)}/mttr`)).toBe(4.17);
  });
});

describe('/stats/mttr in hours (SPEC §7.4)', () => {
  it('gives the SPEC example for TTRs 48 (high), 24 and 12 (low): total 28, high 48, low 18', async () => {
    expect(await stats(`team=${X}`)).toEqual({ total: 28, critical: 0, high: 48, medium: 0, low: 18, informational: 0 });
  });

  it('counts every remediation of a finding fixed twice', async () => {
    expect(await stats(`team=${Y}`)).toEqual({ total: 36, critical: 0, high: 36, medium: 0, low: 0, informational: 0 });
  });

  it('rounds to 2 decimals: 10, 10 and 11 hours give 10.33', async () => {
    expect(await stats(`team=${Z}`)).toMatchObject({ total: 10.33, medium: 10.33 });
  });

  it('averages every sample without filters', async () => {
    // high 48, 48, 24; medium 10, 10, 11, 100; low 24, 12, 3, 0: 290 hours over 11 samples.
    expect(await stats()).toEqual({ total: 26.36, critical: 0, high: 40, medium: 32.75, low: 9.75, informational: 0 });
  });

  it('counts each period once when teams lists several teams', async () => {
    expect(await stats(`teams=${X},${Y},${X}`)).toEqual({ total: 31.2, critical: 0, high: 40, medium: 0, low: 18, informational: 0 });
  });

  it('filters by labels and by score, 0 included', async () => {
    expect(await stats('labels=l')).toMatchObject({ total: 9.75, low: 9.75, high: 0 });
    expect(await stats('minScore=8')).toMatchObject({ total: 40, high: 40, low: 0, medium: 0 });
    expect(await stats('minScore=5&maxScore=5')).toMatchObject({ total: 32.75, medium: 32.75, high: 0 });
    expect(await stats('maxScore=0')).toEqual({ total: 0, critical: 0, high: 0, medium: 0, low: 0, informational: 0 });
  });

  it('with a range counts only periods fixed in it', async () => {
    expect(await stats(`team=${X}&minDate=2024-01-02&maxDate=2024-01-02`)).toMatchObject({ total: 24, low: 24, high: 0 });
    expect(await stats('maxDate=2024-01-01')).toMatchObject({ total: 12, low: 12 });
    // Fixed on or after 01-03: every sample but m2 (01-02) and m3 (01-01 12:00): 254 hours over 9.
    expect(await stats('minDate=2024-01-03')).toEqual({ total: 28.22, critical: 0, high: 40, medium: 32.75, low: 1.5, informational: 0 });
  });

  it('validates atDate but otherwise ignores it', async () => {
    expect(await stats(`team=${X}&atDate=2024-01-01`)).toMatchObject({ total: 28 });
  });

  it('answers zeros when nothing is in scope', async () => {
    expect(await stats('team=nobody')).toEqual({ total: 0, critical: 0, high: 0, medium: 0, low: 0, informational: 0 });
  });
});
