import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReportBatcher } from '../src/ingest/batcher.js';
import { silentLogger } from '../src/log.js';
import { worked } from './support/reports.js';
import { bySeverity, fetchMetric, METRICS_SECRET, metricsToken } from './support/metrics.js';
import { startPrivateRedis, type PrivateRedis } from './support/private-redis.js';
import { fetchCached, json, startTestService, type TestService } from './support/service.js';
import { ownedStore } from './support/owned-store.js';

/**
 * SPEC §8 / issue 4: cache failures degrade to computing the answer (metrics, and the database
 * API's findings lists, which share the cache). A private redis-server is
 * killed under a running service; answers stay correct and prompt, and caching resumes when Redis
 * is back. (Its own file: the outage must not touch the shared Redis or other services.)
 */

const SECRET = METRICS_SECRET;
const NOW = Date.parse('2024-01-06T10:00:00Z') / 1000;
const TEAM_A = 'a3c5e7f9-1b2d-4f6a-8c0e-2b4d6f8a0c1e';

const token = metricsToken;
const ADMIN = token({ admin: true });
const MEMBER_A = token({ teams: [TEAM_A] });

const sev = bySeverity;

/**
 * A service on a private Redis with SPEC §3.8's r1–r4 applied, www.example.com in TEAM_A. No queue
 * worker: BullMQ workers can outlive a Redis outage at shutdown. The reports go through the same
 * ingestion code (the batcher `vulndb import --direct` uses).
 */
async function startWithWorkedHistory(redisUrl: string): Promise<TestService> {
  const svc = await startTestService({ worker: false, now: () => NOW, env: { JWT_SECRET: SECRET, REDIS_URL: redisUrl } });
  await json(svc.postJson('/targets', { identifier: 'www.example.com', teams: [TEAM_A] }), 201);
  const batcher = new ReportBatcher({
    store: svc.store,
    ...ownedStore(svc.store),
    batchSize: 10,
    waitMs: 5,
    concurrency: 1,
    maxEventAgeDays: 0,
    log: silentLogger,
  });
  for (const r of Object.values(worked)) expect(await batcher.submit({ data: r, attemptsStarted: 1 })).toEqual({ outcome: 'ingested' });
  await batcher.drain();
  return svc;
}

describe('metrics cache when Redis goes away (a private redis-server)', () => {
  let redisServer: PrivateRedis;
  let svc: TestService;
  const get = (path: string, bearer = ADMIN) => fetchMetric(svc.metricsApiUrl!, path, bearer);

  beforeAll(async () => {
    redisServer = await startPrivateRedis();
    svc = await startWithWorkedHistory(redisServer.url);
  });
  afterAll(async () => {
    // The service closes its queue and worker through Redis: bring it back if a test left it down.
    if (!redisServer.running()) redisServer = await startPrivateRedis({ port: redisServer.port });
    await svc.close();
    await redisServer.kill();
  });

  it('given Redis stalls (CLIENT PAUSE), when a metric is requested, then it is computed without waiting for Redis', async () => {
    const path = `teams/${TEAM_A}/stats/fixed`;
    const admin = new Redis(redisServer.url);
    await admin.client('PAUSE', 2000, 'ALL');
    const started = performance.now();
    const stalled = await get(path, MEMBER_A);
    expect(performance.now() - started).toBeLessThan(1000); // not the 2 s pause
    expect(stalled).toMatchObject({ status: 200, cache: 'BYPASS', body: { fixed_issues: sev() } });
    await admin.quit(); // returns when the pause is over
  });

  it('given Redis is killed after a hit, when the metric is requested again, then it still answers 200 with the same body, promptly', async () => {
    const path = `teams/${TEAM_A}/stats/exposure/current`;
    const miss = await get(path, MEMBER_A);
    expect(miss).toMatchObject({ status: 200, cache: 'MISS', body: { current_exposure: { percentile_50: 24, mean: 24 } } });
    const hit = await get(path, MEMBER_A);
    expect(hit).toMatchObject({ status: 200, cache: 'HIT' });

    await redisServer.kill();

    for (let i = 0; i < 3; i += 1) {
      const started = performance.now();
      const down = await get(path, MEMBER_A);
      expect(performance.now() - started).toBeLessThan(1500);
      expect(down).toMatchObject({ status: 200, cache: 'BYPASS' });
      expect(down.text).toBe(miss.text);
    }
    expect(await get(`teams/${TEAM_A}/stats/mttr`, MEMBER_A)).toMatchObject({
      status: 200,
      cache: 'BYPASS',
      body: { mttr: { total: 48, ...sev({ medium: 48 }) } },
    });
    expect(await get('stats/assets')).toMatchObject({
      status: 200,
      cache: 'BYPASS',
      body: { assets: { total: 1, ...sev({ medium: 1 }) } },
    });
    // The database API's findings lists share the cache and its fallback.
    const started = performance.now();
    const findings = await fetchCached(`${svc.dbApiUrl}/findings?team=${TEAM_A}`);
    expect(performance.now() - started).toBeLessThan(1500);
    expect(findings).toMatchObject({
      status: 200,
      cache: 'BYPASS',
      body: { pagination: { total: 1 }, findings: [{ status: 'OPEN', target: { identifier: 'www.example.com' } }] },
    });
  });

  it('given Redis is down, when POST /targets re-associates teams, then it still succeeds and the metrics follow', async () => {
    await json(svc.postJson('/targets', { identifier: 'spare.example.com', teams: [TEAM_A] }), 201);
    expect(await get(`teams/${TEAM_A}/stats/assets`, MEMBER_A)).toMatchObject({
      status: 200,
      cache: 'BYPASS',
      body: { assets: { total: 2, ...sev({ medium: 1 }) } },
    });
  });

  it('given Redis comes back on the same port, when requests continue, then answers are cached again', async () => {
    redisServer = await startPrivateRedis({ port: redisServer.port });
    const path = `teams/${TEAM_A}/stats/open`;
    const deadline = Date.now() + 15_000;
    let first = await get(path, MEMBER_A);
    while (first.cache === 'BYPASS' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      first = await get(path, MEMBER_A);
    }
    expect(first).toMatchObject({ status: 200, cache: 'MISS', body: { open_issues: sev({ medium: 1 }) } });
    expect(await get(path, MEMBER_A)).toMatchObject({ status: 200, cache: 'HIT', body: { open_issues: sev({ medium: 1 }) } });
  });
});

