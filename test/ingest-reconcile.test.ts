import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { targetId } from '../src/domain/ids.js';
import { report, V } from './support/reports.js';
import { json, startTestService, type TestService } from './support/service.js';

/**
 * A process killed between a findings insert and its views' pushes leaves counters and team copies
 * behind the findings (found by test/fault-kills.test.ts). The retried batch (recovery) brings them
 * back to what the findings say. Here the loss is made by hand: the pushes of one finding's first
 * version are taken back, then the report of another scan of its target is applied as a retry.
 */

const TEAM = 'team-reconcile';
const other = { summary: 'Open admin panel', score: 9.5 };

describe('a retried batch after views lost a findings insert', () => {
  let svc: TestService;
  let expected: Record<string, unknown>;
  beforeAll(async () => {
    svc = await startTestService();
    await json(svc.postJson('/targets', { identifier: 'rec.example.com', teams: [TEAM] }), 201);
    await json(
      svc.postJson(
        '/checks',
        report({ check_id: 'rec-1', target: 'rec.example.com', end_time: '2024-01-01 10:00:00', vulnerabilities: [V, other] }),
      ),
      202,
    );
    await svc.settle();
    expected = await readState(svc);
  });
  afterAll(() => svc?.close());

  async function readState(s: TestService) {
    return {
      open: await json(s.db('/stats/open')),
      openTeam: await json(s.db(`/stats/open?team=${TEAM}`)),
      issues: await json(s.db('/stats/issues')),
      teamFindings: (await json(s.db(`/findings?team=${TEAM}`))).pagination.total,
    };
  }

  it('given counters and team copies missing one finding, when a retry of that target commits, then they equal the findings again', async () => {
    const target = targetId('rec.example.com');
    const [finding] = await svc.store.query<{ id: string; issue: string }>(
      `SELECT toString(id) AS id, toString(issue_id) AS issue FROM findings FINAL WHERE target_id = {t:UUID} AND score = 9.5`,
      { t: target },
    );
    // What the views derived from that finding's version, taken back.
    await svc.store.command(`INSERT INTO finding_counts (target_id, open_critical) VALUES ({t:UUID}, -1)`, { t: target });
    await svc.store.command(`INSERT INTO team_finding_counts (team, target_id, open_critical) VALUES ({team:String}, {t:UUID}, -1)`, {
      team: TEAM,
      t: target,
    });
    await svc.store.command(`INSERT INTO issue_finding_counts (issue_id, open) VALUES ({i:UUID}, -1)`, { i: finding!.issue });
    await svc.store.command(`DELETE FROM team_findings WHERE id = {f:UUID}`, { f: finding!.id });
    const broken = await readState(svc);
    expect(broken).not.toEqual(expected);

    // A later scan reporting both again (no status change: nothing new to write), applied as a retry.
    const later = report({ check_id: 'rec-2', target: 'rec.example.com', end_time: '2024-01-02 10:00:00', vulnerabilities: [V, other] });
    expect(await svc.batcher!.submit({ data: later, attemptsStarted: 2 })).toEqual({ outcome: 'ingested' });
    expect(await readState(svc)).toEqual(expected);
  });

  it('given nothing lost, when a retry commits, then the counters do not move', async () => {
    const again = report({ check_id: 'rec-3', target: 'rec.example.com', end_time: '2024-01-03 10:00:00', vulnerabilities: [V, other] });
    expect(await svc.batcher!.submit({ data: again, attemptsStarted: 2 })).toEqual({ outcome: 'ingested' });
    expect(await readState(svc)).toEqual(expected);
  });
});
