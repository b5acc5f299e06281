import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReportBatcher } from '../src/ingest/batcher.js';
import { ingestProcessors } from '../src/ingest/jobs.js';
import { createLogger } from '../src/log.js';
import { report, V } from './support/reports.js';
import { json, REDIS_URL, startTestService, type TestService } from './support/service.js';

/**
 * SPEC §3.7 (issue 31): a stopping process takes no job. BullMQ stops fetching once its worker
 * closes, but a job arriving during a blocking wait begun before is still handed to the processor
 * (seen in test/fault-stopping.test.ts on a loaded host): the processor gives it back to the queue,
 * unapplied, for the next process.
 */

describe('a job handed to the processor while the process stops', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ worker: false });
  });
  afterAll(() => svc?.close());

  it('goes back to waiting, its report not applied', async () => {
    const log = createLogger('silent');
    const batcher = new ReportBatcher({
      store: svc.store,
      locks: svc.locks,
      batchSize: 10,
      waitMs: 5,
      concurrency: 1,
      maxEventAgeDays: 0,
      log,
      totals: svc.totals,
    });
    // The stop began before the job is taken.
    let asked = 0;
    const stoppedAt = Date.now();
    const processors = ingestProcessors(batcher, log, () => {
      asked += 1;
      return stoppedAt;
    });
    const job = await svc.queue!.add('check', report({ check_id: 'stopping-0', end_time: '2024-01-01 10:00:00', vulnerabilities: [V] }));
    const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const worker = new Worker(svc.queue!.name, processors.check, { connection, prefix: svc.queue!.opts.prefix });
    try {
      for (let i = 0; i < 200 && asked === 0; i++) await new Promise((r) => setTimeout(r, 25));
      expect(asked).toBeGreaterThan(0);
    } finally {
      await worker.close();
      connection.disconnect();
    }
    expect(await svc.queue!.getJobState(job.id!)).toBe('waiting');
    expect(await svc.queue!.getFailedCount()).toBe(0);
    expect((await json(svc.db('/stats/size'))).size.sources).toBe(0);
  });
});