describe('cached answers after an outage of a Redis that keeps its data (a private redis-server with a dump file)', () => {
  let dir: string;
  let redisServer: PrivateRedis;
  let svc: TestService;
  const TEAM_B = 'b7d9e1f3-5a7c-4e9b-8d1f-3a5c7e9b1d3f';
  const get = (path: string) => fetchMetric(svc.metricsApiUrl!, path, ADMIN);
  const findings = (path: string) => fetchCached(`${svc.dbApiUrl}${path}`);

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vulndb-redis-'));
    redisServer = await startPrivateRedis({ dir, persistence: 'rdb' });
    svc = await startWithWorkedHistory(redisServer.url);
  });
  afterAll(async () => {
    if (!redisServer.running()) redisServer = await startPrivateRedis({ port: redisServer.port, dir, persistence: 'rdb' });
    await svc.close();
    await redisServer.kill();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('given answers cached before the outage, when teams were associated during it, then they are not served after it', async () => {
    const path = `/findings?team=${TEAM_B}`;
    expect(await findings(path)).toMatchObject({ status: 200, cache: 'MISS', body: { findings: [] } });
    expect(await findings(path)).toMatchObject({ cache: 'HIT', body: { findings: [] } });
    expect(await get(`teams/${TEAM_B}/stats/assets`)).toMatchObject({ cache: 'MISS', body: { assets: { total: 0 } } });

    const admin = new Redis(redisServer.url);
    await admin.save(); // the entries and the data version survive the restart below
    await admin.quit();
    await redisServer.kill();

    // Redis is down: the association is stored, its version bump cannot be made.
    await json(svc.postJson('/targets', { identifier: 'www.example.com', teams: [TEAM_B] }), 201);
    expect(await findings(path)).toMatchObject({ cache: 'BYPASS', body: { findings: [{ target: { teams: [TEAM_A, TEAM_B] } }] } });

    redisServer = await startPrivateRedis({ port: redisServer.port, dir, persistence: 'rdb' });
    const deadline = Date.now() + 15_000;
    let after = await findings(path);
    while (after.cache === 'BYPASS' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      after = await findings(path);
    }
    expect(after).toMatchObject({
      status: 200,
      cache: 'MISS',
      body: { pagination: { total: 1 }, findings: [{ target: { teams: [TEAM_A, TEAM_B] } }] },
    });
    expect(await get(`teams/${TEAM_B}/stats/assets`)).toMatchObject({
      cache: 'MISS',
      body: { assets: { total: 1, ...sev({ medium: 1 }) } },
    });
  });
});
