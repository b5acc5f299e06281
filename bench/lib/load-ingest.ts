/**
 * bench/load.ts's ingestion side: a BullMQ producer adding one job per report to the `checks`
 * queue (as scanners send) at a fixed rate, with reports that continue the dataset's synthetic
 * history (the same generator and seed, the scans after the dataset's last one, on its targets),
 * and a sampler of how far behind the worker is:
 *   - every job's lag, enqueue → completed (the `completed` set's score is the job's finishedOn,
 *     set after its batch committed), read from the set every 250 ms; the service keeps the last
 *     1,000 completed jobs, so a burst of completions between two reads can drop some (`seen`
 *     says how many were measured);
 *   - every second, the age of the oldest report not yet committed (the oldest of the waiting
 *     jobs and of the jobs the worker holds in its batches), and the queue's counts.
 */
import { Redis } from 'ioredis';
import type { Queue } from 'bullmq';
import { checksQueue, enqueueReports } from '../../src/queue/producer.js';
import { CHECKS_QUEUE } from '../../src/queue/contract.js';
import { syntheticReports } from './synthetic.js';

export interface QueueSample {
  /** Seconds since the producer started. */
  t: number;
  enqueued: number;
  waiting: number;
  active: number;
  delayed: number;
  failed: number;
  /** Age in seconds of the oldest report enqueued and not yet committed (0: none). */
  oldestPendingS: number;
}

