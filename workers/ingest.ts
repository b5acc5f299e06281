import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { ReportRejected, type JobLike, type JobOutcome, type ReportBatcher } from '../src/ingest/batcher.js';
import { countReports } from '../src/observability/metrics.js';
import type { Prepared } from '../src/ingest/prepare.js';
import type { Logger } from '../src/log.js';
import { BUNDLE_SIZE, CHECK_BUNDLES_QUEUE, CHECKS_QUEUE, checkBundle } from '../src/queue/contract.js';
import type { RedisNames } from '../src/queue/redis.js';

/**
 * The ingest workers: one consumes the `checks` queue (a report per job), one the `checks-bulk`
 * queue (bundles of reports from `vulndb import`), and both hand reports to the same batcher.
 * Invalid reports fail without retry (SPEC §3.7), and so does a bundle holding one. Transient
 * failures are retried here with exponential backoff from 1 s, whatever options the producer
 * used, up to MAX_ATTEMPTS starts.
 */

export const MAX_ATTEMPTS = 8;
export const backoffMs = (attempt: number) => Math.min(1000 * 2 ** (attempt - 1), 5 * 60_000);

/** What a completed bundle job returns: how its reports went. */
export interface BundleOutcome {
  reports: number;
  ingested: number;
  duplicates: number;
  ignored: number;
}

/**
 * Retries a job whose reports failed for a transient reason (its reports are applied again). Starts
 * after a holder died (stalls) are not failures: they are bounded by JOB_MAX_STALLS instead.
 */
async function retryLater(job: Job, token: string | undefined, err: unknown): Promise<never> {
  const failures = job.attemptsStarted - (job.stalledCounter ?? 0);
  if (failures >= MAX_ATTEMPTS) throw err;
  await job.moveToDelayed(Date.now() + backoffMs(failures), token);
  throw new DelayedError();
}

const reportsOf = (data: unknown): number => {
  const reports = (data as { reports?: unknown } | undefined)?.reports;
  return Array.isArray(reports) ? reports.length : 1;
};

/** What the batcher needs of a BullMQ job. */
const jobLike = (job: Job): JobLike => ({
  id: job.id,
  data: job.data,
  attemptsStarted: job.attemptsStarted,
  attemptsMade: job.attemptsMade,
  enqueuedAt: job.timestamp,
});

async function applyBundle(batcher: ReportBatcher, job: Job): Promise<BundleOutcome> {
  const checked = checkBundle(job.data);
  if ('reason' in checked) throw new UnrecoverableError(checked.reason);
  // Every report is checked before any is applied: an invalid one rejects the bundle whole.
  const prepared: Exclude<Prepared, { kind: 'invalid' }>[] = [];
  for (const [i, data] of checked.bundle.reports.entries()) {
    const p = batcher.prepare(data);
    if (p.kind === 'invalid') {
      countReports('rejected', checked.bundle.reports.length);
      throw new UnrecoverableError(`reports[${i}]: ${p.reason}`);
    }
    prepared.push(p);
  }
  // All settled before the job ends, so that a retry never overlaps its own first attempt.
  const settled = await Promise.allSettled(prepared.map((p, i) => batcher.submitPrepared(p, { ...jobLike(job), id: `${job.id}/${i}` })));
  // A report the store refused on its own fails the bundle without retry, naming it; the others
  // are stored (SPEC §3.7, isolation). Any other failure retries the bundle.
  const refused = settled.flatMap((s, i) =>
    s.status === 'rejected' && s.reason instanceof ReportRejected ? [`reports[${i}]: ${s.reason.message}`] : [],
  );
  const failed = settled.find((s) => s.status === 'rejected' && !(s.reason instanceof ReportRejected));
  if (failed) throw (failed as PromiseRejectedResult).reason;
  if (refused.length > 0) {
    throw new UnrecoverableError(
      `${refused.length} of ${settled.length} reports refused (the others are stored): ${refused.slice(0, 5).join('; ')}`,
    );
  }
  const outcome: BundleOutcome = { reports: settled.length, ingested: 0, duplicates: 0, ignored: 0 };
  for (const s of settled as PromiseFulfilledResult<JobOutcome>[]) {
    if (s.value.outcome === 'ingested') outcome.ingested += 1;
    else if (s.value.outcome === 'duplicate') outcome.duplicates += 1;
    else outcome.ignored += 1;
  }
  return outcome;
}

export function startIngestWorkers(deps: {
  connection: Redis;
  names: RedisNames;
  batcher: ReportBatcher;
  /** Reports held at once by each queue's worker: enough to fill every batch in flight. */
  reportsInFlight: number;
  /** Lock and stall settings of held jobs (config.jobs; README, Operations). */
  jobs: { lockMs: number; maxStalls: number };
  log: Logger;
}): Worker[] {
  const { batcher, log } = deps;
  const processCheck = async (job: Job, token?: string): Promise<JobOutcome> => {
    try {
      return await batcher.submit(jobLike(job));
    } catch (err) {
      if (err instanceof ReportRejected) throw new UnrecoverableError(err.message);
      return retryLater(job, token, err);
    }
  };
  const processBundle = async (job: Job, token?: string): Promise<BundleOutcome> => {
    try {
      return await applyBundle(batcher, job);
    } catch (err) {
      if (err instanceof UnrecoverableError) {
        log.warn('bundle rejected', { jobId: job.id, reason: err.message });
        throw err;
      }
      return retryLater(job, token, err);
    }
  };
  const start = (queue: string, processor: (job: Job, token?: string) => Promise<unknown>, concurrency: number) => {
    const worker = new Worker(queue, processor, {
      connection: deps.connection,
      prefix: deps.names.queuePrefix,
      concurrency,
      // A killed holder's jobs go back to waiting once their lock lapses (found by the next stall
      // check); each such return counts as a stall, and only a job stalled more than maxStalls
      // times fails. BullMQ's default of one lost every held job to two kills in a row.
      lockDuration: deps.jobs.lockMs,
      stalledInterval: Math.max(500, Math.round(deps.jobs.lockMs / 2)),
      maxStalledCount: deps.jobs.maxStalls,
    });
    worker.on('failed', (job, err) => {
      log.warn('job failed', { queue, jobId: job?.id, attempts: job?.attemptsStarted, reason: err.message });
      // Out of retries or stalled too often; reports rejected or refused were counted where that was decided.
      if (!(err instanceof UnrecoverableError)) countReports('failed', queue === CHECKS_QUEUE ? 1 : reportsOf(job?.data));
    });
    worker.on('error', (err) => log.error('worker error', { queue, err }));
    return worker;
  };
  return [
    start(CHECKS_QUEUE, processCheck, deps.reportsInFlight),
    start(CHECK_BUNDLES_QUEUE, processBundle, Math.max(1, Math.ceil(deps.reportsInFlight / BUNDLE_SIZE))),
  ];
}
