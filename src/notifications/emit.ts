import { hash } from 'node:crypto';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { dispatchJobOptions, NOTIFICATIONS_QUEUE, type DispatchJob } from '../queue/contract.js';
import type { RedisNames } from '../queue/redis.js';
import type { NotificationEvent } from './events.js';

/**
 * Emission: whoever learns of a change (a committed batch, the periodic check, a decision) hands
 * its events to `enqueueEvents` — one Redis call, whatever the number of events and subscriptions;
 * the `notifications` worker expands them into deliveries (src/notifications/dispatch.ts).
 */

export type { NotificationEvent } from './events.js';
export { decisionEvent } from './events.js';

/** The queue emitters add to (same BullMQ prefix as the ingest queues, so `vulndb jobs` finds it). */
export function notificationsQueue(connection: Redis, names: RedisNames): Queue {
  const queue = new Queue(NOTIFICATIONS_QUEUE, { connection, prefix: names.queuePrefix, skipWaitingForReady: true });
  queue.on('error', () => {}); // reported where an add fails
  return queue;
}

/**
 * The same events from the same source (a retried batch: `source`, its reports) make the same
 * dispatch job: dropped while it is kept. Without the source, two recoveries of the same target and
 * family — a job retried, and later another — would make the same job, and the second be dropped.
 */
function dispatchId(job: DispatchJob, source: string): string {
  const ids = job.events.map((e) => e.id).sort();
  const pairs = (job.describe ?? []).map((p) => `${p.targetId}/${p.familyId}`).sort();
  return `dispatch_${hash('sha1', JSON.stringify([ids, pairs, source]), 'hex')}`;
}

/**
 * Adds one dispatch job; resolves once Redis holds it (the caller may then treat the events as
 * emitted) and rejects after `timeoutMs` without an answer. Nothing to send: no call.
 */
export async function enqueueEvents(
  queue: Queue,
  events: NotificationEvent[],
  opts: { describe?: DispatchJob['describe']; timeoutMs?: number; source?: string } = {},
): Promise<void> {
  const job: DispatchJob = { events, describe: opts.describe ?? [] };
  if (job.events.length === 0 && job.describe!.length === 0) return;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer from Redis within ${opts.timeoutMs ?? 5000} ms`)), opts.timeoutMs ?? 5000);
  });
  try {
    await Promise.race([queue.add('dispatch', job, { ...dispatchJobOptions, jobId: dispatchId(job, opts.source ?? '') }), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
