import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { CHECK_BUNDLES_QUEUE, CHECKS_QUEUE } from '../queue/contract.js';
import type { RedisNames } from '../queue/redis.js';
import { CliError, EXIT } from './exit.js';

/**
 * The failed jobs of `vulndb jobs` (src/cli/jobs.ts), listed and re-driven. Failed jobs are kept 7
 * days within the latest 100,000 per queue (checkJobOptions).
 *
 * A re-driven job keeps its attempt counts: the worker then applies its report in recovery mode
 * (an earlier attempt may have written part of it) and, as its transient retries were spent,
 * fails it again at once if it fails again.
 */

export const INGEST_QUEUES = [CHECKS_QUEUE, CHECK_BUNDLES_QUEUE];
/** Targets shown for a bundle. */
const BUNDLE_TARGETS_SHOWN = 3;

export interface FailedJob {
  queue: string;
  id: string;
  /** The failure reason the worker gave. */
  reason: string;
  /** When it failed (BullMQ finishedOn), RFC 3339. */
  failed_at: string | null;
  /** Times the job was started (each retry and each return after a stall counts). */
  attempts: number;
  attempts_made: number;
  /** A report's target and check, when the data is a report. */
  target?: string;
  check_id?: string;
  /** A bundle's number of reports and its first targets. */
  reports?: number;
  targets?: string[];
  /** A webhook delivery's subscription and event (`--queue notifications`). */
  webhook?: string;
  event?: string;
}

export interface FailedList {
  /** Failed jobs held by each queue. */
  failed: Record<string, number>;
  /** The newest `limit` of them, newest first. */
  jobs: FailedJob[];
}

/** A job that cannot be re-driven (unknown, not failed, or failed in several queues). */
export class JobNotRetried extends CliError {
  override name = 'JobNotRetried';
}

async function openQueues<T>(connection: Redis, names: RedisNames, queues: string[], use: (qs: Queue[]) => Promise<T>): Promise<T> {
  const { Queue } = await import('bullmq');
  const opened = queues.map((name) => {
    const queue = new Queue(name, { connection, prefix: names.queuePrefix, skipWaitingForReady: true });
    queue.on('error', () => {}); // failures surface where a command fails
    return queue;
  });
  try {
    return await use(opened);
  } finally {
    await Promise.all(opened.map((q) => q.close().catch(() => undefined)));
  }
}

const text = (v: unknown) => (typeof v === 'string' ? v : undefined);

/** What a job's data tells about its report(s): a report's target and check, a bundle's size and targets. */
function describeData(data: unknown): Pick<FailedJob, 'target' | 'check_id' | 'reports' | 'targets' | 'webhook' | 'event'> {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return {};
  const d = data as Record<string, unknown>;
  if (Array.isArray(d.reports)) {
    const targets = d.reports
      .map((r) => (typeof r === 'object' && r !== null ? text((r as Record<string, unknown>).target) : undefined))
      .filter((t): t is string => t !== undefined);
    return { reports: d.reports.length, targets: [...new Set(targets)].slice(0, BUNDLE_TARGETS_SHOWN) };
  }
  if (text(d.webhookId) !== undefined) return { webhook: text(d.webhookId)!, event: `${text(d.type) ?? '?'} ${text(d.eventId) ?? '?'}` };
  const out: Pick<FailedJob, 'target' | 'check_id'> = {};
  if (text(d.target) !== undefined) out.target = text(d.target)!;
  if (text(d.check_id) !== undefined) out.check_id = text(d.check_id)!;
  return out;
}

