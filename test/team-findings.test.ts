import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acquireAll, LockTimeout, TargetLocks } from '../src/locks/target-locks.js';
import { report, type VulnSpec } from './support/reports.js';
import { ingest, reportTime } from './support/api.js';
import { json, startTestService, type TestService } from './support/service.js';

/**
 * The team-clustered copy of findings (sql/0009_team_copies.sql) that single-team reads use must
 * hold exactly one row per (team of the target, finding) with the finding's current state, and the
 * lists' totals kept by key (sql/0014) must be those of the findings, however ingestion and POST
 * /targets interleave.
 */

const TEAMS = ['a0000000-0000-4000-8000-00000000000a', 'b0000000-0000-4000-8000-00000000000b', 'c0000000-0000-4000-8000-00000000000c'];
const TARGETS = Array.from({ length: 12 }, (_, i) => `host-${i}.example.com`);
const VULNS: VulnSpec[] = Array.from({ length: 4 }, (_, i) => ({
  summary: `Issue ${i}`,
  description: `Issue ${i} found.`,
  score: 2 + i * 2,
}));

/** Scan `scan` of target `t`: a changing subset of the vulnerabilities, so findings open, close and reopen. */
const scanOf = (t: number, scan: number) =>
  report({
    check_id: `t${t}-s${scan}`,
    target: TARGETS[t]!,
    end_time: reportTime(Date.parse('2024-01-01T00:00:00Z') / 1000 + scan * 86_400 + t * 60),
    vulnerabilities: VULNS.filter((_, v) => (t + scan + v) % 3 !== 0),
  });

/** Both sides as sorted lines of (team, finding, state) for a readable diff. */
async function copyAndTruth(svc: TestService): Promise<{ copy: string[]; truth: string[] }> {
  const columns = 'toString(id), toString(target_id), version, status, severity, score, found_at, fixed_at, ttr_sum, ttr_count';
  const copy = await svc.store.query<{ line: string }>(
    `SELECT concat(team, ' ', toString(tuple(${columns}))) AS line FROM team_findings FINAL ORDER BY line`,
  );
  const truth = await svc.store.query<{ line: string }>(
    `SELECT concat(t.team, ' ', toString(tuple(${columns}))) AS line
     FROM findings FINAL
     INNER JOIN (SELECT DISTINCT team, target_id FROM target_teams) AS t USING (target_id)
     ORDER BY line`,
  );
  // Counters: summed per (team, target); a target whose counters are all zero may have no row.
  const counters =
    'tuple(sum(open_critical), sum(open_high), sum(open_medium), sum(open_low), sum(open_informational), sum(fixed_critical), sum(fixed_high), sum(fixed_medium), sum(fixed_low), sum(fixed_informational))';
  const nonZero = `HAVING ${counters} != tuple(0, 0, 0, 0, 0, 0, 0, 0, 0, 0)`;
  const copiedCounts = await svc.store.query<{ line: string }>(
    `SELECT concat(team, ' ', toString(target_id), ' ', toString(${counters})) AS line FROM team_finding_counts
     GROUP BY team, target_id ${nonZero} ORDER BY line`,
  );
  const countsTruth = await svc.store.query<{ line: string }>(
    `SELECT concat(t.team, ' ', toString(target_id), ' ', toString(${counters})) AS line
     FROM finding_counts INNER JOIN (SELECT DISTINCT team, target_id FROM target_teams) AS t USING (target_id)
     GROUP BY t.team, target_id ${nonZero} ORDER BY line`,
  );
  // The lists' totals kept by key (sql/0014), against the findings of all and of each team.
  const totals = await svc.store.query<{ line: string }>(
    `SELECT concat('total ', scope, ' ', toString(open), ' ', toString(fixed)) AS line FROM ${svc.store.keyed.latest('finding_total_values')}
     WHERE open + fixed > 0 ORDER BY line`,
  );
  const totalsTruth = await svc.store.query<{ line: string }>(
    `SELECT concat('total ', scope, ' ', toString(countIf(status = 'OPEN')), ' ', toString(countIf(status = 'FIXED'))) AS line
     FROM
     (
         SELECT 'all' AS scope, status FROM findings FINAL
         UNION ALL
         SELECT concat('team:', t.team) AS scope, f.status AS status
         FROM findings AS f FINAL INNER JOIN (SELECT DISTINCT team, target_id FROM target_teams) AS t ON t.target_id = f.target_id
     )
     GROUP BY scope ORDER BY line`,
  );
  return {
    copy: [...copy.map((r) => r.line), ...copiedCounts.map((r) => r.line), ...totals.map((r) => r.line)],
    truth: [...truth.map((r) => r.line), ...countsTruth.map((r) => r.line), ...totalsTruth.map((r) => r.line)],
  };
}

