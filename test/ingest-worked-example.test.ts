import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NEVER } from '../src/domain/time.js';
import { permutations, report, V, worked } from './support/reports.js';
import { targetId } from '../src/domain/ids.js';
import { json, startTestService, type TestService } from './support/service.js';

const at = (s: string) => Date.parse(s) / 1000;

async function storedFinding(svc: TestService, target = 'www.example.com') {
  const rows = await svc.store.query<Record<string, any>>(
    `SELECT toString(status) AS st, arrayMap(t -> toUInt32(t), found_at) AS found, arrayMap(t -> toUInt32(t), fixed_at) AS fixed,
            ttr_sum, ttr_count, score,
            (SELECT argMax(check_id, (time, check_id, pos)) FROM finding_events WHERE target_id = {target:UUID}) AS last_source_instance
     FROM findings FINAL
     WHERE target_id = {target:UUID}`,
    { target: targetId(target) },
  );
  expect(rows).toHaveLength(1);
  return rows[0]!;
}

/** Posts each report and waits until the worker has finished it before sending the next. */
async function postInOrder(svc: TestService, reports: Record<string, unknown>[]) {
  for (const r of reports) {
    const { job_id } = await json(svc.postJson('/checks', r), 202);
    expect(job_id).toEqual(expect.any(String));
    await svc.settle();
  }
}

describe('SPEC §3.8 worked example over HTTP', () => {
  const names = ['r1', 'r2', 'r3', 'r4'] as const;

  describe('every arrival order of r1–r4', () => {
    // One service; each order on a target of its own (a finding's history is its target's alone),
    // so the orders do not pay a service start each.
    let svc: TestService;
    beforeAll(async () => {
      svc = await startTestService();
    });
    afterAll(() => svc.close());

    it.each(permutations([...names]).map((p, i) => [p.join(' '), i]))('arrival order %s gives the same finding', async (order, i) => {
      const target = `order-${i}.example.com`;
      const before = (await json(svc.db('/stats/size'))).size;
      await postInOrder(
        svc,
        order.split(' ').map((n) => ({ ...worked[n as (typeof names)[number]], target, check_id: `${n}-${i}` })),
      );

      const { size } = await json(svc.db('/stats/size'));
      // The issue V is every order's; the rest is new for this order's target.
      expect(size).toEqual({
        sources: before.sources + 4,
        targets: before.targets + 1,
        issues: 1,
        findings: before.findings + 1,
        finding_events: before.finding_events + 3,
      });

      const f = await storedFinding(svc, target);
      expect(f.st).toBe('OPEN');
      expect(f.found).toEqual([at('2024-01-01T10:00:00Z'), at('2024-01-05T10:00:00Z')]);
      expect(f.fixed).toEqual([at('2024-01-03T10:00:00Z'), NEVER]);
      expect([f.ttr_sum, f.ttr_count]).toEqual([48, 1]); // P1: TTR 48 h
      expect(f.last_source_instance).toBe(`r4-${i}`); // last source r4
    });
  });

  it('a report of another family (other options) without V changes nothing for the finding', async () => {
    const svc = await startTestService();
    try {
      await postInOrder(svc, [worked.r1, worked.r2, worked.r3, worked.r4]);
      const before = await storedFinding(svc);
      await postInOrder(svc, [
        report({ check_id: 'r5-0000', options: '{"port":8443}', end_time: '2024-01-05 12:00:00', vulnerabilities: [] }),
      ]);
      expect(await storedFinding(svc)).toEqual(before);
      const { size } = await json(svc.db('/stats/size'));
      expect(size).toEqual({ sources: 5, targets: 1, issues: 1, findings: 1, finding_events: 3 });
    } finally {
      await svc.close();
    }
  });

  it('a duplicate report is accepted with 202 and changes nothing', async () => {
    const svc = await startTestService();
    try {
      await postInOrder(svc, [worked.r1, worked.r3]);
      const before = await storedFinding(svc);
      await postInOrder(svc, [{ ...worked.r1, vulnerabilities: [] }]); // same duplicate key, other content
      expect(await storedFinding(svc)).toEqual(before);
      const { size } = await json(svc.db('/stats/size'));
      expect(size).toEqual({ sources: 2, targets: 1, issues: 1, findings: 1, finding_events: 1 });
    } finally {
      await svc.close();
    }
  });

  it('several vulnerabilities of one report mapping to one finding collapse to the highest score', async () => {
    const svc = await startTestService();
    try {
      const low = { ...V, score: 3, details: 'low' };
      const high = { ...V, score: 8, details: 'high' };
      const tie = { ...V, score: 8, details: 'tie' };
      await postInOrder(svc, [report({ check_id: 'c-1', end_time: '2024-01-01 10:00:00', vulnerabilities: [low, high, tie] })]);
      expect((await storedFinding(svc)).score).toBe(8);
      const events = await svc.store.query<{ details: string; score: number }>('SELECT details, score FROM finding_events');
      expect(events).toEqual([{ details: 'high', score: 8 }]);
    } finally {
      await svc.close();
    }
  });
});
