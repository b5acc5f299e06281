import type { Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { DataVersion } from './cache/data-version.js';
import { Suppression } from './decisions/suppression.js';
import { packageVersion } from './version.js';
import type { Config } from './config.js';
import { closeServer } from './http/servers.js';
import type { ReportBatcher } from './ingest/batcher.js';
import { TotalsRewriter } from './ingest/totals.js';
import { CommitGate } from './locks/commit-gate.js';
import { SharedCommitGate } from './locks/shared-gate.js';
import { TargetLocks, type Locks } from './locks/target-locks.js';
import type { Logger } from './log.js';
import { notificationsQueue } from './notifications/emit.js';
import { QUEUE_BOARD_PATH, startAdmin } from './admin/server.js';
import { ServiceMetrics } from './observability/metrics.js';
import { bundlesQueue, checksQueue } from './queue/producer.js';
import { defaultRedisNames, requestConnection, whenReady, type RedisNames } from './queue/redis.js';
import { startApiRole } from './roles/apis.js';
import type { RoleContext, ServiceOptions } from './roles/context.js';

export type { ServiceOptions };
import { StopDeadline } from './roles/stop-deadline.js';
import { startWorkerRole } from './roles/worker.js';
import { gatedStore } from './storage/gated-store.js';
import { openStore, ownsItsData, type Store, storeDescription } from './storage/gateway.js';
import { migrate } from './storage/migrate.js';

/**
 * Composition root: opens the store, applies migrations and starts the requested roles — the two
 * HTTP APIs (src/roles/apis.ts) and/or the worker (src/roles/worker.ts) — and shuts them down
 * (SPEC §3.7): take no request or job from then on, answer the requests and commit the batches in
 * flight, then close Redis and ClickHouse, each step bounded by SHUTDOWN_TIMEOUT_MS.
 */

/**
 * What close() may take of SHUTDOWN_TIMEOUT_MS: the rest is left for cutting what did not finish
 * and exiting before the process's hard deadline (src/cli/serve.ts) ends it.
 */
const stopBudgetMs = (timeoutMs: number) => timeoutMs - Math.min(2000, timeoutMs / 5);

export interface Service {
  store: Store;
  /** What the process knows of triage decisions (SPEC §12.3): readers built beside the service share it. */
  suppression: Suppression;
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

async function openMigratedStore(config: Config, log: Logger, metrics: ServiceMetrics): Promise<Store> {
  // The configured limit, also when a caller swapped config.store (tests open fresh databases).
  const store = await openStore(
    { ...config.store, queryTimeoutMs: config.queryTimeoutMs },
    log.child({ component: 'clickhouse' }),
    metrics,
  );
  await migrate(store, log);
  log.info('store ready', storeDescription(store, config.store.embeddedPath));
  return store;
}

/** What every role of the process shares: the store behind the backup gate, Redis, locks, totals, the data version. */
async function sharedContext(config: Config, opts: ServiceOptions): Promise<{ shared: RoleContext; gateConnection?: Redis | undefined }> {
  const { log } = opts;
  const names = opts.names ?? defaultRedisNames;
  // The process's Prometheus registry and collectors: one per service, passed to what counts.
  const metrics = new ServiceMetrics();
  const opened = await openMigratedStore(config, log, metrics);
  // Closed while a snapshot is taken (src/backup): every write of the process passes it. Against a
  // server, other processes write too and `vulndb backup` closes it from yet another: it lives in
  // Redis, on a connection that fails fast like the request paths' (a write refused while Redis is
  // away answers 503 or retries its job, rather than stalling).
  const gateConnection = ownsItsData(opened) ? undefined : requestConnection(config.redisUrl);
  const gate = gateConnection ? new SharedCommitGate(gateConnection, names, log.child({ component: 'commit-gate' })) : new CommitGate();
  const store = gatedStore(opened, gate);
  const redis = requestConnection(config.redisUrl);
  if (!(await whenReady(redis))) log.warn('Redis is not answering yet; queueing and caching wait for it', { url: config.redisUrl });
  // A dead holder's targets come free when its jobs do (JOB_LOCK_MS), not 30 s later.
  const locks = new TargetLocks(redis, names, config.jobs.lockMs);
  const suppression = new Suppression(store);
  await suppression.dropLeftovers();
  const shared: RoleContext = {
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
    // Every change it is told of changes which findings decisions suppress (a false positive lapses).
    dataVersion: new DataVersion(redis, names, log.child({ component: 'cache' }), () => suppression.changed()),
    suppression,
    gate,
    metrics,
  };
  return { shared, gateConnection };
}

/** Every process, whatever its roles, can be watched and probed: the admin listener and the queues its board shows. */
async function startAdminListener(shared: RoleContext, queue: Queue | undefined) {
  const { config, store, redis, names, log, gate, metrics } = shared;
  const boardQueues = [queue ?? checksQueue(redis, names), bundlesQueue(redis, names), notificationsQueue(redis, names)];
  metrics.recordBuildInfo({ version: packageVersion(), commit: config.commit });
  // Embedded mode: the process owning the data folder takes snapshots. Behind ADMIN_TOKEN, when set,
  // like every admin route but the probes (src/admin/access.ts).
  const backup = { store, gate, log: log.child({ component: 'backup' }) };
  const admin = await startAdmin(
    { store, redis, queues: boardQueues, log, metrics, token: config.admin.token, ...(ownsItsData(store) ? { backup } : {}) },
    config.admin.port,
    config.admin.host,
  );
  log.info('admin listening', { metrics: `${admin.url}/metrics`, ready: `${admin.url}/readyz`, queues: `${admin.url}${QUEUE_BOARD_PATH}` });
  return { admin, boardQueues };
}

export async function startService(config: Config, opts: ServiceOptions): Promise<Service> {
  const { shared, gateConnection } = await sharedContext(config, opts);
  const { log, store, redis, names } = shared;
  const worker = opts.worker ? startWorkerRole(shared) : undefined;
  const queue = opts.api ? checksQueue(redis, names) : undefined;
  const apis = queue ? await startApiRole(shared, queue) : undefined;
  if (apis) log.info('APIs listening', { database: apis.dbApiUrl, metrics: apis.metricsApiUrl });
  const { admin, boardQueues } = await startAdminListener(shared, queue);

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      const deadline = new StopDeadline(stopBudgetMs(config.shutdownTimeoutMs), log);
      // Each begins by stopping its intake, synchronously: nothing is taken once close() is called.
      const stopped = [apis?.stop(deadline), worker?.stop(deadline), closeServer(admin.server)];
      log.info('shutting down', { timeoutMs: config.shutdownTimeoutMs });
      await Promise.all(stopped.slice(0, 2));
      if (!(await deadline.bound('answering the admin requests in flight', stopped[2]!))) admin.server.closeAllConnections();
      // No more retries of a failed rewrite: the process is going away.
      shared.totals.close();
      await deadline.bound('closing the queues', Promise.all(boardQueues.map((q) => q.close())));
      await deadline.bound('closing Redis', Promise.all([redis.quit(), gateConnection?.quit()]));
      redis.disconnect();
      gateConnection?.disconnect();
      await deadline.bound('closing the store', store.close());
      log.info('stopped');
    })());

  return {
    store,
    suppression: shared.suppression,
    queue,
    batcher: worker?.batcher,
    workers: worker?.workers ?? [],
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
