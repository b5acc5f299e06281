import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { activeAtParams, activeDecisionsAt } from '../src/decisions/active.js';
import { activeDecisionIds, makeDecision, revokeDecisions } from '../src/decisions/store.js';
import { referenceInstant, Suppression } from '../src/decisions/suppression.js';
import { findingId, issueId, targetId } from '../src/domain/ids.js';
import { ingestBatch } from '../src/ingest/batch.js';
import type { NormalizedReport } from '../src/ingest/normalize.js';
import { prepareReport } from '../src/ingest/prepare.js';
import { rewriteTotals } from '../src/ingest/totals.js';
import { ProcessLocks } from '../src/locks/target-locks.js';
import { DEFAULT_SLA_POLICY } from '../src/sla/policy.js';
import { assetStats } from '../src/stats/assets.js';
import { findingCounts } from '../src/stats/counts.js';
import { currentExposureStats, totalExposureStats } from '../src/stats/exposure.js';
import type { StatFilters } from '../src/stats/filters.js';
import { issueStats } from '../src/stats/issues.js';
import { mttrStats } from '../src/stats/mttr.js';
import { slaStats } from '../src/stats/sla.js';
import type { Store } from '../src/storage/gateway.js';
import { associateTeams } from '../src/teams/associations.js';
import { epoch } from './support/api.js';
import { emptyStore, freshStore } from './support/engine.js';
import { report } from './support/reports.js';

/**
 * SPEC §7, §12.2, §12.3: every statistic with suppression equals the same statistic over the
 * history without the findings suppressed at its reference instant. The expectation does not
 * restate any rule: the findings suppressed at T are those with a decision active at T (the one SQL
 * statement of the rule, active.ts), and the history without them is ingested into a second store,
 * which holds no decision, where the same statistic is computed.
 */

const TARGETS = ['a.example.com', 'b.example.com', 'c.example.com'];
const TEAM_X = '0a1b2c3d-0000-4000-8000-00000000000a';
const TEAM_Y = '0a1b2c3d-0000-4000-8000-00000000000b';
const TEAMS: Record<string, string[]> = { 'a.example.com': [TEAM_X], 'b.example.com': [TEAM_X, TEAM_Y], 'c.example.com': [TEAM_Y] };
const VULNS = [
  { summary: 'V1', description: 'one', labels: ['web'] },
  { summary: 'V2', description: 'two', labels: ['crit'] },
  { summary: 'V3', description: 'three' },
];
const DAY = 86_400;
const START = epoch('2024-03-01T00:00:00Z');
/** The statistics' "now": after every report and decision, before some expiries. */
const NOW = START + 14 * DAY;

const arbReport = fc.record({
  target: fc.nat({ max: TARGETS.length - 1 }),
  day: fc.nat({ max: 9 }),
  vulns: fc.subarray([0, 1, 2]),
  fingerprints: fc.array(fc.constantFrom('a', 'b'), { minLength: 3, maxLength: 3 }),
  scoreSeed: fc.nat({ max: 100 }),
});
type ReportChoice = { target: number; day: number; vulns: number[]; fingerprints: string[]; scoreSeed: number };

const arbDecision = fc.record({
  finding: fc.nat(),
  /** Hours after START: between the reports, before now. */
  hour: fc.nat({ max: 12 * 24 }),
  act: fc.constantFrom<DecisionChoice['act'][]>('false_positive', 'accepted_risk', 'revoke'),
  /** Days it lasts; 0: a false positive without expiry. */
  lasts: fc.nat({ max: 8 }),
});

type DecisionChoice = { finding: number; hour: number; act: 'false_positive' | 'accepted_risk' | 'revoke'; lasts: number };

