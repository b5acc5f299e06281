import client from 'prom-client';
import { NOTIFICATIONS_QUEUE } from '../queue/contract.js';

/**
 * The service's Prometheus metrics (served by the admin listener, src/admin/server.ts):
 * prom-client's default process metrics plus the series below. One ServiceMetrics per process,
 * made by src/service.ts and handed to the code that counts (roles, apps, batcher, store) like the
 * response cache and the data version are; nothing here lives at module level.
 */

const REPORT_OUTCOMES = ['stored', 'duplicate', 'ignored', 'rejected', 'failed'] as const;
export type ReportOutcome = (typeof REPORT_OUTCOMES)[number];
const DELIVERY_OUTCOMES = ['delivered', 'failed_retryable', 'failed_final', 'refused'] as const;
export type DeliveryOutcome = (typeof DELIVERY_OUTCOMES)[number];
const STATEMENT_KINDS = ['query', 'fields', 'command', 'insert'] as const;

/** A registry with prom-client's default process metrics (CPU, memory, event loop, GC). */
function processRegistry(): client.Registry {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  return registry;
}

/** The process's registry and the collectors that count into it. */
export class ServiceMetrics {
  readonly registry = processRegistry();
  private readonly registers = [this.registry];
  readonly httpRequestDuration = new client.Histogram({
    name: 'vulndb_http_request_duration_seconds',
    help: 'HTTP requests by API, route pattern, method and status',
    labelNames: ['api', 'route', 'method', 'status'] as const,
    buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: this.registers,
  });
  private readonly ingestReports = new client.Counter({
    name: 'vulndb_ingest_reports_total',
    help: 'Reports by outcome: stored, duplicate, ignored (not FINISHED or too old), rejected (invalid), failed (refused by the store or out of retries)',
    labelNames: ['outcome'] as const,
    registers: this.registers,
  });
  readonly ingestBatchDuration = new client.Histogram({
    name: 'vulndb_ingest_batch_duration_seconds',
    help: 'Time to apply one committed batch of reports',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64],
    registers: this.registers,
  });
  readonly ingestLag = new client.Histogram({
    name: 'vulndb_ingest_lag_seconds',
    help: 'From a job entering the queue to the commit of its report',
    buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 900, 3600],
    registers: this.registers,
  });
  readonly cacheRequests = new client.Counter({
    name: 'vulndb_cache_requests_total',
    help: 'Response cache lookups: hit, miss (computed and stored), bypass (Redis slow or down: computed only)',
    labelNames: ['result'] as const,
    registers: this.registers,
  });
  readonly storeQueryDuration = new client.Histogram({
    name: 'vulndb_store_query_duration_seconds',
    help: 'ClickHouse statements by kind (query, fields, command, insert)',
    labelNames: ['kind'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: this.registers,
  });
  private readonly webhookDeliveries = new client.Counter({
    name: 'vulndb_webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome: delivered (2xx), failed_retryable (retried later), failed_final (out of attempts, kept as failed), refused (a destination WEBHOOK_ALLOW_PRIVATE forbids; not retried)',
    labelNames: ['outcome'] as const,
    registers: this.registers,
  });
  readonly webhookDeliveryDuration = new client.Histogram({
    name: 'vulndb_webhook_delivery_duration_seconds',
    help: 'One webhook delivery attempt, from the request to the answer (or the failure)',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15],
    registers: this.registers,
  });
  readonly storeErrors = new client.Counter({
    name: 'vulndb_store_errors_total',
    help: 'Store statements that failed, by kind (unreachable, engine errors, time limits; not the ones superseded by newer data)',
    labelNames: ['kind'] as const,
    registers: this.registers,
  });
  private readonly buildInfo = new client.Gauge({
    name: 'vulndb_build_info',
    help: 'Always 1: the version of vulndb, the Node.js version and the source commit (unknown unless VULNDB_COMMIT is set) that run',
    labelNames: ['version', 'node', 'commit'] as const,
    registers: this.registers,
  });

  constructor() {
    // Every outcome and kind is exported from the start, so rates and alerts see zeros rather than no data.
    for (const outcome of REPORT_OUTCOMES) this.ingestReports.inc({ outcome }, 0);
    for (const outcome of DELIVERY_OUTCOMES) this.webhookDeliveries.inc({ outcome }, 0);
    for (const kind of STATEMENT_KINDS) this.storeErrors.inc({ kind }, 0);
  }

  /** Counts reports by outcome. */
  countReports(outcome: ReportOutcome, n = 1): void {
    if (n > 0) this.ingestReports.inc({ outcome }, n);
  }

  /** Counts one delivery attempt by outcome. */
  countDelivery(outcome: DeliveryOutcome): void {
    this.webhookDeliveries.inc({ outcome });
  }

  /** Says which build runs (set once at start; dashboards and alerts join on it). */
  recordBuildInfo(build: { version: string; commit: string | undefined }): void {
    this.buildInfo.reset();
    this.buildInfo.set({ version: build.version, node: process.version, commit: build.commit ?? 'unknown' }, 1);
  }
}

/** Whether the store and Redis answer: the probe of /readyz, also run at each scrape. */
export type ReadinessProbe = () => Promise<{ store: boolean; redis: boolean }>;

/** Jobs per queue and state, read from Redis at each scrape. */
export type QueueCounts = () => Promise<{ queue: string; counts: Record<string, number> }[]>;
const QUEUE_STATES = ['waiting', 'active', 'delayed', 'failed'] as const;

/**
 * The gauges one admin listener reads from its own process's store, Redis and queues at each
 * scrape: a registry of their own, served beside the process's (each listener asks its own deps, so
 * two services in one process, as in tests, do not read each other's).
 */
export function dependencyGauges(probe: ReadinessProbe, queueCounts: QueueCounts): client.Registry {
  const own = new client.Registry();
  const registers = [own];
  new client.Gauge({
    name: 'vulndb_ready',
    help: '1 when the dependency answers the probe of /readyz at this scrape, 0 when not: store, redis',
    labelNames: ['dependency'] as const,
    registers,
    async collect() {
      const ready = await probe();
      this.set({ dependency: 'store' }, ready.store ? 1 : 0);
      this.set({ dependency: 'redis' }, ready.redis ? 1 : 0);
    },
  });
  new client.Gauge({
    name: 'vulndb_queue_jobs',
    help: 'Jobs per queue and state (waiting, active, delayed, failed)',
    labelNames: ['queue', 'state'] as const,
    registers,
    async collect() {
      this.reset();
      try {
        for (const { queue, counts } of await queueCounts()) {
          for (const state of QUEUE_STATES) this.set({ queue, state }, counts[state] ?? 0);
        }
      } catch {
        // Redis unreachable: no queue series in this scrape (readyz says why).
      }
    },
  });
  new client.Gauge({
    name: 'vulndb_webhook_delivery_backlog',
    help: 'Jobs of the notifications queue not yet taken: waiting plus delayed (retries waiting for their backoff)',
    registers,
    async collect() {
      try {
        const notifications = (await queueCounts()).find((q) => q.queue === NOTIFICATIONS_QUEUE);
        if (notifications) this.set((notifications.counts.waiting ?? 0) + (notifications.counts.delayed ?? 0));
      } catch {
        // Redis unreachable: the last value stays (readyz says why).
      }
    },
  });
  return own;
}
