import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prng } from '../src/demo/prng.js';
import { CHECKS_QUEUE, type Bundle } from '../src/queue/contract.js';
import { bundlesQueue, checksQueue, enqueueBundles, enqueueReports } from '../src/queue/producer.js';
import { defaultRedisNames } from '../src/queue/redis.js';
import {
  apiState,
  stateDifferences,
  failedJobs,
  faultJobs,
  killChildServices,
  settleQueues,
  spawnService,
  type ChildService,
  type FaultJob,
} from './support/child-service.js';
import { startPrivateRedis, type PrivateRedis } from './support/private-redis.js';
import { json, startTestService } from './support/service.js';

/**
 * SPEC §3.7, durability (issue 21): the service, run as users run it, is SIGKILLed over and over
 * while a stream of reports arrives on its queues — at random points (during start-up, while it
 * holds jobs, mid-batch) and five times in a row while the same jobs are held — and restarted each
 * time. Nothing may be lost or fail: once the queues are empty, what the API shows equals a clean
 * run of the same jobs. The random choices come from FAULT_SEED (printed), so a failure can be
 * replayed: FAULT_SEED=<seed> npx vitest run test/fault-kills.test.ts.
 */

const SEED = Number(process.env.FAULT_SEED ?? Date.now() % 100_000);
const RANDOM_KILLS = 5;
const HELD_KILLS = 5; // SPEC §3.7: at least 5 consecutive kills survived
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the service SIGKILLed repeatedly while ingesting (a child process on a private Redis)', () => {
  let redis: PrivateRedis;
  let dataDir: string;
  let producer: Redis;
  let passed = false;

  beforeAll(async () => {
    redis = await startPrivateRedis();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'vulndb-fault-kills-'));
    producer = new Redis(redis.url, { maxRetriesPerRequest: null });
  });
  afterAll(async () => {
    await killChildServices();
    producer?.disconnect();
    await redis?.kill();
    // A failure keeps the service's log and store for a person to read.
    if (dataDir && passed) fs.rmSync(dataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
    else if (dataDir) console.log(`fault-kills: kept ${dataDir}`);
  });

  it('stores every report exactly as a clean run does, with no failed job, after 10 kills including 5 in a row while the same jobs are held', async () => {
    console.log(`fault-kills: FAULT_SEED=${SEED}, service log in ${dataDir}/service.log`);
    const rnd = prng(SEED);
    const between = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo));
    const { jobs, reports } = faultJobs({ seed: SEED, targets: 30, days: 30, bundleShare: 0.25 });
    const checks = checksQueue(producer, defaultRedisNames);
    const bulk = bundlesQueue(producer, defaultRedisNames);
    const started = Date.now();

    // The stream: a slice of the jobs every 300 ms for about a minute, whatever the service is doing.
    const send = async (
      queue: { reports: ReturnType<typeof checksQueue>; bundles: ReturnType<typeof bundlesQueue> },
      slice: FaultJob[],
    ) => {
      const singles = slice.filter((j) => j.queue === CHECKS_QUEUE).map((j) => j.data);
      const bundles = slice.filter((j) => j.queue !== CHECKS_QUEUE).map((j) => j.data as Bundle);
      if (singles.length > 0) await enqueueReports(queue.reports, singles);
      if (bundles.length > 0) await enqueueBundles(queue.bundles, bundles);
    };
    const chunk = Math.ceil(jobs.length / 200);
    const streaming = (async () => {
      for (let i = 0; i < jobs.length; i += chunk) {
        await send({ reports: checks, bundles: bulk }, jobs.slice(i, i + chunk));
        await sleep(300);
      }
    })();

    let svc: ChildService | undefined;
    const kills: string[] = [];
    const kill = async (what: string) => {
      const s = svc!;
      const phase = s.dbApiUrl ? `${s.count('batch committed')} batches committed` : 'starting';
      await s.stop('SIGKILL');
      kills.push(`${((Date.now() - started) / 1000).toFixed(1)}s ${what} (${phase})`);
    };
    const activeIds = () => producer.lrange(`${defaultRedisNames.queuePrefix}:${CHECKS_QUEUE}:active`, 0, -1);
    const jobKey = (id: string) => `${defaultRedisNames.queuePrefix}:${CHECKS_QUEUE}:${id}`;

    const randomKill = async () => {
      svc = await spawnService({ dataDir, redisUrl: redis.url });
      if (rnd() < 0.25) {
        // Anywhere from start-up (store opening, migrations, workers starting) on.
        await Promise.race([sleep(between(300, 4000)), svc.exited]);
      } else {
        await svc.ready();
        await sleep(between(200, 4000));
      }
      await kill('random');
    };

    // Five kills in a row while the same jobs are held: each restart waits until jobs that the
    // previous process held (and that returned to waiting as stalled) are held by it.
    const heldKills = async () => {
      svc = await spawnService({ dataDir, redisUrl: redis.url });
      await svc.ready();
      const deadline = Date.now() + 30_000;
      const untilHeld = async () => {
        while ((await checks.getActiveCount()) === 0) {
          if (Date.now() > deadline) throw new Error('the service held no job within 30 s');
          await sleep(20);
        }
      };
      await untilHeld();
      await sleep(between(100, 1500));
      // A fast host may have finished those jobs meanwhile: killed only while it holds some.
      await untilHeld();
      await kill('held 1');
      let held = new Set(await activeIds());
      expect(held.size).toBeGreaterThan(0);
      // Stalls so far (earlier random kills may have returned some of these jobs already).
      const before = new Map<string, number>();
      const pipeline = producer.pipeline();
      for (const id of held) pipeline.hget(jobKey(id), 'stc');
      for (const [i, [, stalls]] of ((await pipeline.exec()) ?? []).entries()) before.set([...held][i]!, Number(stalls ?? 0));
      for (let k = 2; k <= HELD_KILLS; k++) {
        svc = await spawnService({ dataDir, redisUrl: redis.url });
        await svc.ready();
        // Held again: active, locked by the new process, and returned by the stall check k - 1 times.
        const until = Date.now() + 30_000;
        const again: string[] = [];
        while (again.length === 0) {
          if (Date.now() > until) throw new Error(`no job held by the killed process was held again within 30 s (kill ${k})`);
          await sleep(100);
          const candidates = (await activeIds()).filter((id) => held.has(id));
          for (const id of candidates.slice(0, 200)) {
            const [locked, stalls] = await Promise.all([producer.exists(`${jobKey(id)}:lock`), producer.hget(jobKey(id), 'stc')]);
            if (locked === 1 && Number(stalls ?? 0) >= before.get(id)! + k - 1) again.push(id);
          }
        }
        await kill(`held ${k}: ${again.length} of the jobs held at kill 1 held again after ${k - 1} stalls`);
        held = new Set(again);
      }
      return [...held].map((id) => ({ id, stallsBefore: before.get(id)! }));
    };

    for (let i = 0; i < 3; i++) await randomKill();
    const survivors = await heldKills();
    for (let i = 3; i < RANDOM_KILLS; i++) await randomKill();

    // The last start: it finishes the stream.
    svc = await spawnService({ dataDir, redisUrl: redis.url });
    await svc.ready();
    await streaming;
    await settleQueues([checks, bulk], 150_000);
    const settledAfter = (Date.now() - started) / 1000;
    console.log(`fault-kills: ${kills.length} kills:\n  ${kills.join('\n  ')}\nsettled after ${settledAfter.toFixed(1)} s`);

    expect(kills.length).toBe(RANDOM_KILLS + HELD_KILLS);
    expect.soft(await failedJobs([checks, bulk])).toEqual([]);
    // The jobs held through all five kills completed (unless already trimmed from the completed list).
    for (const { id, stallsBefore } of survivors) {
      const job = await checks.getJob(id);
      if (job)
        expect({ id, state: await job.getState(), fiveStalls: job.stalledCounter - stallsBefore >= HELD_KILLS }).toEqual({
          id,
          state: 'completed',
          fiveStalls: true,
        });
    }
    const afterKills = await apiState((p) => svc!.get(p));
    expect(await svc.stop('SIGTERM', 30_000)).toEqual({ code: 0, signal: null });

    // The same jobs, delivered once to a service nobody kills.
    const clean = await startTestService();
    try {
      await send({ reports: clean.queue!, bundles: clean.bulk }, jobs);
      await clean.settle(150_000);
      expect({ checks: await clean.queue!.getFailedCount(), bundles: await clean.bulk.getFailedCount() }).toEqual({
        checks: 0,
        bundles: 0,
      });
      const expected = await apiState((p) => json(clean.db(p)));
      expect((expected.size as { size: { sources: number } }).size.sources).toBeGreaterThan(reports * 0.9);
      expect(stateDifferences(afterKills, expected)).toEqual([]);
    } finally {
      await clean.close();
    }
    console.log(`fault-kills: ${reports} reports in ${jobs.length} jobs, whole test ${((Date.now() - started) / 1000).toFixed(1)} s`);
    passed = true;
  }, 360_000);
});
