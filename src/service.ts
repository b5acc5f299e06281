import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { createDbApi } from './app.js';
import { answerClientErrors } from './http/client-errors.js';
import { openDbApiWarning } from './auth/db-api.js';
import { DataVersion } from './cache/data-version.js';
import type { Config } from './config.js';
import { within } from './domain/deadline.js';
import { ReportBatcher, type BatcherOptions } from './ingest/batcher.js';
import { TotalsRewriter } from './ingest/totals.js';
import { startIngestWorkers } from './ingest/worker.js';
import { notificationsQueue } from './notifications/emit.js';
import { startNotifications, type Notifications, type NotificationsOptions } from './notifications/worker.js';
import { TargetLocks, type Locks } from './locks/target-locks.js';
import type { Logger } from './log.js';
import { createMetricsApi } from './metrics/app.js';
import { nowSeconds } from './domain/time.js';
import { startDecisionEffects, type DecisionEffects } from './decisions/effects.js';
import { describeKeys, tokenKeys } from './metrics/keys.js';
import { bundlesQueue, checksQueue } from './queue/producer.js';
import { QUEUE_BOARD_PATH, startAdmin } from './observability/admin.js';
import { defaultRedisNames, requestConnection, whenReady, workerConnection, type RedisNames } from './queue/redis.js';
import { openStore, type Store } from './storage/gateway.js';
import { migrate } from './storage/migrate.js';

/**
 * Composition root: opens the store, applies migrations and starts the requested roles — the two
 * HTTP APIs and/or the ingest worker — and shuts them down in order: stop accepting HTTP, finish
 * in-flight jobs and batches, then close Redis and ClickHouse.
 */

export interface ServiceOptions {
  api: boolean;
  worker: boolean;
  log: Logger;
  /** Tests use their own Redis key prefixes. */
  names?: RedisNames;
  faults?: BatcherOptions['faults'];
  /** "now" in epoch seconds for the APIs; tests fix it. */
  now?: () => number;
  /** Webhook delivery knobs (tests shorten the backoff and the periodic check's interval). */
  notifications?: NotificationsOptions;
}

export interface Service {
  store: Store;
  queue: Queue | undefined;
  batcher: ReportBatcher | undefined;
  /** The ingest workers of the `checks` and `checks-bulk` queues (none without the worker role). */
  workers: Worker[];
  redis: Redis;
  names: RedisNames;
  /** Per-target locks shared by the ingest worker and POST /targets. */
  locks: Locks;
  /** The process's one rewriter of the findings lists' totals. */
  totals: TotalsRewriter;
  /** Where the APIs listen (actual ports when configured as 0). */
  dbApiUrl: string | undefined;
  metricsApiUrl: string | undefined;
  /** The admin listener (/metrics, /healthz, /readyz, /admin/queues). */
  adminUrl: string;
  close(): Promise<void>;
}

/**
 * What every role shares: the store, Redis, the target locks, the rewriter of the findings lists'
 * totals (batches and POST /targets) and the data version of cached answers.
 */
interface Shared {
  config: Config;
  opts: ServiceOptions;
  log: Logger;
  store: Store;
  redis: Redis;
  names: RedisNames;
  locks: Locks;
  totals: TotalsRewriter;
  dataVersion: DataVersion;
}

function listen(server: http.Server, port: number, host: string): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const addr = server.address() as AddressInfo;
      resolve(`http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${addr.port}`);
    });
  });
}

function closeServer(server: http.Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
}

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

async function openMigratedStore(config: Config, log: Logger): Promise<Store> {
  // The configured limit, also when a caller swapped config.store (tests open fresh databases).
  const store = await openStore({ ...config.store, queryTimeoutMs: config.queryTimeoutMs }, log.child({ component: 'clickhouse' }));
  await migrate(store, log);
  log.info('store ready', {
    mode: store.mode,
    database: store.database,
    ...(store.mode === 'embedded' ? { path: config.store.embeddedPath } : {}),
  });
  return store;
}

/** The worker role: the batcher and the BullMQ workers that feed it, on a connection of their own. */
function startIngest(s: Shared, notify?: Notifications['notify']): { batcher: ReportBatcher; workers: Worker[]; connection: Redis } {
  const { config, log } = s;
  const batcher = new ReportBatcher({
    // Its statements go first to the embedded engine, which API requests share (README, Design).
    store: s.store.prioritized(),
    locks: s.locks,
    batchSize: config.ingest.batchSize,
    waitMs: config.ingest.batchWaitMs,
    concurrency: config.ingest.concurrency,
    maxEventAgeDays: config.ingest.maxEventAgeDays,
    log: log.child({ component: 'ingest' }),
    totals: s.totals,
    onCommitted: () => s.dataVersion.bump('batch committed'),
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
    concurrency: config.ingest.concurrency,
    jobLockMs: config.jobs.lockMs,
    maxStalls: config.jobs.maxStalls,
  });
  // A process that died between a batch and its rewrite left the totals behind.
  void s.totals.request();
  return { batcher, workers, connection };
}

