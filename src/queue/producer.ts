import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { CHECKS_QUEUE, checkJobOptions } from './contract.js';
import type { RedisNames } from './redis.js';

/** Adds reports to the `checks` queue (POST /checks, `vulndb import`, the demo). */

export class QueueUnavailable extends Error {
  constructor(cause: unknown) {
    super(`the checks queue is unavailable: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'QueueUnavailable';
  }
}

export function checksQueue(connection: Redis, names: RedisNames): Queue {
  const queue = new Queue(CHECKS_QUEUE, { connection, prefix: names.queuePrefix, skipWaitingForReady: true });
  // Connection trouble surfaces where a job is added (503 / a failed import); keep it off stderr.
  queue.on('error', () => {});
  return queue;
}

async function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer from Redis within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export async function enqueueReport(queue: Queue, report: unknown, timeoutMs = 5000): Promise<string> {
  try {
    const job = await withTimeout(queue.add('report', report, checkJobOptions), timeoutMs);
    return String(job.id);
  } catch (err) {
    throw new QueueUnavailable(err);
  }
}

export async function enqueueReports(queue: Queue, reports: unknown[], timeoutMs = 30_000): Promise<string[]> {
  try {
    const jobs = await withTimeout(
      queue.addBulk(reports.map((data) => ({ name: 'report', data, opts: checkJobOptions }))),
      timeoutMs,
    );
    return jobs.map((j) => String(j.id));
  } catch (err) {
    throw new QueueUnavailable(err);
  }
}
