import { describe, expect, it } from 'vitest';
import type { WriteStep } from '../src/ingest/batch-writes.js';
import { report, V, worked } from './support/reports.js';
import { json, startTestService, type TestService } from './support/service.js';
import { contextFromHistory, snapshot, storedContext } from './support/snapshot.js';

const other = { summary: 'Exposed admin panel', description: 'Admin UI reachable', score: 9.1 };
const first = [
  worked.r1,
  worked.r2,
  report({ check_id: 'b-1', target: 'b.example.com', end_time: '2024-01-01 12:00:00', vulnerabilities: [V, other] }),
];
// The batch that crashes: a clean scan, a re-detection, another target's fix and a late (out-of-order) report.
const second = [
  worked.r3,
  worked.r4,
  report({ check_id: 'b-2', target: 'b.example.com', end_time: '2024-01-04 12:00:00', vulnerabilities: [other] }),
  report({ check_id: 'b-0', target: 'b.example.com', end_time: '2023-12-30 12:00:00', vulnerabilities: [other] }),
];

async function ingest(svc: TestService, faults?: { crashAfter: WriteStep; times: number }) {
  for (const r of first) await json(svc.postJson('/checks', r), 202);
  await svc.settle();
  if (faults) faults.times = 1; // the next batch crashes
  // Added at once (and gathered for 200 ms), so the four reports form one batch.
  const jobs = await svc.queue!.addBulk(second.map((data) => ({ name: 'report', data })));
  await svc.settle();
  return jobs.map((j) => j.id!);
}

describe('a batch that crashes between table writes', () => {
  it.each<WriteStep>(['targets', 'issues', 'events', 'findings'])(
    'crashing after the %s write and retrying ends in the same state, without duplicated events',
    async (step) => {
      const env = { INGEST_BATCH_WAIT_MS: '200' };
      const clean = await startTestService({ env });
      const faults = { crashAfter: step, times: 0 };
      const crashing = await startTestService({ faults, env });
      try {
        await ingest(clean);
        const jobIds = await ingest(crashing, faults);

        // The crashed jobs were retried (started twice) and then completed.
        for (const id of jobIds) {
          const job = await crashing.queue!.getJob(id);
          expect(await job!.getState()).toBe('completed');
          expect(job!.attemptsStarted).toBe(2);
        }
        const [expected, actual] = [await snapshot(clean.store), await snapshot(crashing.store)];
        expect(actual).toEqual(expected);
        expect(actual.sizes!.events).toBe(actual.sizes!.distinct_events);
        // What pages show (latest events, objects, the lists' totals) caught up with the retry too.
        expect(await storedContext(crashing.store)).toEqual(await contextFromHistory(crashing.store));
        expect((await json(crashing.db('/stats/size'))).size).toEqual((await json(clean.db('/stats/size'))).size);
      } finally {
        await clean.close();
        await crashing.close();
      }
    },
  );
});

describe('a report delivered twice, its first job crashing after the events write', () => {
  it('writes its events once when the second delivery is applied before the first job is retried', async () => {
    const faults = { crashAfter: 'events' as WriteStep, times: 0 };
    const svc = await startTestService({ faults });
    const clean = await startTestService();
    try {
      for (const r of first) {
        await json(svc.postJson('/checks', r), 202);
        await json(clean.postJson('/checks', r), 202);
      }
      await Promise.all([svc.settle(), clean.settle()]);
      const late = second[2]!;
      faults.times = 1;
      const crashed = await svc.queue!.add('report', late);
      // The crashed job waits for its retry (backoff from 1 s); the same report arrives in another job meanwhile.
      for (let state = ''; state !== 'delayed'; state = await crashed.getState()) await new Promise((r) => setTimeout(r, 20));
      const again = await svc.queue!.add('report', late);
      for (let state = ''; state !== 'completed'; state = await again.getState()) await new Promise((r) => setTimeout(r, 20));
      expect(await crashed.getState()).toBe('delayed');
      await svc.settle();
      await json(clean.postJson('/checks', late), 202);
      await clean.settle();

      const [expected, actual] = [await snapshot(clean.store), await snapshot(svc.store)];
      expect(actual.sizes!.events).toBe(actual.sizes!.distinct_events);
      expect(actual).toEqual(expected);
      expect((await json(svc.db('/stats/size'))).size).toEqual((await json(clean.db('/stats/size'))).size);
    } finally {
      await svc.close();
      await clean.close();
    }
  });
});