describe('team copies of findings and counters', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService();
    // Every version of a finding stays in the copy, as between background merges: the reads must
    // show each finding's latest version only.
    await svc.store.command('SYSTEM STOP MERGES team_findings');
  });
  afterAll(() => svc.close());

  it("given findings ingested before and after their targets join teams, then each team holds exactly its targets' current findings", async () => {
    // Half the targets have a team before any report, the rest join after their first scans.
    for (let t = 0; t < 6; t += 1) await json(svc.postJson('/targets', { identifier: TARGETS[t], teams: [TEAMS[t % 3]] }), 201);
    await ingest(
      svc,
      TARGETS.flatMap((_, t) => [scanOf(t, 0), scanOf(t, 1)]),
    );
    for (let t = 6; t < 12; t += 1)
      await json(svc.postJson('/targets', { identifier: TARGETS[t], teams: [TEAMS[t % 3], TEAMS[(t + 1) % 3]] }), 201);
    const joined = await copyAndTruth(svc);
    expect(joined.truth.length).toBeGreaterThan(40);
    expect(joined.copy).toEqual(joined.truth);

    await ingest(
      svc,
      TARGETS.flatMap((_, t) => [scanOf(t, 2), scanOf(t, 3)]),
    );
    const later = await copyAndTruth(svc);
    expect(later.copy).toEqual(later.truth);
  });

  it('given POST /targets while the worker ingests the same targets, then no finding version is missing from a team', async () => {
    const reports = TARGETS.flatMap((_, t) => [4, 5, 6, 7, 8].map((s) => scanOf(t, s)));
    for (const r of reports) await json(svc.postJson('/checks', r), 202);
    // Associate every target with every team while those reports are being processed.
    await Promise.all(TARGETS.map((identifier) => json(svc.postJson('/targets', { identifier, teams: TEAMS }), 201)));
    await svc.settle();

    const { copy, truth } = await copyAndTruth(svc);
    // A copy of each finding and a counters row per (team, target); a total for all and each team.
    expect(truth.length).toBe(TARGETS.length * TEAMS.length * (VULNS.length + 1) + 1 + TEAMS.length);
    expect(copy).toEqual(truth);
  });

  it("answers a team's statistics from the copy exactly as from the set of its targets", async () => {
    const team = TEAMS[1]!;
    const [versions] = await svc.store.query<{ rows: number; findings: number }>(
      'SELECT count() AS rows, uniqExact(id) AS findings FROM team_findings WHERE team = {team:String}',
      { team },
    );
    expect(versions!.rows).toBeGreaterThan(versions!.findings);
    const viaCopy = await json(svc.db(`/stats/mttr?team=${team}&minDate=2024-01-01&maxDate=2024-02-01`));
    // teams= (several teams) still tests every finding against the teams' targets.
    const viaSet = await json(svc.db(`/stats/mttr?teams=${team}&minDate=2024-01-01&maxDate=2024-02-01`));
    expect(viaCopy).toEqual(viaSet);
    expect(viaCopy.mttr.total).toBeGreaterThan(0);
    for (const path of ['/stats/open', '/stats/fixed', '/stats/assets']) {
      expect(await json(svc.db(`${path}?team=${team}`))).toEqual(await json(svc.db(`${path}?teams=${team}`)));
    }
    const pageViaCopy = await json(svc.db(`/findings?team=${team}&size=100`));
    const pageViaSet = await json(svc.db(`/findings?teams=${team}&size=100`));
    expect(pageViaCopy).toEqual(pageViaSet);
    expect(pageViaCopy.pagination.total).toBe(TARGETS.length * VULNS.length);
    // Pages read in id order from the copy, or sorted by score, with filters, agree too.
    for (const query of [
      'size=5&page=3',
      'status=OPEN&size=7&page=2',
      'sortBy=-score&size=6&page=2',
      'atDate=2024-01-03&size=10',
      'minDate=2024-01-02&maxDate=2024-01-04&status=FIXED',
    ]) {
      const viaCopy = await json(svc.db(`/findings?team=${team}&${query}`));
      expect(viaCopy.findings.length).toBeGreaterThan(0);
      expect(viaCopy).toEqual(await json(svc.db(`/findings?teams=${team}&${query}`)));
    }
  });
});

describe('acquireAll, the waiting form of the target locks', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ worker: false });
  });
  afterAll(() => svc.close());

  it('waits for a lock held elsewhere and takes it once released', async () => {
    const locks = new TargetLocks(svc.redis, svc.names);
    const target = '11111111-2222-4333-8444-555555555555';
    const batch = await locks.acquire([target]);
    expect(batch.acquired.has(target)).toBe(true);
    const waiting = acquireAll(locks, [target], 5000, 10);
    await new Promise((r) => setTimeout(r, 100));
    await batch.release();
    const held = await waiting;
    expect(held.acquired.has(target)).toBe(true);
    await held.release();
  });

  it('gives up with LockTimeout when the holder keeps the lock', async () => {
    const locks = new TargetLocks(svc.redis, svc.names);
    const target = '66666666-7777-4888-8999-aaaaaaaaaaaa';
    const batch = await locks.acquire([target]);
    await expect(acquireAll(locks, [target], 200, 20)).rejects.toBeInstanceOf(LockTimeout);
    await batch.release();
  });
});