const arbTime = fc.oneof(
  fc.constant<StatFilters>({}),
  fc.nat({ max: 15 }).map<StatFilters>((d) => ({ atDate: START + d * DAY })),
  // On the hour: the seconds at which decisions are made, revoked and expire (activity's ends).
  fc.nat({ max: 14 * 24 }).map<StatFilters>((h) => ({ atDate: START + h * 3600 })),
  fc.tuple(fc.nat({ max: 12 }), fc.nat({ max: 6 }), fc.boolean()).map<StatFilters>(([from, span, open]) => ({
    minDate: START + from * DAY,
    ...(open ? {} : { maxDateEnd: START + (from + span + 1) * DAY }),
  })),
  fc.constantFrom<StatFilters>({ labels: ['web'] }, { minScore: 4 }, { labels: ['crit'], maxScore: 8 }),
);

const SCOPES: StatFilters[] = [{}, { team: TEAM_X }, { teams: [TEAM_Y] }, { identifiers: ['b.example.com'] }];

const normalize = (raw: Record<string, unknown>): NormalizedReport => {
  const p = prepareReport(raw, { maxEventAgeDays: 0, now: 0 });
  if (p.kind !== 'report') throw new Error(`unexpected ${p.kind}`);
  return p.report;
};

/** The finding of a vulnerability on a target (its affected resource: the target, SPEC §2.4). */
const findingOf = (target: number, vuln: number) =>
  findingId(targetId(TARGETS[target]!), issueId(VULNS[vuln]!.summary, VULNS[vuln]!.description), TARGETS[target]!);

/** The reports of a history, leaving out the detections of `left` findings. */
function reportsOf(history: ReportChoice[], left: Set<string>) {
  return history.map((r, i) =>
    report({
      check_id: `check-${String(i).padStart(2, '0')}`,
      target: TARGETS[r.target]!,
      end_time: `2024-03-${String(r.day + 1).padStart(2, '0')} 12:00:00`,
      vulnerabilities: r.vulns
        .filter((v) => !left.has(findingOf(r.target, v)))
        .map((v) => ({ ...VULNS[v]!, score: ((r.scoreSeed + v * 37) % 100) / 10, fingerprint: r.fingerprints[v]! })),
    }),
  );
}

/** An empty store holding the history without `left`'s findings (and the teams' targets). */
async function ingest(store: Store, history: ReportChoice[], left: Set<string>): Promise<void> {
  await emptyStore(store);
  const locks = new ProcessLocks();
  for (const identifier of TARGETS) await associateTeams(store, locks, identifier, TEAMS[identifier]!);
  await ingestBatch(store, reportsOf(history, left).map(normalize), { now: NOW });
  await rewriteTotals(store, locks);
}

/** Decisions made, replaced (a second one on a finding) and revoked, in time order. */
async function decide(store: Store, decisions: DecisionChoice[]): Promise<void> {
  const found = await store.query<{ id: string; target: string }>(
    'SELECT toString(id) AS id, toString(target_id) AS target FROM findings FINAL ORDER BY id',
  );
  if (found.length === 0) return;
  const ordered = [...decisions].sort((a, b) => a.hour - b.hour);
  for (const [i, d] of ordered.entries()) {
    const f = found[d.finding % found.length]!;
    const atMs = (START + d.hour * 3600) * 1000 + i;
    if (d.act === 'revoke') {
      await revokeDecisions(store, f.id, await activeDecisionIds(store, f.id, atMs), 'tester', atMs);
      continue;
    }
    const lasts = d.act === 'accepted_risk' ? Math.max(d.lasts, 1) : d.lasts;
    const expiresAt = lasts === 0 ? null : START + d.hour * 3600 + lasts * DAY;
    await makeDecision(store, { id: f.id, targetId: f.target }, { decision: d.act, reason: 'property', expiresAt }, 'tester', atMs);
  }
}

/** The findings suppressed at `t`: those with a decision active at t (active.ts). */
async function suppressedAt(store: Store, t: number): Promise<Set<string>> {
  const rows = await store.query<{ id: string }>(
    `SELECT DISTINCT toString(finding_id) AS id FROM (${activeDecisionsAt('t')})`,
    activeAtParams('t', t),
  );
  return new Set(rows.map((r) => r.id));
}

