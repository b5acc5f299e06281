import http from 'node:http';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { KoaAdapter } from '@bull-board/koa';
import Router from '@koa/router';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import Koa from 'koa';
import client from 'prom-client';
import { within } from '../domain/deadline.js';
import type { Logger } from '../log.js';
import { type BackupRouteDeps, mountBackupRoute } from '../backup/admin-routes.js';
import type { Store } from '../storage/gateway.js';
import { readOnlyQueueBoard, requireAdminToken } from './access.js';
import { dependencyGauges, type ServiceMetrics } from '../observability/metrics.js';

/**
 * The admin listener every process opens (ADMIN_PORT, default 9464, on ADMIN_HOST, default
 * 127.0.0.1): `/metrics` for Prometheus, `/healthz` (the process is alive), `/readyz` (the store
 * and Redis answer: a process that cannot do its work is taken out of rotation) and bull-board
 * under `/admin/queues` (waiting, failed and completed jobs; retry and removal with ADMIN_TOKEN).
 * Who may use which route is decided in one place, ./access.ts (SPEC §10.1); an ADMIN_HOST
 * beyond loopback without a token is refused by src/config.ts.
 */

export const QUEUE_BOARD_PATH = '/admin/queues';

export interface AdminDeps {
  store: Store;
  redis: Redis;
  /** The queues this process works with, shown by bull-board and counted in `vulndb_queue_jobs`. */
  queues: Queue[];
  log: Logger;
  /** ADMIN_TOKEN: required by every route but the probes; without it the queue board only reads. */
  token: string | undefined;
  /** The process's registry, served at /metrics with this listener's own gauges. */
  metrics: ServiceMetrics;
  /** POST /admin/backup (src/backup/admin-routes.ts); embedded mode only. */
  backup?: BackupRouteDeps;
}

/** Whether `probe` succeeds within `timeoutMs`. */
const answers = (probe: () => Promise<unknown>, timeoutMs = 2000): Promise<boolean> =>
  within(
    probe().then(
      () => true,
      () => false,
    ),
    timeoutMs,
    () => false,
  );

function createAdminApp(deps: AdminDeps): Koa {
  const app = new Koa();
  // Before every route, those added later included.
  app.use(requireAdminToken(deps.token));
  app.use(readOnlyQueueBoard(QUEUE_BOARD_PATH, deps.token));
  const router = new Router();
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  const probe = async () => {
    const [store, redis] = await Promise.all([
      answers(async () => {
        if (!(await deps.store.ping())) throw new Error('store does not answer');
      }),
      answers(() => deps.redis.ping()),
    ]);
    return { store, redis };
  };
  router.get('/readyz', async (ctx) => {
    const { store, redis } = await probe();
    ctx.status = store && redis ? 200 : 503;
    ctx.body = { status: store && redis ? 'ready' : 'unavailable', store: store ? 'ok' : 'down', redis: redis ? 'ok' : 'down' };
  });
  if (deps.backup) mountBackupRoute(router, deps.backup);
  const queueCounts = async () =>
    Promise.all(deps.queues.map(async (q) => ({ queue: q.name, counts: await q.getJobCounts('waiting', 'active', 'delayed', 'failed') })));
  const gauges = dependencyGauges(probe, queueCounts);
  router.get('/metrics', async (ctx) => {
    // The process's series and this listener's own, in one answer.
    const scraped = client.Registry.merge([deps.metrics.registry, gauges]);
    ctx.type = scraped.contentType;
    ctx.body = await scraped.metrics();
  });

  const board = new KoaAdapter();
  board.setBasePath(QUEUE_BOARD_PATH);
  // Its buttons hidden too, when the board may only read.
  const readOnlyMode = deps.token === undefined;
  createBullBoard({ queues: deps.queues.map((q) => new BullMQAdapter(q, { readOnlyMode })), serverAdapter: board });

  app.use(router.routes());
  app.use(router.allowedMethods());
  app.use(board.registerPlugin());
  return app;
}

/** Starts the admin listener; resolves to its URL. */
export async function startAdmin(deps: AdminDeps, port: number, host: string): Promise<{ url: string; server: http.Server }> {
  const server = http.createServer(createAdminApp(deps).callback());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const { port: actual } = server.address() as { port: number };
  return { url: `http://${host.includes(':') ? `[${host}]` : host}:${actual}`, server };
}
