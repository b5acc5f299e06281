import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { ReportRejected, type JobOutcome, type ReportBatcher } from '../src/ingest/batcher.js';
import type { Logger } from '../src/log.js';
import { CHECKS_QUEUE } from '../src/queue/contract.js';
import type { RedisNames } from '../src/queue/redis.js';

/**
 * The ingest worker: consumes the `checks` queue and hands each job to the batcher. Invalid
 * reports fail without retry (SPEC §3.7). Transient failures are retried here with exponential
 * backoff from 1 s, whatever options the producer used, up to MAX_ATTEMPTS starts.
 */

export const MAX_ATTEMPTS = 8;
export const backoffMs = (attempt: number) => Math.min(1000 * 2 ** (attempt - 1), 5 * 60_000);

export function startIngestWorker(deps: {
  connection: Redis;
  names: RedisNames;
  batcher: ReportBatcher;
  /** Jobs held at once: enough to fill every batch in flight. */
  jobsInFlight: number;
  log: Logger;
}): Worker {
  const { batcher, log } = deps;
  const processCheck = async (job: Job, token?: string): Promise<JobOutcome> => {
    try {
      return await batcher.submit(job);
    } catch (err) {
      if (err instanceof ReportRejected) throw new UnrecoverableError(err.message);
      if (job.attemptsStarted >= MAX_ATTEMPTS) throw err;
      await job.moveToDelayed(Date.now() + backoffMs(job.attemptsStarted), token);
      throw new DelayedError();
    }
  };
  const worker = new Worker(CHECKS_QUEUE, processCheck, {
    connection: deps.connection,
    prefix: deps.names.queuePrefix,
    concurrency: deps.jobsInFlight,
  });
  worker.on('failed', (job, err) =>
    log.warn('job failed', { jobId: job?.id, attempts: job?.attemptsStarted, reason: err.message }),
  );
  worker.on('error', (err) => log.error('worker error', { err }));
  return worker;
}
