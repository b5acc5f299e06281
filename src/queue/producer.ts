import { Job, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { within } from '../domain/deadline.js';
import { CHECK_BUNDLES_QUEUE, CHECKS_QUEUE, checkJobOptions, type Bundle } from './contract.js';
import type { RedisNames } from './redis.js';

/**
 * Adds reports to the `checks` queue (POST /checks, the demo) and bundles of reports to the
 * `checks-bulk` queue (`vulndb import`).
 */

export class QueueUnavailable extends Error {
  constructor(cause: unknown) {
    super(`the checks queue is unavailable: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'QueueUnavailable';
  }
}

function openQueue(name: string, connection: Redis, names: RedisNames): Queue {
  const queue = new Queue(name, { connection, prefix: names.queuePrefix, skipWaitingForReady: true });
  // Connection trouble surfaces where a job is added (503 / a failed import); keep it off stderr.
  queue.on('error', () => {});
  return queue;
}

export const checksQueue = (connection: Redis, names: RedisNames): Queue => openQueue(CHECKS_QUEUE, connection, names);

const noAnswer = (ms: number) => () => {
  throw new Error(`no answer from Redis within ${ms} ms`);
};

export async function enqueueReport(queue: Queue, report: unknown, timeoutMs = 5000): Promise<string> {
  try {
    const job = await within(queue.add('report', report, checkJobOptions), timeoutMs, noAnswer(timeoutMs));
    return String(job.id);
  } catch (err) {
    throw new QueueUnavailable(err);
  }
}

/**
 * Adds reports as ONE Redis transaction (MULTI … EXEC), so that they are all queued or none is
 * (SPEC §5.6, imports). BullMQ's `addBulk` sends a pipeline, which Redis applies command by command:
 * a connection lost half way leaves the first jobs queued. A transaction Redis refuses to start
 * (a command refused while queued, the connection lost before EXEC) applies nothing.
 */
export async function enqueueReportsAtomically(queue: Queue, reports: unknown[], timeoutMs = 5000): Promise<string[]> {
  try {
    return await within(addInOneTransaction(queue, 'report', reports), timeoutMs, noAnswer(timeoutMs));
  } catch (err) {
    throw new QueueUnavailable(err);
  }
}

async function addInOneTransaction(queue: Queue, name: string, data: unknown[]): Promise<string[]> {
  const multi = (await queue.backend.client).multi();
  for (const d of data) {
    // The same insert `addBulk` makes; its outcome is read from EXEC's answers below.
    queue.backend.addJobToTransaction(multi, new Job(queue, name, d, checkJobOptions).asJSON(), '').catch(() => {});
  }
  const answers = (await multi.exec()) ?? [];
  if (answers.length !== data.length) throw new Error('the transaction was discarded');
  const ids = answers.flatMap(([err, id]) => (err || typeof id !== 'string' ? [] : [id]));
  if (ids.length === data.length) return ids;
  // Redis ran the transaction but a script failed inside it (EXEC does not roll back): undo the rest.
  await Promise.allSettled(ids.map((id) => queue.remove(id)));
  throw answers.find(([err]) => err)?.[0] ?? new Error('a job was not added');
}

/** The queue of report bundles (`vulndb import`). */
export const bundlesQueue = (connection: Redis, names: RedisNames): Queue => openQueue(CHECK_BUNDLES_QUEUE, connection, names);

async function addJobs(queue: Queue, name: string, data: unknown[], timeoutMs: number): Promise<string[]> {
  try {
    const jobs = await within(queue.addBulk(data.map((d) => ({ name, data: d, opts: checkJobOptions }))), timeoutMs, noAnswer(timeoutMs));
    return jobs.map((j) => String(j.id));
  } catch (err) {
    throw new QueueUnavailable(err);
  }
}

export const enqueueBundles = (queue: Queue, bundles: Bundle[], timeoutMs = 30_000): Promise<string[]> =>
  addJobs(queue, 'reports', bundles, timeoutMs);

export const enqueueReports = (queue: Queue, reports: unknown[], timeoutMs = 30_000): Promise<string[]> =>
  addJobs(queue, 'report', reports, timeoutMs);
