import { DelayedError, UnrecoverableError, WaitingError, type Job } from 'bullmq';
import type { Logger } from '../log.js';
import { checkBundle } from '../queue/contract.js';
import type { JobLike, JobOutcome, ReportBatcher } from './batcher.js';
import { type Prepared, ReportRejected } from './prepare.js';

/**
 * What the ingest workers do with one job: a report (`checks`) or a bundle of reports
 * (`checks-bulk`, from `vulndb import`), handed to the batcher. Invalid reports fail without retry
 * (SPEC §3.7), and so does a bundle holding one. Transient failures are retried here with
 * exponential backoff from 1 s, whatever options the producer used, up to MAX_ATTEMPTS starts.
 */

const MAX_ATTEMPTS = 8;
const backoffMs = (attempt: number) => Math.min(1000 * 2 ** (attempt - 1), 5 * 60_000);

/** What a completed bundle job returns: how its reports went. */
interface BundleOutcome {
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

/** What the batcher needs of a BullMQ job. */
const jobLike = (job: Job): JobLike => ({
  id: job.id,
  data: job.data,
  attemptsStarted: job.attemptsStarted,
  attemptsMade: job.attemptsMade,
  enqueuedAt: job.timestamp,
});

/** Every report is checked before any is applied: an invalid one rejects the bundle whole. */
function prepareBundle(batcher: ReportBatcher, data: unknown): Exclude<Prepared, { kind: 'invalid' }>[] {
  const checked = checkBundle(data);
  if ('reason' in checked) throw new UnrecoverableError(checked.reason);
  const prepared: Exclude<Prepared, { kind: 'invalid' }>[] = [];
  for (const [i, report] of checked.bundle.reports.entries()) {
    const p = batcher.prepare(report);
    if (p.kind === 'invalid') {
      batcher.countReports('rejected', checked.bundle.reports.length);
      throw new UnrecoverableError(`reports[${i}]: ${p.reason}`);
    }
    prepared.push(p);
  }
  return prepared;
}

async function applyBundle(batcher: ReportBatcher, job: Job): Promise<BundleOutcome> {
  const prepared = prepareBundle(batcher, job.data);
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

/**
 * A job taken after the stop began goes back to waiting, untouched, for the next process (SPEC
 * §3.7). BullMQ stops fetching once its worker closes, except for a job that arrives during a
 * blocking wait begun before: that one it still moves to active and hands over. Jobs it took
 * before the stop (processedOn: when this process moved them to active) are held: they are applied.
 */
const takenAfter = (job: Job, stoppedAt: number | undefined): boolean =>
  stoppedAt !== undefined && (job.processedOn ?? Date.now()) >= stoppedAt;

async function handBack(job: Job, token: string | undefined, log: Logger): Promise<never> {
  await job.moveToWait(token);
  log.info('job taken while stopping: handed back to the queue', { jobId: job.id });
  throw new WaitingError();
}

/** The processors of the two ingest queues' jobs; `stoppedAt`: when the process began to stop (epoch ms), if it has. */
export function ingestProcessors(batcher: ReportBatcher, log: Logger, stoppedAt: () => number | undefined = () => undefined) {
  return {
    /** A job of the `checks` queue: one report. */
    check: async (job: Job, token?: string): Promise<JobOutcome> => {
      if (takenAfter(job, stoppedAt())) return handBack(job, token, log);
      try {
        return await batcher.submit(jobLike(job));
      } catch (err) {
        if (err instanceof ReportRejected) throw new UnrecoverableError(err.message);
        return retryLater(job, token, err);
      }
    },
    /** A job of the `checks-bulk` queue: a bundle of reports. */
    bundle: async (job: Job, token?: string): Promise<BundleOutcome> => {
      if (takenAfter(job, stoppedAt())) return handBack(job, token, log);
      try {
        return await applyBundle(batcher, job);
      } catch (err) {
        if (err instanceof UnrecoverableError) {
          log.warn('bundle rejected', { jobId: job.id, reason: err.message });
          throw err;
        }
        return retryLater(job, token, err);
      }
    },
  };
}
