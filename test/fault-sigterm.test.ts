import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHECKS_QUEUE, type Bundle } from '../src/queue/contract.js';
import { bundlesQueue, checksQueue, enqueueBundles, enqueueReports } from '../src/queue/producer.js';
import { defaultRedisNames } from '../src/queue/redis.js';
import {
  apiState,
  stateDifferences,
  faultJobs,
  killChildServices,
  settleQueues,
  spawnService,
  startChildService,
  unsettled,
  type FaultJob,
} from './support/child-service.js';
import { startPrivateRedis, type PrivateRedis } from './support/private-redis.js';
import { json, startTestService } from './support/service.js';

/**
 * SPEC §3.7, durability (issue 21): SIGTERM stops the service gracefully. The service, run as users
 * run it, is stopped while a batch is running: it finishes the jobs it holds (the batch in flight
 * is committed), logs 'stopped' and exits 0, leaving no job active for stall recovery; restarted,
 * it ingests the rest, and the store equals a clean run of the same jobs.
 */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('SIGTERM while a batch runs (a child process on a private Redis)', () => {
  let redis: PrivateRedis;
  let dataDir: string;
  let producer: Redis;

  beforeAll(async () => {
    redis = await startPrivateRedis();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'vulndb-fault-sigterm-'));
    producer = new Redis(redis.url, { maxRetriesPerRequest: null });
  });
  afterAll(async () => {
    await killChildServices();
    producer?.disconnect();
    await redis?.kill();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  });

  it('commits the batch in flight, finishes every held job and exits 0; after a restart nothing is missing', async () => {
    const { jobs, reports } = faultJobs({ seed: 2102, targets: 24, days: 30, bundleShare: 0.2 });
    const checks = checksQueue(producer, defaultRedisNames);
    const bulk = bundlesQueue(producer, defaultRedisNames);
    const send = async (to: { reports: typeof checks; bundles: typeof bulk }, slice: FaultJob[]) => {
      const singles = slice.filter((j) => j.queue === CHECKS_QUEUE).map((j) => j.data);
      const bundles = slice.filter((j) => j.queue !== CHECKS_QUEUE).map((j) => j.data as Bundle);
      if (singles.length > 0) await enqueueReports(to.reports, singles);
      if (bundles.length > 0) await enqueueBundles(to.bundles, bundles);
    };
    await send({ reports: checks, bundles: bulk }, jobs);

    // Batches of 250 reports: the worker holds 250 jobs of each queue at a time, and batches follow
    // each other while the queues hold more.
    const env = { INGEST_BATCH_SIZE: '250' };
    const svc = await startChildService({ dataDir, redisUrl: redis.url, env });
    await svc.waitForLog((l) => l.msg === 'batch committed', 60_000);
    await sleep(50); // the next batch is running
    const stopping = Date.now();
    const exit = await svc.stop('SIGTERM', 30_000);
    const seconds = (Date.now() - stopping) / 1000;

    const signal = svc.logs.findIndex((l) => l.msg === 'signal received, stopping gracefully');
    expect(signal).toBeGreaterThanOrEqual(0);
    const after = svc.logs.slice(signal);
    // The batch in flight (and what the worker held besides) was committed after the signal.
    expect(after.filter((l) => l.msg === 'batch committed').length).toBeGreaterThan(0);
    expect(after.filter((l) => l.level === 'warn' || l.level === 'error')).toEqual([]);
    expect(after.at(-1)).toMatchObject({ msg: 'stopped' });
    expect(exit).toEqual({ code: 0, signal: null });
    // Nothing left held by the dead process for stall recovery; the rest waits for the next start.
    const left = await unsettled([checks, bulk]);
    expect(left).toMatchObject({ active: 0, delayed: 0 });
    expect(left.waiting).toBeGreaterThan(0);
    expect({ checks: await checks.getFailedCount(), bundles: await bulk.getFailedCount() }).toEqual({ checks: 0, bundles: 0 });
    console.log(
      `fault-sigterm: stopped in ${seconds.toFixed(1)} s after ${svc.count('batch committed')} batches (${after.filter((l) => l.msg === 'batch committed').length} after the signal); ${left.waiting} jobs left waiting`,
    );

    const restarted = await startChildService({ dataDir, redisUrl: redis.url, env });
    await settleQueues([checks, bulk], 120_000);
    expect({ checks: await checks.getFailedCount(), bundles: await bulk.getFailedCount() }).toEqual({ checks: 0, bundles: 0 });
    const state = await apiState((p) => restarted.get(p));
    expect(await restarted.stop('SIGTERM', 30_000)).toEqual({ code: 0, signal: null });

    const clean = await startTestService();
    try {
      await send({ reports: clean.queue!, bundles: clean.bulk }, jobs);
      await clean.settle(120_000);
      const expected = await apiState((p) => json(clean.db(p)));
      expect((expected.size as { size: { sources: number } }).size.sources).toBeGreaterThan(reports * 0.9);
      expect(stateDifferences(state, expected)).toEqual([]);
    } finally {
      await clean.close();
    }
  }, 300_000);

  it('a SIGTERM during start-up, once the worker runs, waits for the start and stops gracefully, losing nothing', async () => {
    // The handlers are installed before the service starts (src/cli/main.ts): the worker may hold
    // jobs before the APIs listen.
    const { jobs } = faultJobs({ seed: 2103, targets: 6, days: 10 });
    const checks = checksQueue(producer, defaultRedisNames);
    const bulk = bundlesQueue(producer, defaultRedisNames);
    const dir = path.join(dataDir, 'startup');
    await enqueueReports(
      checks,
      jobs.map((j) => j.data),
    );
    const svc = await spawnService({ dataDir: dir, redisUrl: redis.url });
    await svc.waitForLog((l) => l.msg === 'ingest worker started', 60_000);
    expect(await svc.stop('SIGTERM', 30_000)).toEqual({ code: 0, signal: null });
    expect(svc.logs.at(-1)).toMatchObject({ msg: 'stopped' });
    expect(await checks.getActiveCount()).toBe(0);
    const restarted = await startChildService({ dataDir: dir, redisUrl: redis.url });
    await settleQueues([checks, bulk], 60_000);
    expect(await checks.getFailedCount()).toBe(0);
    const sources = new Set<string>();
    for (let page = 1; ; page++) {
      const body = await restarted.get(`/sources?size=100&page=${page}`);
      for (const s of body.sources) sources.add(s.instance);
      if (!body.pagination.more) break;
    }
    const finished = jobs.map((j) => j.data as Record<string, unknown>).filter((r) => r.status === 'FINISHED');
    expect(finished.filter((r) => !sources.has(String(r.check_id)))).toEqual([]);
    expect(await restarted.stop('SIGTERM', 30_000)).toEqual({ code: 0, signal: null });
  }, 180_000);
});
