import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { Redis } from 'ioredis';
import { expect } from 'vitest';
import { loadConfig, type Config } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { bundlesQueue, checksQueue } from '../../src/queue/producer.js';
import type { Queue } from 'bullmq';
import type { RedisNames } from '../../src/queue/redis.js';
import { startService, type Service, type ServiceOptions } from '../../src/service.js';
import { keepUnmerged, testDataDir, testStoreConfig } from './engine.js';
import { worked } from './reports.js';

/**
 * A real service for end-to-end tests: embedded engine on a fresh database, the Redis of REDIS_URL
 * (default 127.0.0.1:6379) under key prefixes of its own (removed on close), APIs on ephemeral
 * ports. A missing Redis fails the tests; nothing is skipped.
 */

/** The shared Redis of the tests: REDIS_URL when set (tests may read the environment), else the local one. */
export const REDIS_URL = process.env.REDIS_URL?.trim() || 'redis://127.0.0.1:6379';

export interface TestService extends Service {
  config: Config;
  /** The `checks-bulk` queue (bundles of reports). */
  bulk: Queue;
  db: (path: string, init?: RequestInit) => Promise<Response>;
  postJson: (path: string, body: unknown) => Promise<Response>;
  /** Resolves when every job added so far to either queue has finished (completed or failed). */
  settle: (timeoutMs?: number) => Promise<void>;
}

export async function startTestService(
  opts: Partial<Pick<ServiceOptions, 'api' | 'worker' | 'faults' | 'now' | 'notifications' | 'log'>> & {
    env?: Record<string, string>;
    /** An existing database of the test engine (a restored one) instead of a fresh one. */
    database?: string;
  } = {},
): Promise<TestService> {
  const id = randomUUID().slice(0, 8);
  const config = loadConfig({
    // Its own data folder: files a service writes there (e.g. a generated JWT secret) stay in the test's.
    DATA_DIR: path.join(testDataDir(), `service-${id}`),
    DB_API_PORT: '0',
    METRICS_API_PORT: '0',
    HOST: '127.0.0.1',
    REDIS_URL,
    INGEST_BATCH_WAIT_MS: '5',
    // Tests send reports one after another: no pacing unless a test asks for it (test/ingest-pacing.test.ts).
    INGEST_COMMIT_INTERVAL_MS: '0',
    ADMIN_PORT: '0',
    LOG_LEVEL: 'silent',
    // The webhook tests' receivers listen on loopback, which SPEC §9.1 refuses by default.
    WEBHOOK_ALLOW_PRIVATE: 'true',
    ...opts.env,
  });
  config.store = testStoreConfig(opts.database);
  const names: RedisNames = { queuePrefix: `bull-test-${id}`, keyPrefix: `vulndb-test-${id}` };
  const service = await startService(config, {
    api: opts.api ?? true,
    worker: opts.worker ?? true,
    log: opts.log ?? createLogger(config.logLevel),
    names,
    ...(opts.faults ? { faults: opts.faults } : {}),
    ...(opts.now ? { now: opts.now } : {}),
    ...(opts.notifications ? { notifications: opts.notifications } : {}),
  });
  await keepUnmerged(service.store);
  const queue = service.queue ?? checksQueue(service.redis, names);
  const bulk = bundlesQueue(service.redis, names);

  const db = (path: string, init?: RequestInit) => fetch(`${service.dbApiUrl}${path}`, init);
  const postJson = (path: string, body: unknown) =>
    db(path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });

  const settle = async (timeoutMs = 30_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const c = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'waiting-children');
      const b = await bulk.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
      if ([...Object.values(c), ...Object.values(b)].every((n) => n === 0)) return;
      if (Date.now() > deadline) throw new Error(`queues did not settle: ${JSON.stringify({ checks: c, bundles: b })}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  const close = async () => {
    await service.close();
    if (queue !== service.queue) await queue.close();
    await bulk.close();
    // The service's own Redis, which a test may have stopped: clean up what can be reached.
    const redis = new Redis(config.redisUrl, { maxRetriesPerRequest: 1, connectTimeout: 1000, retryStrategy: () => null });
    redis.on('error', () => {});
    try {
      for (const prefix of [names.queuePrefix, names.keyPrefix]) {
        const found = await redis.keys(`${prefix}:*`);
        if (found.length > 0) await redis.del(...found);
      }
    } catch {
      /* unreachable: nothing to clean there */
    }
    redis.disconnect();
  };

  return { ...service, queue, bulk, config, db, postJson, settle, close };
}

/** A GET of a JSON answer with what the response cache says about it (`X-Cache`). */
export async function fetchCached(url: string, init?: RequestInit) {
  const res = await fetch(url, init);
  const text = await res.text();
  return { status: res.status, cache: res.headers.get('x-cache'), type: res.headers.get('content-type'), text, body: JSON.parse(text) };
}

/**
 * SPEC §3.8's r1–r3 on www.example.com, associated with `team`, through the queue: one finding,
 * OPEN 2024-01-01 10:00 to FIXED 2024-01-03 10:00.
 */
export async function ingestWorkedFixed(svc: TestService, team: string): Promise<void> {
  await json(svc.postJson('/targets', { identifier: 'www.example.com', teams: [team] }), 201);
  for (const r of [worked.r1, worked.r2, worked.r3]) await json(svc.postJson('/checks', r), 202);
  await svc.settle();
}

/** Reads a JSON response and checks its status. */
export async function json(res: Response | Promise<Response>, status = 200): Promise<any> {
  const r = await res;
  const body = await r.text();
  expect({ status: r.status, body }).toMatchObject({ status });
  return body === '' ? undefined : JSON.parse(body);
}
