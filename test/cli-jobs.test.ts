import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { Queue, UnrecoverableError, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INGEST_QUEUES, JobNotRetried, listFailed, retryAll, retryJob } from '../src/cli/failed-jobs.js';
import { failedTable } from '../src/cli/jobs.js';
import { CHECK_BUNDLES_QUEUE, CHECKS_QUEUE } from '../src/queue/contract.js';
import { report, V } from './support/reports.js';
import { json, REDIS_URL, startTestService, type TestService } from './support/service.js';

/**
 * `vulndb jobs failed` and `vulndb jobs retry` against failed jobs made for real: invalid reports
 * and an invalid bundle enqueued straight on the service's queues (its own BullMQ prefix), which
 * its worker fails without retry (SPEC §3.7).
 */

const run = promisify(execFile);
const bin = path.resolve('bin/vulndb.mjs');

const valid = (checkId: string, target: string) =>
  report({ check_id: checkId, target, end_time: '2024-01-01 10:00:00', vulnerabilities: [V] });
// FINISHED reports the worker must reject: each fails alone.
const invalid = (checkId: string, target: string) => ({ ...valid(checkId, target), end_time: 'yesterday' });

let svc: TestService;

async function failedIn(queue: Queue, n: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  while ((await queue.getFailedCount()) < n) {
    if (Date.now() > deadline) throw new Error(`${queue.name}: fewer than ${n} failed jobs`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Waits until the job is finished again (failed or completed) after a re-drive. */
async function finished(queue: Queue, id: string): Promise<string> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const state = await (await queue.getJob(id))!.getState();
    if (state === 'failed' || state === 'completed') return state;
    if (Date.now() > deadline) throw new Error(`job ${id} still ${state}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const ids: Record<string, string> = {};

beforeAll(async () => {
  svc = await startTestService();
  // One at a time so that their failure times are ordered: a, then b, then the bundle, then c.
  for (const [name, data] of [
    ['a', invalid('check-a', 'a.example.com')],
    ['b', invalid('check-b', 'b.example.com')],
  ] as const) {
    ids[name] = (await svc.queue!.add('report', data)).id!;
    await svc.settle();
    await new Promise((r) => setTimeout(r, 5));
  }
  const bundle = {
    reports: [
      valid('bundle-1', 'x.example.com'),
      invalid('bundle-2', 'y.example.com'),
      valid('bundle-3', 'z.example.com'),
      valid('bundle-4', 'w.example.com'),
    ],
  };
  ids.bundle = (await svc.bulk.add('reports', bundle)).id!;
  await svc.settle();
  await new Promise((r) => setTimeout(r, 5));
  ids.c = (
    await svc.queue!.add('report', {
      status: 'FINISHED',
      check_id: 'check-c',
      checktype_name: 'vulcan-tls',
      end_time: '2024-01-01 10:00:00',
    })
  ).id!;
  await svc.settle();
  await failedIn(svc.queue!, 3);
  await failedIn(svc.bulk, 1);
}, 60_000);
afterAll(() => svc?.close());

describe('vulndb jobs failed', () => {
  it('given failed reports and a failed bundle, when listed, then they come newest first with their reason, time, attempts and reports', async () => {
    const list = await listFailed(svc.redis, svc.names);
    expect(list.failed).toEqual({ [CHECKS_QUEUE]: 3, [CHECK_BUNDLES_QUEUE]: 1 });
    expect(list.jobs.map((j) => [j.queue, j.id])).toEqual([
      [CHECKS_QUEUE, ids.c],
      [CHECK_BUNDLES_QUEUE, ids.bundle],
      [CHECKS_QUEUE, ids.b],
      [CHECKS_QUEUE, ids.a],
    ]);
    const [c, bundle, b] = list.jobs;
    expect(b).toMatchObject({ target: 'b.example.com', check_id: 'check-b', attempts: 1, attempts_made: 1 });
    expect(b!.reason).toMatch(/^end_time: must be a timestamp/);
    expect(Date.parse(b!.failed_at!)).toBeGreaterThan(Date.now() - 120_000);
    expect(c).toMatchObject({ check_id: 'check-c', reason: 'target: must be a non-empty string' });
    expect(c!.target).toBeUndefined();
    expect(bundle).toMatchObject({ reports: 4, targets: ['x.example.com', 'y.example.com', 'z.example.com'] });
    expect(bundle!.reason).toMatch(/^reports\[1\]: end_time: must be a timestamp/);
  });

  it('given a limit, when listed, then only the newest jobs of all queues are shown, with the totals', async () => {
    const list = await listFailed(svc.redis, svc.names, { limit: 2 });
    expect(list.jobs.map((j) => j.id)).toEqual([ids.c, ids.bundle]);
    expect(list.failed).toEqual({ [CHECKS_QUEUE]: 3, [CHECK_BUNDLES_QUEUE]: 1 });
    const table = failedTable(list);
    expect(table.split('\n')[0]).toMatch(/^FAILED AT\s+QUEUE\s+ID\s+ATTEMPTS\s+REPORT\s+REASON$/);
    expect(table).toContain('bundle of 4: x.example.com, y.example.com, z.example.com, …');
    expect(table).toContain('2 of 4 failed jobs shown (checks 3, checks-bulk 1)');
  });

  // A queue no worker of the service consumes (its notifications worker would take a 'notifications' job).
  const OTHER = 'other-work';
  it("given another queue under the service's prefix, when it is named, then its failed jobs are listed too", async () => {
    const other = new Queue(OTHER, { connection: svc.redis, prefix: svc.names.queuePrefix });
    const workerRedis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const worker = new Worker(
      OTHER,
      async () => {
        throw new UnrecoverableError('webhook answered 410');
      },
      { connection: workerRedis, prefix: svc.names.queuePrefix },
    );
    try {
      const job = await other.add('notify', { team: 't1' });
      await failedIn(other, 1);
      const list = await listFailed(svc.redis, svc.names, { queues: [...INGEST_QUEUES, OTHER], limit: 1 });
      expect(list.failed).toEqual({ [CHECKS_QUEUE]: 3, [CHECK_BUNDLES_QUEUE]: 1, [OTHER]: 1 });
      expect(list.jobs).toEqual([expect.objectContaining({ queue: OTHER, id: job.id, reason: 'webhook answered 410' })]);
      expect(await retryAll(svc.redis, svc.names, [OTHER])).toEqual({ [OTHER]: 1 });
      await failedIn(other, 1);
    } finally {
      await worker.close();
      workerRedis.disconnect();
      await other.obliterate({ force: true });
      await other.close();
    }
  });
});

describe('vulndb jobs retry', () => {
  it('given a failed invalid report, when re-driven, then the worker runs it again and it fails again with one more attempt', async () => {
    expect(await retryJob(svc.redis, svc.names, ids.a!, [CHECKS_QUEUE])).toEqual({ queue: CHECKS_QUEUE, id: ids.a });
    expect(await finished(svc.queue!, ids.a!)).toBe('failed');
    const job = await svc.queue!.getJob(ids.a!);
    expect({ made: job!.attemptsMade, started: job!.attemptsStarted }).toEqual({ made: 2, started: 1 });
  });

  it('given a failed report whose data was corrected, when re-driven, then it is applied', async () => {
    const job = await svc.queue!.getJob(ids.b!);
    await job!.updateData(valid('check-b', 'b.example.com'));
    await retryJob(svc.redis, svc.names, ids.b!, [CHECKS_QUEUE]);
    expect(await finished(svc.queue!, ids.b!)).toBe('completed');
    expect((await json(svc.db('/targets?identifier=b.example.com'))).targets).toHaveLength(1);
  });

  it('given an id no queue holds as failed, when re-driven, then it fails naming why', async () => {
    await expect(retryJob(svc.redis, svc.names, '999999')).rejects.toThrow(/^no job 999999 in checks, checks-bulk/);
    await expect(retryJob(svc.redis, svc.names, ids.b!, [CHECKS_QUEUE])).rejects.toThrow(/is not failed \(checks: completed\)/);
    // Ids count per queue: the first report and the first bundle are both job 1, and both failed.
    expect(ids.a).toBe(ids.bundle);
    const err = await retryJob(svc.redis, svc.names, ids.a!).catch((e) => e);
    expect(err).toBeInstanceOf(JobNotRetried);
    expect(err.message).toBe(`job ${ids.a} failed in several queues (checks, checks-bulk): choose one with --queue`);
    expect(err.exitCode).toBe(2);
  });

  it('given failed jobs in both queues, when all are re-driven, then each queue says how many and they run again', async () => {
    expect(await retryAll(svc.redis, svc.names)).toEqual({ [CHECKS_QUEUE]: 2, [CHECK_BUNDLES_QUEUE]: 1 });
    expect(await finished(svc.bulk, ids.bundle!)).toBe('failed');
    expect(await finished(svc.queue!, ids.c!)).toBe('failed');
    expect(await finished(svc.queue!, ids.a!)).toBe('failed');
    expect((await svc.bulk.getJob(ids.bundle!))!.attemptsMade).toBe(2);
    expect(await retryAll(svc.redis, svc.names, [CHECKS_QUEUE])).toEqual({ [CHECKS_QUEUE]: 2 });
    await failedIn(svc.queue!, 2);
  });
});

describe('vulndb jobs as a command', () => {
  const cli = (args: string[], redisUrl = REDIS_URL) =>
    run(process.execPath, [bin, 'jobs', ...args], { env: { ...process.env, REDIS_URL: redisUrl, LOG_LEVEL: 'error' } }).catch((e) => e);

  it('lists as JSON what the function lists, and exits with 1 for an unknown job and 2 for usage errors', async () => {
    await svc.settle();
    const listed = await cli(['failed', '--json', '--queue-prefix', svc.names.queuePrefix]);
    expect(JSON.parse(listed.stdout)).toEqual(await listFailed(svc.redis, svc.names));

    const unknown = await cli(['retry', '424242', '--queue-prefix', svc.names.queuePrefix]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no job 424242 in checks, checks-bulk (failed jobs are kept 7 days)');

    // Usage errors are found before Redis is asked (this one does not answer).
    const usage = await Promise.all([
      cli(['retry', '1', '--all'], 'redis://127.0.0.1:1'),
      cli(['failed', '--limit', '0'], 'redis://127.0.0.1:1'),
    ]);
    expect(usage.map((u) => [u.code, u.stderr.trim()])).toEqual([
      [2, 'error: give either a job id or --all'],
      [2, 'error: --limit must be a positive integer'],
    ]);
  }, 60_000);

  it('given an unknown --queue, then it exits 2 naming the known queues instead of finding no failed jobs there', async () => {
    for (const command of ['failed', 'retry']) {
      const run = await cli([command, ...(command === 'retry' ? ['--all'] : []), '--queue', 'nope'], 'redis://127.0.0.1:1');
      expect(run.code).toBe(2);
      expect(run.stderr).toContain("argument 'nope' is invalid. unknown queue; the queues are checks, checks-bulk, notifications");
      expect(run.stdout).toBe('');
    }
    const known = await cli(['failed', '--queue', 'notifications', '--queue-prefix', svc.names.queuePrefix]);
    expect({ code: known.code ?? 0, stdout: known.stdout }).toEqual({ code: 0, stdout: 'no failed jobs in notifications\n' });
  });
});
