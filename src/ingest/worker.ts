import { UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from '../log.js';
import { BUNDLE_SIZE, CHECK_BUNDLES_QUEUE, CHECKS_QUEUE } from '../queue/contract.js';
import type { RedisNames } from '../queue/redis.js';
import type { ReportBatcher } from './batcher.js';
import { ingestProcessors } from './jobs.js';

/**
 * The ingest workers: one consumes the `checks` queue (a report per job), one the `checks-bulk`
 * queue (bundles of reports), and both hand reports to the same batcher (src/ingest/jobs.ts).
 */

export interface IngestWorkerDeps {
  connection: Redis;
  names: RedisNames;
  batcher: ReportBatcher;
  /** Reports held at once by each queue's worker: enough to fill every batch in flight. */
  reportsInFlight: number;
  /** Lock and stall settings of held jobs (config.jobs; README, Operations). */
  jobs: { lockMs: number; maxStalls: number };
  log: Logger;
  /** When the process began to stop (epoch ms): a job taken since is handed back (src/ingest/jobs.ts). */
  stoppedAt?: () => number | undefined;
}

const reportsOf = (data: unknown): number => {
  const reports = (data as { reports?: unknown } | undefined)?.reports;
  return Array.isArray(reports) ? reports.length : 1;
};

function startWorker(
  deps: IngestWorkerDeps,
  queue: string,
  processor: (job: Job, token?: string) => Promise<unknown>,
  concurrency: number,
): Worker {
  const { log } = deps;
  const worker = new Worker(queue, processor, {
    connection: deps.connection,
    prefix: deps.names.queuePrefix,
    concurrency,
    // A killed holder's jobs go back to waiting once their lock lapses (found by the next stall
    // check); each such return counts as a stall, and only a job stalled more than maxStalls
    // times fails. BullMQ's default of one would lose every held job to two kills in a row.
    lockDuration: deps.jobs.lockMs,
    stalledInterval: Math.max(500, Math.round(deps.jobs.lockMs / 2)),
    maxStalledCount: deps.jobs.maxStalls,
  });
  worker.on('failed', (job, err) => {
    log.warn('job failed', { queue, jobId: job?.id, attempts: job?.attemptsStarted, reason: err.message });
    // Out of retries or stalled too often; reports rejected or refused were counted where that was decided.
    if (!(err instanceof UnrecoverableError)) deps.batcher.countReports('failed', queue === CHECKS_QUEUE ? 1 : reportsOf(job?.data));
  });
  worker.on('error', (err) => log.error('worker error', { queue, err }));
  return worker;
}

export function startIngestWorkers(deps: IngestWorkerDeps): Worker[] {
  const processors = ingestProcessors(deps.batcher, deps.log, deps.stoppedAt);
  return [
    startWorker(deps, CHECKS_QUEUE, processors.check, deps.reportsInFlight),
    startWorker(deps, CHECK_BUNDLES_QUEUE, processors.bundle, Math.max(1, Math.ceil(deps.reportsInFlight / BUNDLE_SIZE))),
  ];
}