/** Every statistic of a selection, each keyed by the instant whose suppression it uses. */
function statistics(f: StatFilters) {
  const ranged = f.minDate !== undefined || f.maxDateEnd !== undefined;
  const dated = f.atDate === undefined ? f : { ...f, minDate: undefined, maxDateEnd: undefined };
  const { atDate: _ignored, ...undated } = f;
  const E = referenceInstant(f, NOW);
  const noDates = f.atDate === undefined && !ranged;
  type Stat = [string, number, (store: Store, s: Suppression) => Promise<unknown>];
  const stats: Stat[] = [
    ['open', E, (st, s) => findingCounts(st, s, 'OPEN', dated, NOW)],
    ['fixed', E, (st, s) => findingCounts(st, s, 'FIXED', dated, NOW)],
    ['mttr', referenceInstant(undated, NOW), (st, s) => mttrStats(st, s, undated, NOW)],
    ['issues', referenceInstant(undated, NOW), async (st, s) => (await issueStats(st, s, undated, { page: 1, size: 50 }, NOW)).rows],
  ];
  if (!ranged) {
    const at = f.atDate ?? NOW;
    stats.push(['exposure', at, (st, s) => totalExposureStats(st, s, f, NOW)]);
    stats.push(['current_exposure', at, (st, s) => currentExposureStats(st, s, f, NOW)]);
  }
  if (noDates && f.minScore === undefined && f.maxScore === undefined) stats.push(['assets', NOW, (st, s) => assetStats(st, s, f, NOW)]);
  // /stats/sla over a range: open and breached at T (now), fixed and fixed_within at E.
  const sla = (st: Store, s: Suppression) => slaStats(st, s, f, NOW, DEFAULT_SLA_POLICY);
  const at = f.atDate ?? NOW;
  stats.push(['sla open', at, async (st, s) => pick(await sla(st, s), ['open', 'breached'])]);
  stats.push(['sla fixed', E, async (st, s) => pick(await sla(st, s), ['fixed', 'fixed_within', 'compliance'])]);
  return stats;
}

const pick = <T extends object>(o: T, keys: (keyof T)[]) => Object.fromEntries(keys.map((k) => [k, o[k]]));