/** The API role: both Koa apps, on one port or two (SPEC §10). */
async function startApis(
  s: Shared,
  queue: Queue,
): Promise<{ servers: http.Server[]; dbApiUrl: string; metricsApiUrl: string; decisions: DecisionEffects }> {
  const { config, opts, log, store, redis, names } = s;
  const metricsLog = log.child({ api: 'metrics' });
  const tokens = tokenKeys(config.jwt, config.dataDir);
  describeKeys(tokens, config.dataDir, metricsLog);
  const openWarning = openDbApiWarning(config);
  if (openWarning) log.warn(openWarning);
  else if (config.dbApiAuth === 'jwt') log.info('database API: bearer tokens required (DB_API_AUTH=jwt)');
  const dbApi = createDbApi({
    store,
    queue,
    log: log.child({ api: 'database' }),
    maxReportBytes: config.maxReportBytes,
    pageSizeDefault: config.pageSizeDefault,
    pageSizeMax: config.pageSizeMax,
    locks: s.locks,
    totals: s.totals,
    cache: { redis, names },
    ...(opts.now ? { now: opts.now } : {}),
    // Team re-association changes every team-scoped answer: cached ones become stale.
    onTeamsChanged: () => s.dataVersion.bump('teams associated'),
    // SPEC §5.1: the metrics API's tokens, when DB_API_AUTH=jwt.
    auth: config.dbApiAuth === 'jwt' ? tokens : undefined,
    slaPolicy: config.slaPolicy,
  });
  // Decisions change statistics and lists: cached answers are refreshed, events emitted (SPEC §12.3).
  const decisions = startDecisionEffects({ store, redis, names, dataVersion: s.dataVersion, now: opts.now ?? nowSeconds, log: metricsLog });
  const metricsApi = createMetricsApi({
    store,
    log: metricsLog,
    keys: tokens,
    cache: { redis, names },
    ...(opts.now ? { now: opts.now } : {}),
    onDecision: decisions.onChange,
    slaPolicy: config.slaPolicy,
  });
  if (config.dbApiPort === config.metricsApiPort && config.dbApiPort !== 0) {
    // One port serves both route sets (SPEC §10).
    const db = dbApi.callback();
    const metrics = metricsApi.callback();
    const server = http.createServer((req, res) => (req.url?.startsWith('/api/v1') ? metrics(req, res) : db(req, res)));
    answerClientErrors(server, 'database');
    const url = await listen(server, config.dbApiPort, config.host);
    return { servers: [server], dbApiUrl: url, metricsApiUrl: url, decisions };
  }
  const dbServer = http.createServer(dbApi.callback());
  const metricsServer = http.createServer(metricsApi.callback());
  answerClientErrors(dbServer, 'database');
  answerClientErrors(metricsServer, 'metrics');
  const dbApiUrl = await listen(dbServer, config.dbApiPort, config.host);
  const metricsApiUrl = await listen(metricsServer, config.metricsApiPort, config.host);
  return { servers: [dbServer, metricsServer], dbApiUrl, metricsApiUrl, decisions };
}

export async function startService(config: Config, opts: ServiceOptions): Promise<Service> {
  const { log } = opts;
  const names = opts.names ?? defaultRedisNames;
  const store = await openMigratedStore(config, log);
  const redis = requestConnection(config.redisUrl);
  if (!(await whenReady(redis))) log.warn('Redis is not answering yet; queueing and caching wait for it', { url: config.redisUrl });
  // A dead holder's targets come free when its jobs do (JOB_LOCK_MS), not 30 s later.
  const locks = new TargetLocks(redis, names, config.jobs.lockMs);
  const shared: Shared = {
    config,
    opts,
    log,
    store,
    redis,
    names,
    locks,
    // Its statements go first, like the batches' (README, Design).
    totals: new TotalsRewriter(store.prioritized(), locks, log.child({ component: 'totals' })),
    // Cached answers are keyed by it; both the worker and POST /targets bump it.
    dataVersion: new DataVersion(redis, names, log.child({ component: 'cache' })),
  };

  // Webhooks (SPEC §9.1) belong to the worker role, on a connection apart from the ingest workers'.
  const notifyConnection = opts.worker ? workerConnection(config.redisUrl) : undefined;
  const notifications = notifyConnection
    ? startNotifications({
        store,
        redis,
        connection: notifyConnection,
        names,
        log: log.child({ component: 'notifications' }),
        slaPolicy: config.slaPolicy,
        options: opts.notifications,
      })
    : undefined;
  const ingest = opts.worker ? startIngest(shared, notifications?.notify) : undefined;
  const queue = opts.api ? checksQueue(redis, names) : undefined;
  const apis = queue ? await startApis(shared, queue) : undefined;
  if (apis) log.info('APIs listening', { database: apis.dbApiUrl, metrics: apis.metricsApiUrl });

  // Every process, whatever its roles, can be watched and probed.
  const boardQueues = [queue ?? checksQueue(redis, names), bundlesQueue(redis, names), notificationsQueue(redis, names)];
  const admin = await startAdmin({ store, redis, queues: boardQueues, log }, config.admin.port, config.admin.host);
  log.info('admin listening', { metrics: `${admin.url}/metrics`, ready: `${admin.url}/readyz`, queues: `${admin.url}${QUEUE_BOARD_PATH}` });

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      log.info('shutting down');
      await Promise.all((apis?.servers ?? []).map(closeServer));
      await apis?.decisions.close();
      if (ingest) {
        await Promise.all(ingest.workers.map((w) => closeWorker(w, log)));
        await ingest.batcher.drain();
      }
      // No more retries of a failed rewrite: the process is going away.
      shared.totals.close();
      // After the batches: their last events are enqueued by then.
      await notifications?.close();
      await closeServer(admin.server);
      await Promise.all(boardQueues.map((q) => q.close()));
      await Promise.allSettled([redis.quit(), ingest?.connection.quit(), notifyConnection?.quit()]);
      await store.close();
      log.info('stopped');
    })());

  return {
    store,
    queue,
    batcher: ingest?.batcher,
    workers: ingest?.workers ?? [],
    redis,
    names,
    locks: shared.locks,
    totals: shared.totals,
    dbApiUrl: apis?.dbApiUrl,
    metricsApiUrl: apis?.metricsApiUrl,
    adminUrl: admin.url,
    close,
  };
}
