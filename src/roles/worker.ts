import type { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { bumpAfterBatch } from '../cache/batch-versions.js';
import { within } from '../domain/deadline.js';
import { ReportBatcher } from '../ingest/batcher.js';
import { startIngestWorkers } from '../ingest/worker.js';
import type { Logger } from '../log.js';
import { startNotifications, type Notifications } from '../notifications/worker.js';
import { workerConnection } from '../queue/redis.js';
import type { RoleContext, Stoppable } from './context.js';

/**
 * Lets the worker finish its jobs, but not forever: after a Redis outage BullMQ's close can wait
 * on a connection that never answers. Unfinished jobs are then left to BullMQ's stalled-job
 * recovery (they are retried, and ingestion is idempotent).
 */
async function closeWorker(worker: Worker, log: Logger, graceMs = 30_000): Promise<void> {
  const timedOut = await within(
    worker.close().then(() => false),
    graceMs,
    () => true,
  );
  if (timedOut) {
    log.warn('the worker did not stop in time; closing it without waiting for its jobs', { graceMs });
    await within(worker.close(true), 2000, () => undefined);
  }
}

/** The worker role: the batcher and the BullMQ workers that feed it, on a connection of their own. */
function startIngest(s: RoleContext, notify?: Notifications['notify']): { batcher: ReportBatcher; workers: Worker[]; connection: Redis } {
  const { config, log } = s;
  const batcher = new ReportBatcher({
    // Its statements go first to the embedded engine, which API requests share (README, Design).
    store: s.store.prioritized(),
    locks: s.locks,
    batchSize: config.ingest.batchSize,
    waitMs: config.ingest.batchWaitMs,
    commitIntervalMs: config.ingest.commitIntervalMs,
    concurrency: config.ingest.concurrency,
    maxEventAgeDays: config.ingest.maxEventAgeDays,
    log: log.child({ component: 'ingest' }),
    totals: s.totals,
    onCommitted: (result, batch) => bumpAfterBatch({ store: s.store.prioritized(), dataVersion: s.dataVersion, log }, result, batch),
    ...(notify ? { notify } : {}),
    ...(s.opts.faults ? { faults: s.opts.faults } : {}),
  });
  const connection = workerConnection(config.redisUrl);
  const workers = startIngestWorkers({
    connection,
    names: s.names,
    batcher,
    reportsInFlight: config.ingest.batchSize * config.ingest.concurrency,
    jobs: config.jobs,
    log: log.child({ component: 'worker' }),
  });
  log.info('ingest worker started', {
    queues: workers.map((w) => w.name),
    batchSize: config.ingest.batchSize,
    commitIntervalMs: config.ingest.commitIntervalMs,
    concurrency: config.ingest.concurrency,
    jobLockMs: config.jobs.lockMs,
    maxStalls: config.jobs.maxStalls,
  });
  // A process that died between a batch and its rewrite left the totals behind.
  void s.totals.request();
  return { batcher, workers, connection };
}

/**
 * The worker role: ingestion and, on a connection apart from the ingest workers', the webhooks'
 * deliveries and periodic check (SPEC §9.1). Stopping finishes the jobs and batches in flight
 * first, so that their last events are enqueued before the notifications stop.
 */
export function startWorkerRole(s: RoleContext): Stoppable & { batcher: ReportBatcher; workers: Worker[] } {
  const { config, log } = s;
  const notifyConnection = workerConnection(config.redisUrl);
  const notifications = startNotifications({
    store: s.store,
    redis: s.redis,
    connection: notifyConnection,
    names: s.names,
    log: log.child({ component: 'notifications' }),
    slaPolicy: config.slaPolicy,
    options: s.opts.notifications,
  });
  const ingest = startIngest(s, notifications.notify);
  const stop = async () => {
    await Promise.all(ingest.workers.map((w) => closeWorker(w, log)));
    await ingest.batcher.drain();
    await notifications.close();
    await Promise.allSettled([ingest.connection.quit(), notifyConnection.quit()]);
  };
  return { batcher: ingest.batcher, workers: ingest.workers, stop };
}
