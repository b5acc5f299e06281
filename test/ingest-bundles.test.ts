import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLE_MAX_REPORTS } from '../src/queue/contract.js';
import { enqueueBundles } from '../src/queue/producer.js';
import type { WriteStep } from '../src/ingest/batch-writes.js';
import { report, V, worked } from './support/reports.js';
import { json, startTestService, type TestService } from './support/service.js';
import { contextFromHistory, snapshot, storedContext } from './support/snapshot.js';

/**
 * Bundles on the `checks-bulk` queue (what `vulndb import` sends) must end where the same reports
 * sent one per job on `checks` end, whatever the bundles' order and however batches cut them; an
 * invalid bundle, or a bundle with one invalid report, fails without retry and changes nothing.
 */

const other = { summary: 'Exposed admin panel', description: 'Admin UI reachable', score: 9.1 };
// SPEC §3.8's r1–r4, another target with a fix, a reopen and an out-of-order report.
const history = [
  worked.r1,
  worked.r2,
  worked.r3,
  worked.r4,
  report({ check_id: 'b-1', target: 'b.example.com', end_time: '2024-01-01 12:00:00', vulnerabilities: [V, other] }),
  report({ check_id: 'b-2', target: 'b.example.com', end_time: '2024-01-04 12:00:00', vulnerabilities: [other] }),
  report({ check_id: 'b-3', target: 'b.example.com', end_time: '2024-01-06 12:00:00', vulnerabilities: [V, other] }),
  report({ check_id: 'b-0', target: 'b.example.com', end_time: '2023-12-30 12:00:00', vulnerabilities: [other] }),
];
// Reversed and interleaved, with a duplicate and a report the worker ignores.
const bundles = [
  { reports: [history[7], history[3], history[6], { ...history[2] }, { status: 'RUNNING', check_id: 'x' }] },
  { reports: [history[5], history[1], history[4], history[0], history[3]] },
];

async function addBundles(svc: TestService) {
  const ids = await enqueueBundles(svc.bulk, bundles);
  await svc.settle();
  return ids;
}

describe('bundles of reports on the checks-bulk queue', () => {
  let single: TestService;
  let bundled: TestService;
  beforeAll(async () => {
    // One "now" for both, so that the exposures the findings lists show compare.
    const now = () => Date.parse('2024-02-01T00:00:00Z') / 1000;
    single = await startTestService({ now });
    for (const r of history) await json(single.postJson('/checks', r), 202);
    await single.settle();
    // Batches of three reports: each bundle spans several batches, and batches mix the bundles.
    bundled = await startTestService({ now, env: { INGEST_BATCH_SIZE: '3' } });
  });
  afterAll(async () => {
    await bundled.close();
    await single.close();
  });

  it('end in the state of the same reports sent one per job, and say how their reports went', async () => {
    const ids = await addBundles(bundled);
    const jobs = await Promise.all(ids.map((id) => bundled.bulk.getJob(id)));
    expect(await Promise.all(jobs.map((j) => j!.getState()))).toEqual(['completed', 'completed']);
    // r4 is in both bundles; which copy is the duplicate depends on which batch came first.
    const outcomes = jobs.map((j) => j!.returnvalue);
    expect(outcomes[0]).toMatchObject({ reports: 5, ignored: 1 });
    expect(outcomes[1]).toMatchObject({ reports: 5, ignored: 0 });
    expect(outcomes[0].ingested + outcomes[1].ingested).toBe(history.length);
    expect(outcomes[0].duplicates + outcomes[1].duplicates).toBe(1);

    const expected = await snapshot(single.store);
    expect(expected.findings.length).toBe(3);
    expect(await snapshot(bundled.store)).toEqual(expected);
    expect(await storedContext(bundled.store)).toEqual(await contextFromHistory(bundled.store));
    expect((await json(bundled.db('/findings'))).findings).toEqual((await json(single.db('/findings'))).findings);
  });
});

describe('invalid bundles', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(() => svc.close());

  const tooMany = Array.from({ length: BUNDLE_MAX_REPORTS + 1 }, () => worked.r1);
  it.each<[string, unknown, string]>([
    ['an array', history, 'a bundle must be a JSON object'],
    ['without reports', { report: worked.r1 }, 'reports: must be an array of reports'],
    ['with no report', { reports: [] }, 'reports: must hold at least one report'],
    ['with too many reports', { reports: tooMany }, `reports: must hold at most ${BUNDLE_MAX_REPORTS} reports`],
    [
      'with one invalid report among valid ones',
      { reports: [worked.r1, { ...worked.r2, target: '' }, worked.r3] },
      'reports[1]: target: must be a non-empty string',
    ],
    ['with a report that is not an object', { reports: [worked.r1, 'r2'] }, 'reports[1]: report must be a JSON object'],
  ])('a bundle %s fails without retry and names the problem', async (_name, data, reason) => {
    // The producer asks for retries; the worker must still not retry an invalid bundle.
    const job = await svc.bulk.add('reports', data, { attempts: 5, backoff: { type: 'fixed', delay: 10 } });
    await svc.settle();
    const done = await svc.bulk.getJob(job.id!);
    expect(await done!.getState()).toBe('failed');
    expect(done!.attemptsMade).toBe(1);
    expect(done!.failedReason).toContain(reason);
  });

  it('leave nothing behind, not even their valid reports', async () => {
    await svc.settle();
    expect((await json(svc.db('/stats/size'))).size).toEqual({ sources: 0, targets: 0, issues: 0, findings: 0, finding_events: 0 });
  });
});

describe('a bundle whose batch crashes between table writes', () => {
  it.each<WriteStep>(['events', 'findings'])('after the %s write is retried and ends where the clean run does', async (step) => {
    const env = { INGEST_BATCH_WAIT_MS: '200' };
    const clean = await startTestService({ env });
    const faults = { crashAfter: step, times: 1 };
    const crashing = await startTestService({ faults, env });
    try {
      await addBundles(clean);
      const ids = await addBundles(crashing);
      for (const id of ids) {
        const job = await crashing.bulk.getJob(id);
        expect(await job!.getState()).toBe('completed');
        expect(job!.attemptsStarted).toBe(2);
      }
      const actual = await snapshot(crashing.store);
      expect(actual).toEqual(await snapshot(clean.store));
      expect(actual.sizes!.events).toBe(actual.sizes!.distinct_events);
      expect(await storedContext(crashing.store)).toEqual(await contextFromHistory(crashing.store));
    } finally {
      await clean.close();
      await crashing.close();
    }
  });
});