describe('suppression in every statistic (SPEC §12.3)', () => {
  let decided: Store;
  const without = new Map<string, Store>();
  beforeAll(async () => {
    decided = await freshStore();
    for (const name of ['now', 'then']) without.set(name, await freshStore());
  });

  it('equals the statistic over the history without the findings suppressed at its reference instant', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(arbReport, { minLength: 1, maxLength: 10 }),
        fc.array(arbDecision, { minLength: 1, maxLength: 6 }),
        arbTime,
        fc.constantFrom(...SCOPES),
        async (history, decisions, time, scope) => {
          await ingest(decided, history, new Set());
          await decide(decided, decisions);
          // Both ways the process meets the rule: its copy of the rule's result (a store it alone
          // writes) and the rule evaluated in each statement (a store shared with other processes).
          const shared: Store = { ...decided, exclusive: false };
          // A process allowed a single Set table reads its copy for every other instant.
          const ways: [string, Store, Suppression][] = [
            ['copy', decided, new Suppression(decided)],
            ['copy, one set', decided, new Suppression(decided, 1)],
            ['statement', shared, new Suppression(shared)],
          ];
          // The second stores: the history without the findings suppressed at each instant used.
          const stores = new Map<number, Store>();
          const cases = statistics({ ...scope, ...time }).map((stat) => ({ scope, stat }));
          const instants = [...new Set(cases.map((c) => c.stat[1]))];
          expect(instants.filter((t) => t !== NOW).length).toBeLessThanOrEqual(1);
          for (const t of instants) {
            const store = without.get(t === NOW ? 'now' : 'then')!;
            await ingest(store, history, await suppressedAt(decided, t));
            stores.set(t, store);
          }
          for (const { scope, stat } of cases) {
            const [name, t, compute] = stat;
            const store = stores.get(t)!;
            const expected = await compute(store, new Suppression(store));
            for (const [way, st, suppression] of ways) {
              expect(await compute(st, suppression), `${name} (${way}) ${JSON.stringify({ ...scope, ...time })} at ${t}`).toEqual(expected);
            }
          }
          for (const [, , suppression] of ways) suppression.changed(); // its copy is dropped a while later
        },
      ),
      {
        numRuns: 8,
        examples: [
          // A finding open now, accepted from 03-01 01:00 for 5 days: /stats/sla over 03-01…03-04
          // leaves it out of fixed (at E = 03-05) but counts it in open (at T = now).
          [
            [{ target: 0, day: 0, vulns: [0], fingerprints: ['a', 'a', 'a'], scoreSeed: 50 }],
            [{ finding: 0, hour: 1, act: 'accepted_risk', lasts: 5 }],
            { minDate: START, maxDateEnd: START + 4 * DAY },
            {},
          ],
          // At the very second an acceptance begins, and the second it expires (activity's ends).
          [
            [{ target: 0, day: 0, vulns: [0], fingerprints: ['a', 'a', 'a'], scoreSeed: 50 }],
            [{ finding: 0, hour: 24, act: 'accepted_risk', lasts: 2 }],
            { atDate: START + DAY },
            {},
          ],
          [
            [{ target: 0, day: 0, vulns: [0], fingerprints: ['a', 'a', 'a'], scoreSeed: 50 }],
            [{ finding: 0, hour: 24, act: 'accepted_risk', lasts: 2 }],
            { atDate: START + 3 * DAY },
            {},
          ],
        ],
      },
    );
  }, 300_000);

  it('holds no more Set tables than it may, however many instants are asked about, and answers the same beyond them', async () => {
    const history: ReportChoice[] = [0, 1, 2].flatMap((target) => [
      { target, day: 0, vulns: [0, 1, 2], fingerprints: ['a', 'a', 'a'], scoreSeed: 10 * target },
    ]);
    // Acceptances beginning and ending on different hours: a span between two ends for each hour.
    const decisions = [0, 1, 2, 3, 4, 5].map<DecisionChoice>((finding) => ({
      finding,
      hour: 2 + 5 * finding,
      act: 'accepted_risk',
      lasts: 1,
    }));
    await ingest(decided, history, new Set());
    await decide(decided, decisions);
    const setTables = async () =>
      Number(
        (
          await decided.query<{ n: number }>("SELECT count() AS n FROM system.tables WHERE database = currentDatabase() AND engine = 'Set'")
        )[0]?.n,
      );
    const before = await setTables();
    const bounded = new Suppression(decided, 2);
    const shared = { ...decided, exclusive: false };
    for (let hour = 0; hour < 60; hour++) {
      const f: StatFilters = { atDate: START + hour * 3600 };
      const expected = await findingCounts(shared, new Suppression(shared), 'OPEN', f, NOW);
      expect(await findingCounts(decided, bounded, 'OPEN', f, NOW), `at hour ${hour}`).toEqual(expected);
    }
    expect((await setTables()) - before).toBeLessThanOrEqual(2);
    bounded.changed();
  }, 120_000);

  it('drops at start the tables a stopped process left on the data folder', async () => {
    await decided.command('CREATE TABLE decision_intervals_left0000 (finding_id UUID) ENGINE = Set SETTINGS persistent = 0');
    await new Suppression(decided).dropLeftovers();
    const left = await decided.query<{ n: number }>(
      "SELECT count() AS n FROM system.tables WHERE database = currentDatabase() AND name = 'decision_intervals_left0000'",
    );
    expect(Number(left[0]?.n)).toBe(0);
  });
});