export async function listFailed(
  connection: Redis,
  names: RedisNames,
  opts: { queues?: string[]; limit?: number } = {},
): Promise<FailedList> {
  const queues = opts.queues ?? INGEST_QUEUES;
  const limit = opts.limit ?? 50;
  return openQueues(connection, names, queues, async (qs) => {
    const failed: Record<string, number> = {};
    const jobs: FailedJob[] = [];
    for (const queue of qs) {
      failed[queue.name] = await queue.getFailedCount();
      // Newest first within each queue; the newest `limit` of all are among each queue's newest `limit`.
      for (const job of await queue.getFailed(0, limit - 1)) {
        if (!job) continue; // removed meanwhile
        jobs.push({
          queue: queue.name,
          id: String(job.id),
          reason: job.failedReason ?? '',
          failed_at: job.finishedOn ? new Date(job.finishedOn).toISOString() : null,
          attempts: job.attemptsStarted ?? 0,
          attempts_made: job.attemptsMade ?? 0,
          ...describeData(job.data),
        });
      }
    }
    jobs.sort(
      (a, b) => (b.failed_at ?? '').localeCompare(a.failed_at ?? '') || a.queue.localeCompare(b.queue) || Number(b.id) - Number(a.id),
    );
    return { failed, jobs: jobs.slice(0, limit) };
  });
}

/**
 * Re-drives one failed job (BullMQ `job.retry('failed')`) of the first queue holding a job with
 * that id. JobNotRetried when no queue has it, when it is not failed, or when it is failed in
 * several queues (exit code 2: say which with --queue).
 */
export async function retryJob(
  connection: Redis,
  names: RedisNames,
  id: string,
  queues: string[] = INGEST_QUEUES,
): Promise<{ queue: string; id: string }> {
  return openQueues(connection, names, queues, async (qs) => {
    const found: { queue: Queue; state: string; job: NonNullable<Awaited<ReturnType<Queue['getJob']>>> }[] = [];
    for (const queue of qs) {
      const job = await queue.getJob(id);
      if (job) found.push({ queue, job, state: await job.getState() });
    }
    const where = queues.join(', ');
    if (found.length === 0) throw new JobNotRetried(`no job ${id} in ${where} (failed jobs are kept 7 days)`);
    const failed = found.filter((f) => f.state === 'failed');
    if (failed.length > 1) {
      throw new JobNotRetried(
        `job ${id} failed in several queues (${failed.map((f) => f.queue.name).join(', ')}): choose one with --queue`,
        EXIT.usage,
      );
    }
    const chosen = failed[0];
    if (!chosen) {
      throw new JobNotRetried(
        `job ${id} is not failed (${found.map((f) => `${f.queue.name}: ${f.state}`).join(', ')}): only failed jobs can be re-driven`,
      );
    }
    await chosen.job.retry('failed', REDRIVE);
    return { queue: chosen.queue.name, id };
  });
}

/**
 * Re-drives every job that had failed when called (BullMQ `retryJobs`), per queue; returns how many
 * each queue re-drove (failed jobs counted before and after, up to the instant of the call).
 */
export async function retryAll(connection: Redis, names: RedisNames, queues: string[] = INGEST_QUEUES): Promise<Record<string, number>> {
  return openQueues(connection, names, queues, async (qs) => {
    const retried: Record<string, number> = {};
    for (const queue of qs) {
      // The failed set is scored by finishedOn: jobs failing from now on are left for later.
      const until = Date.now();
      let count = 0;
      // A page at a time, oldest first, each with a fresh series of transient retries (REDRIVE).
      for (;;) {
        const ids = await connection.zrangebyscore(queue.keys.failed!, 0, until, 'LIMIT', 0, 500);
        if (ids.length === 0) break;
        for (const id of ids) {
          const job = await queue.getJob(id);
          if (!job) {
            await connection.zrem(queue.keys.failed!, id); // an id whose job data is gone: nothing to re-drive
            continue;
          }
          await job.retry('failed', REDRIVE);
          count += 1;
        }
      }
      retried[queue.name] = count;
    }
    return retried;
  });
}

/**
 * A re-driven job starts a new series of transient retries (its starts are counted from zero); the
 * worker still applies it in recovery mode, since it has failed before (attemptsMade > 0).
 */
const REDRIVE = { resetAttemptsStarted: true } as const;
