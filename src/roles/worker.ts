import type { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { bumpAfterBatch } from '../cache/batch-versions.js';
import { ReportBatcher } from '../ingest/batcher.js';
import { startIngestWorkers } from '../ingest/worker.js';
import { startNotifications, type Notifications } from '../notifications/worker.js';
import { workerConnection } from '../queue/redis.js';
import type { RoleContext, Stoppable } from './context.js';
import type { StopDeadline } from './stop-deadline.js';

/** The worker role: the batcher and the BullMQ workers that feed it, on a connection of their own. */
function startIngest(
  s: RoleContext,
  stoppedAt: () => number | undefined,
  notify?: Notifications['notify'],
): { batcher: ReportBatcher; workers: Worker[]; connection: Redis } {
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
    gate: s.gate,
    metrics: s.metrics,
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
    stoppedAt,
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
 * deliveries and periodic check (SPEC §9.1). Stopping (SPEC §3.7) takes no job from the signal on
 * (every worker's close begins before the first await: BullMQ fetches nothing more once it has),
 * then commits the batches of the jobs held, so that their last events are enqueued before the
 * notifications stop. What is not done by the deadline is abandoned, its connections cut: those
 * jobs stay in Redis and come back to a worker once their locks lapse (ingestion is idempotent).
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
    allowPrivate: config.webhooks.allowPrivate,
    options: s.opts.notifications,
    metrics: s.metrics,
  });
  // Set as the stop begins, so that a job BullMQ still hands over then is handed back.
  const intake: { stoppedAt?: number } = {};
  const ingest = startIngest(s, () => intake.stoppedAt, notifications.notify);
  const stop = async (deadline: StopDeadline) => {
    intake.stoppedAt = Date.now();
    const held = Promise.all(ingest.workers.map((w) => w.close())).then(() => ingest.batcher.drain());
    // Deliveries wait in their queue for the next process.
    void notifications.worker.close().catch(() => undefined);
    await deadline.bound('committing the jobs held', held);
    await deadline.bound('closing the notifications', notifications.close());
    await deadline.bound('closing the worker connections', Promise.allSettled([ingest.connection.quit(), notifyConnection.quit()]));
    // A connection that did not answer QUIT (Redis down) would keep the process alive.
    ingest.connection.disconnect();
    notifyConnection.disconnect();
  };
  return { batcher: ingest.batcher, workers: ingest.workers, stop };
}
