import { type Job, type Queue, UnrecoverableError, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { nowSeconds } from '../domain/time.js';
import type { Logger } from '../log.js';
import { deliveryJobSchema, NOTIFICATIONS_QUEUE } from '../queue/contract.js';
import type { RedisNames } from '../queue/redis.js';
import type { Store } from '../storage/gateway.js';
import { batchNotifier } from './batch-events.js';
import { decisionExpiries } from './decision-expiries.js';
import { createDeliverer, type Deliverer, DELIVERY_TIMEOUT_MS } from './deliver.js';
import { dispatch, type DeliveryTuning } from './dispatch.js';
import { notificationsQueue } from './emit.js';
import { startPeriodicChecks, type PeriodicCheck } from './periodic.js';
import type { SlaPolicy } from '../sla/policy.js';
import { slaBreaches } from './sla-breaches.js';
import { findSubscription, listSubscriptions, type Subscription } from './subscriptions.js';
import { DestinationRefused, type Resolver, systemResolver } from './url-policy.js';
import type { ServiceMetrics } from '../observability/metrics.js';
import type { DeliveryJob } from '../queue/contract.js';

/**
 * The notifications side of the worker role (`serve`, `serve worker`): the `notifications` queue's
 * worker (dispatch jobs and HTTP deliveries, with their own connection and concurrency, never in
 * the ingest worker's path), the periodic check, and the hook the batcher calls after each commit.
 */

export interface NotificationsOptions {
  /** Deliveries (and dispatches) in flight at once. */
  concurrency?: number;
  delivery?: DeliveryTuning;
  timeoutMs?: number;
  checkIntervalMs?: number;
  /** Epoch seconds of the periodic check; tests move it. */
  now?: () => number;
  /** Further periodic checks, run with the SLA breaches and the decision expiries. */
  checks?: PeriodicCheck[];
  /** How deliveries resolve host names; tests inject one (the checks on its answers stay real). */
  resolve?: Resolver;
}

export interface Notifications {
  /** The batcher's `notify` hook. */
  notify: ReturnType<typeof batchNotifier>;
  worker: Worker;
  close(): Promise<void>;
}

/**
 * Subscriptions change rarely and deliveries are many: each process reads them all at most every
 * SUBSCRIPTIONS_TTL_MS. An id missing from that read (a subscription made since) is looked up on
 * its own; one missing there is deleted for good (ids are never reused), and remembered as such.
 */
const SUBSCRIPTIONS_TTL_MS = 2000;

function subscriptionLookup(store: Store) {
  let cached: { at: number; byId: Promise<Map<string, Subscription>> } | undefined;
  const deleted = new Set<string>();
  const all = () => {
    if (cached && Date.now() - cached.at <= SUBSCRIPTIONS_TTL_MS) return cached.byId;
    const entry = { at: Date.now(), byId: listSubscriptions(store).then((subs) => new Map(subs.map((s) => [s.id, s]))) };
    entry.byId.catch(() => {
      if (cached === entry) cached = undefined;
    });
    cached = entry;
    return entry.byId;
  };
  return async (id: string): Promise<Subscription | undefined> => {
    if (deleted.has(id)) return undefined;
    const found = (await all()).get(id) ?? (await findSubscription(store, id));
    if (!found) deleted.add(id);
    return found;
  };
}

type DeliveryMetrics = Pick<ServiceMetrics, 'countDelivery' | 'webhookDeliveryDuration'>;

/**
 * One attempt, counted by outcome. A refused destination fails the job for good (BullMQ's
 * UnrecoverableError): retrying would dial the same forbidden address.
 */
async function attempt(deliverer: Deliverer, s: Subscription, delivery: DeliveryJob, job: Job, metrics: DeliveryMetrics | undefined) {
  const stop = metrics?.webhookDeliveryDuration.startTimer();
  try {
    const result = await deliverer.deliver(s, delivery);
    metrics?.countDelivery('delivered');
    return result;
  } catch (err) {
    if (err instanceof DestinationRefused) {
      metrics?.countDelivery('refused');
      throw new UnrecoverableError(`delivery refused: ${err.message}`);
    }
    metrics?.countDelivery(job.attemptsMade + 1 >= (job.opts.attempts ?? 1) ? 'failed_final' : 'failed_retryable');
    throw err;
  } finally {
    stop?.();
  }
}

interface NotificationsDeps {
  store: Store;
  /** For enqueueing (fails fast while Redis is away). */
  redis: Redis;
  /** A blocking-capable connection of the notifications worker's own. */
  connection: Redis;
  names: RedisNames;
  log: Logger;
  slaPolicy?: SlaPolicy | undefined;
  /** WEBHOOK_ALLOW_PRIVATE: deliveries may reach non-public addresses. */
  allowPrivate: boolean;
  options?: NotificationsOptions | undefined;
  /** The process's collectors (the service's): deliveries by outcome and their times; none, not counted. */
  metrics?: DeliveryMetrics | undefined;
}

/** The `notifications` queue's worker: dispatch jobs become deliveries, deliveries are attempted. */
function startWorker(deps: NotificationsDeps, queue: Queue, deliverer: Deliverer): Worker {
  const opts = deps.options ?? {};
  const { log } = deps;
  const subscription = subscriptionLookup(deps.store);
  const handle = async (job: Job) => {
    if (job.name === 'dispatch') {
      return dispatch(
        { store: deps.store, queue, log, slaPolicy: deps.slaPolicy, ...(opts.delivery ? { delivery: opts.delivery } : {}) },
        job.data,
      );
    }
    const delivery = deliveryJobSchema.parse(job.data);
    const s = await subscription(delivery.webhookId);
    // Deleted since the event was dispatched: nothing to deliver to.
    if (!s) return { skipped: 'subscription deleted' };
    return attempt(deliverer, s, delivery, job, deps.metrics);
  };
  const worker = new Worker(NOTIFICATIONS_QUEUE, handle, {
    connection: deps.connection,
    prefix: deps.names.queuePrefix,
    concurrency: opts.concurrency ?? 16,
  });
  worker.on('error', (err) => log.warn('notifications worker error', { err }));
  worker.on('failed', (job, err) => {
    if (!job) return;
    const final = err instanceof UnrecoverableError || job.attemptsMade >= (job.opts.attempts ?? 1);
    log[final ? 'warn' : 'debug'](final ? 'delivery failed for good (kept as failed)' : 'delivery failed; retrying', {
      job: job.id,
      attempts: job.attemptsMade,
      reason: err.message,
    });
  });
  return worker;
}

export function startNotifications(deps: NotificationsDeps): Notifications {
  const opts = deps.options ?? {};
  const deliverer = createDeliverer(
    { allowPrivate: deps.allowPrivate, resolve: opts.resolve ?? systemResolver },
    opts.timeoutMs ?? DELIVERY_TIMEOUT_MS,
  );
  const queue = notificationsQueue(deps.redis, deps.names);
  const worker = startWorker(deps, queue, deliverer);

  const checks: PeriodicCheck[] = [(window) => decisionExpiries(deps.store, window), ...(opts.checks ?? [])];
  const policy = deps.slaPolicy;
  if (policy) checks.push((window) => slaBreaches(deps.store, policy, window));
  const periodic = startPeriodicChecks({
    redis: deps.redis,
    names: deps.names,
    queue,
    log: deps.log,
    checks,
    intervalMs: opts.checkIntervalMs ?? 60_000,
    now: opts.now ?? nowSeconds,
  });

  return {
    notify: batchNotifier(queue),
    worker,
    close: async () => {
      await periodic.stop();
      // In-flight deliveries end within their timeout.
      await worker.close();
      deliverer.close();
      await queue.close();
    },
  };
}