export interface Ingestion {
  /** Starts adding `rate` reports per second. */
  start(): void;
  /** From now on adds `rate` reports per second (0: none; a phase of bench/load.ts). */
  setRate(rate: number): void;
  /** Adds `count` reports at once (a backlog: the worker's bulk throughput), besides the rate. */
  burst(count: number): Promise<void>;
  /** Stops adding; resolves once the last add returned. */
  stop(): Promise<void>;
  enqueued(): number;
  /** Epoch ms at which the producer started. */
  startedAt(): number;
  samples: QueueSample[];
  /** Per-job lags in ms (enqueue → completed), with the epoch ms each job completed. */
  lags: { at: number; ms: number }[];
  /** Adds that failed (Redis errors). */
  addErrors: number;
  /** Resolves when nothing is waiting, held or delayed any more, or after `timeoutMs` (false). */
  drained(timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}

export function startIngestion(opts: {
  redisUrl: string;
  queuePrefix: string;
  rate: number;
  targets: number;
  firstScan: number;
}): Ingestion {
  const redis = new Redis(opts.redisUrl, { maxRetriesPerRequest: null });
  const sampler = new Redis(opts.redisUrl);
  const queue: Queue = checksQueue(redis, { queuePrefix: opts.queuePrefix, keyPrefix: 'unused' });
  const key = (k: string) => `${opts.queuePrefix}:${CHECKS_QUEUE}:${k}`;
  // The dataset holds scans 0 … firstScan-1; the generator replays them without yielding (the
  // same random draws), then yields the following ones. Enough scans for any run.
  const reports = syntheticReports({ targets: opts.targets, scans: opts.firstScan + 10_000, churn: 0.01, skipScans: opts.firstScan });
  const first = reports.next().value!; // pays for the skipped scans now, not during the run
  let pendingFirst: Record<string, unknown> | undefined = first;
  const nextReport = () => {
    if (pendingFirst) {
      const r = pendingFirst;
      pendingFirst = undefined;
      return r;
    }
    return reports.next().value!;
  };

  const enqueuedAt = new Map<string, number>();
  const samples: QueueSample[] = [];
  const lags: { at: number; ms: number }[] = [];
  let sent = 0;
  let addErrors = 0;
  let started = 0;
  let adding: Promise<void> | undefined;
  let producer: NodeJS.Timeout | undefined;
  let completedFrom = 0;

  // A tick every 50 ms adds what the rate owes since the start, so late ticks catch up and the
  // average rate is exact.
  let rate = opts.rate;
  // The rate's clock: reports owed since rateFrom, beyond the rateBase sent before it.
  let rateFrom = 0;
  let rateBase = 0;
  const tick = () => {
    if (adding) return;
    const due = Math.floor(((Date.now() - rateFrom) / 1000) * rate) - (sent - rateBase);
    if (due <= 0) return;
    const batch = Array.from({ length: due }, nextReport);
    const at = Date.now();
    sent += due;
    adding = enqueueReports(queue, batch)
      .then((ids) => {
        for (const id of ids) enqueuedAt.set(id, at);
      })
      .catch(() => {
        addErrors += due;
      })
      .finally(() => (adding = undefined));
  };

  const readCompleted = async () => {
    const found = await sampler.zrangebyscore(key('completed'), completedFrom, '+inf', 'WITHSCORES');
    for (let i = 0; i < found.length; i += 2) {
      const id = found[i]!;
      const finishedOn = Number(found[i + 1]);
      completedFrom = Math.max(completedFrom, finishedOn);
      const at = enqueuedAt.get(id);
      if (at === undefined) continue; // already measured (equal scores are read again)
      enqueuedAt.delete(id);
      lags.push({ at: finishedOn, ms: finishedOn - at });
    }
  };

  const oldestOf = async (ids: string[]): Promise<number | undefined> => {
    let oldest: number | undefined;
    for (const id of ids) {
      let at = enqueuedAt.get(id);
      if (at === undefined) {
        const ts = await sampler.hget(key(id), 'timestamp');
        if (ts !== null) at = Number(ts);
      }
      if (at !== undefined && (oldest === undefined || at < oldest)) oldest = at;
    }
    return oldest;
  };

  const sampleQueue = async () => {
    const [waiting, active, delayed, failed, oldestWaiting, activeIds, delayedIds] = await Promise.all([
      sampler.llen(key('wait')),
      sampler.llen(key('active')),
      sampler.zcard(key('delayed')),
      sampler.zcard(key('failed')),
      sampler.lindex(key('wait'), -1), // jobs are pushed on the left: the oldest is last
      sampler.lrange(key('active'), 0, -1),
      sampler.zrange(key('delayed'), 0, -1),
    ]);
    const oldest = await oldestOf([...(oldestWaiting ? [oldestWaiting] : []), ...activeIds, ...delayedIds]);
    const now = Date.now();
    samples.push({
      t: (now - started) / 1000,
      enqueued: sent,
      waiting,
      active,
      delayed,
      failed,
      oldestPendingS: oldest === undefined ? 0 : (now - oldest) / 1000,
    });
  };

  let completedTimer: NodeJS.Timeout | undefined;
  let sampleTimer: NodeJS.Timeout | undefined;
  const guard = (f: () => Promise<void>) => {
    let running = false;
    return () => {
      if (running) return;
      running = true;
      f()
        .catch(() => undefined)
        .finally(() => (running = false));
    };
  };

  return {
    setRate(r) {
      rate = r;
      rateFrom = Date.now();
      rateBase = sent;
    },
    async burst(count) {
      await adding;
      const at = Date.now();
      for (let i = 0; i < count; i += 1000) {
        const batch = Array.from({ length: Math.min(1000, count - i) }, nextReport);
        sent += batch.length;
        rateBase += batch.length; // not owed by the rate
        for (const id of await enqueueReports(queue, batch)) enqueuedAt.set(id, at);
      }
    },
    start() {
      started = Date.now();
      rateFrom = started;
      rateBase = 0;
      producer = setInterval(tick, 50);
      completedTimer = setInterval(guard(readCompleted), 250);
      sampleTimer = setInterval(guard(sampleQueue), 1000);
    },
    async stop() {
      clearInterval(producer);
      await adding;
    },
    enqueued: () => sent,
    startedAt: () => started,
    samples,
    lags,
    get addErrors() {
      return addErrors;
    },
    async drained(timeoutMs) {
      const until = Date.now() + timeoutMs;
      while (Date.now() < until) {
        const [waiting, active, delayed] = await Promise.all([
          sampler.llen(key('wait')),
          sampler.llen(key('active')),
          sampler.zcard(key('delayed')),
        ]);
        if (waiting + active + delayed === 0) {
          await readCompleted();
          return true;
        }
        await new Promise((r) => setTimeout(r, 250));
      }
      return false;
    },
    async close() {
      clearInterval(producer);
      clearInterval(completedTimer);
      clearInterval(sampleTimer);
      await queue.close();
      await redis.quit();
      await sampler.quit();
    },
  };
}
