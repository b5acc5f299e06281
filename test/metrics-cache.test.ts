import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../src/log.js';
import { DEFAULT_SLA_POLICY, parseSlaDays, slaVariant } from '../src/sla/policy.js';
import { ResponseCache } from '../src/cache/response-cache.js';
import { keys } from '../src/queue/redis.js';
import { report, V, worked } from './support/reports.js';
import { bySeverity, fetchMetric, METRICS_SECRET, metricsToken } from './support/metrics.js';
import { ingestWorkedFixed, json, REDIS_URL, startTestService, type TestService } from './support/service.js';

/**
 * The Redis read-through cache of metric responses: hits, invalidation by ingestion and by team
 * re-association, authorization before the cache, lifetimes (answers without Redis: see
 * metrics-cache-redis-down.test.ts).
 */

const SECRET = METRICS_SECRET;
const NOW = Date.parse('2024-01-06T10:00:00Z') / 1000;
const TEAM_A = 'a3c5e7f9-1b2d-4f6a-8c0e-2b4d6f8a0c1e';
const TEAM_B = 'b7d9e1f3-5a7c-4e9b-8d1f-3a5c7e9b1d3f';

const token = metricsToken;
const ADMIN = token({ admin: true });
const MEMBER_A = token({ teams: [TEAM_A] });

const sev = bySeverity;
const nowS = () => Math.floor(Date.now() / 1000);

describe('metrics cache on the shared Redis', () => {
  let svc: TestService;
  let redis: Redis;
  const get = (path: string, bearer = ADMIN) => fetchMetric(svc.metricsApiUrl!, path, bearer);
  const cacheKeys = (endpoint: string) => redis.keys(`${keys.cache(svc.names, 'metrics')}:*:${endpoint}:*`);

  beforeAll(async () => {
    svc = await startTestService({ now: () => NOW, env: { JWT_SECRET: SECRET } });
    redis = new Redis(REDIS_URL);
    await ingestWorkedFixed(svc, TEAM_A);
  });
  afterAll(async () => {
    await redis.quit();
    await svc.close();
  });

  it('given a first request, when the same request follows, then it is served from Redis with the same body', async () => {
    const first = await get(`teams/${TEAM_A}/stats/fixed`, MEMBER_A);
    expect(first).toMatchObject({ status: 200, cache: 'MISS', body: { fixed_issues: sev({ medium: 1 }) } });
    const second = await get(`teams/${TEAM_A}/stats/fixed`, MEMBER_A);
    expect(second).toMatchObject({ status: 200, cache: 'HIT' });
    expect(second.text).toBe(first.text);
    expect(second.type).toBe(first.type);
    expect(second.type).toMatch(/^application\/json/);
    expect(await cacheKeys('fixed')).toHaveLength(1);
  });

  it('given equal selections written differently, when requested, then they share one entry', async () => {
    expect((await get(`teams/${TEAM_A}/stats/open?labels=TLS,issue&minScore=1`, MEMBER_A)).cache).toBe('MISS');
    expect((await get(`teams/${TEAM_A}/stats/open?minScore=1.0&labels=issue,%20TLS,TLS&page=3`, MEMBER_A)).cache).toBe('HIT');
    expect((await get(`teams/${TEAM_A}/stats/open?labels=TLS&minScore=1`, MEMBER_A)).cache).toBe('MISS');
  });

  it('given one cached team answer, when another scope asks the same metric, then it is not served that answer', async () => {
    await get(`teams/${TEAM_A}/stats/mttr`);
    expect(await get(`teams/${TEAM_B}/stats/mttr`)).toMatchObject({ cache: 'MISS', body: { mttr: { total: 0, ...sev() } } });
    expect(await get(`stats/mttr?teams=${TEAM_B}`)).toMatchObject({ cache: 'MISS', body: { mttr: { total: 0, ...sev() } } });
    expect(await get('stats/mttr')).toMatchObject({ cache: 'MISS', body: { mttr: { total: 48, ...sev({ medium: 48 }) } } });
    expect((await get(`stats/mttr?teams=${TEAM_B}`)).cache).toBe('HIT');
  });

  it('given a cached answer, when callers without rights ask for it, then they get 401/403 and never the cached body', async () => {
    expect((await get(`teams/${TEAM_A}/stats/fixed`, MEMBER_A)).cache).toBe('HIT');
    const other = await get(`teams/${TEAM_A}/stats/fixed`, token({ teams: [TEAM_B] }));
    expect(other).toMatchObject({ status: 403, cache: null });
    const expired = await get(`teams/${TEAM_A}/stats/fixed`, token({ teams: [TEAM_A], exp: nowS() - 3600 }));
    expect(expired).toMatchObject({ status: 401, cache: null });
    expect((await get(`teams/${TEAM_A}/stats/fixed`, ADMIN)).cache).toBe('HIT');
  });

  it('given clock-dependent and data-only answers, when cached, then the former live at most 60 s and the latter longer', async () => {
    await get(`teams/${TEAM_A}/stats/exposure`);
    await get(`teams/${TEAM_A}/stats/exposure?atDate=2024-01-04`);
    const ttls = await Promise.all((await cacheKeys('exposure')).map((k) => redis.ttl(k)));
    expect(ttls.sort((a, b) => a - b)).toHaveLength(2);
    expect(ttls[0]).toBeGreaterThan(0);
    expect(ttls[0]).toBeLessThanOrEqual(60);
    expect(ttls[1]).toBeGreaterThan(60);
    expect(ttls[1]).toBeLessThanOrEqual(600);
  });

  it('given a cached answer, when a new report is ingested, then the next request reflects it', async () => {
    expect(await get(`teams/${TEAM_A}/stats/open`, MEMBER_A)).toMatchObject({ body: { open_issues: sev() } });
    expect((await get(`teams/${TEAM_A}/stats/open`, MEMBER_A)).cache).toBe('HIT');
    const before = Number(await redis.get(keys.dataVersion(svc.names)));
    await json(svc.postJson('/checks', worked.r4), 202); // F re-opens on 01-05
    await svc.settle();
    expect(Number(await redis.get(keys.dataVersion(svc.names)))).toBeGreaterThan(before);
    expect(await get(`teams/${TEAM_A}/stats/open`, MEMBER_A)).toMatchObject({ cache: 'MISS', body: { open_issues: sev({ medium: 1 }) } });
    expect(await get(`teams/${TEAM_A}/stats/fixed`, MEMBER_A)).toMatchObject({ cache: 'MISS', body: { fixed_issues: sev() } });
  });

  it('given a cached team answer, when POST /targets associates a target with the team, then the next request reflects it', async () => {
    const memberB = token({ teams: [TEAM_B] });
    await get(`teams/${TEAM_B}/stats/assets`, memberB);
    expect(await get(`teams/${TEAM_B}/stats/assets`, memberB)).toMatchObject({ cache: 'HIT', body: { assets: { total: 0, ...sev() } } });
    await json(svc.postJson('/targets', { identifier: 'www.example.com', teams: [TEAM_B] }), 201);
    expect(await get(`teams/${TEAM_B}/stats/assets`, memberB)).toMatchObject({
      cache: 'MISS',
      body: { assets: { total: 1, ...sev({ medium: 1 }) } },
    });
    expect(await get(`teams/${TEAM_B}/stats/open`, memberB)).toMatchObject({ body: { open_issues: sev({ medium: 1 }) } });
  });

  it('given a cached global answer, when another target appears through ingestion, then the global count follows', async () => {
    const first = await get('stats/assets');
    expect((await get('stats/assets')).cache).toBe('HIT');
    await json(
      svc.postJson(
        '/checks',
        report({ check_id: 'new-1', target: 'new.example.com', end_time: '2024-01-05 12:00:00', vulnerabilities: [{ ...V, score: 9.8 }] }),
      ),
      202,
    );
    await svc.settle();
    const after = await get('stats/assets');
    expect(after.cache).toBe('MISS');
    expect(after.body.assets.total).toBe(first.body.assets.total + 1);
    expect(after.body.assets.critical).toBe(first.body.assets.critical + 1);
  });
});

describe('metrics cache computations', () => {
  const names = { queuePrefix: `bull-test-${randomUUID().slice(0, 8)}`, keyPrefix: `vulndb-test-${randomUUID().slice(0, 8)}` };
  let redis: Redis;
  beforeAll(async () => {
    redis = new Redis(REDIS_URL);
    await redis.ping(); // ready: an unconnected client is a BYPASS
  });
  afterAll(async () => {
    const found = await redis.keys(`${names.keyPrefix}:*`);
    if (found.length > 0) await redis.del(...found);
    await redis.quit();
  });

  it('given identical requests arriving together, when none is cached, then the statistic is computed once for all', async () => {
    const cache = new ResponseCache('metrics', { redis, names }, silentLogger);
    let computed = 0;
    const compute = async () => {
      computed += 1;
      await new Promise((r) => setTimeout(r, 100));
      return { open_issues: sev({ high: computed }) };
    };
    const req = { endpoint: 'open', scope: 'global', params: '[]', clockDependent: false };
    const answers = await Promise.all(Array.from({ length: 5 }, () => cache.through(req, compute)));
    expect(computed).toBe(1);
    expect(new Set(answers.map((a) => a.body))).toEqual(new Set([JSON.stringify({ open_issues: sev({ high: 1 }) })]));
    expect(answers.every((a) => a.status === 'MISS')).toBe(true);
    expect(await cache.through(req, compute)).toMatchObject({ status: 'HIT' });
    expect(computed).toBe(1);
  });

  it('given answers cached under one SLA policy, when the service restarts with another, then none of them is served', async () => {
    const req = { endpoint: 'sla', scope: 'global', params: '[]', clockDependent: false };
    const before = new ResponseCache('metrics', { redis, names, variant: slaVariant(parseSlaDays('critical=7')) }, silentLogger);
    expect(await before.through(req, async () => ({ policy_days: 7 }))).toMatchObject({ status: 'MISS' });
    expect(await before.through(req, async () => ({ policy_days: 7 }))).toMatchObject({ status: 'HIT' });
    const after = new ResponseCache('metrics', { redis, names, variant: slaVariant(parseSlaDays('critical=3')) }, silentLogger);
    expect(await after.through(req, async () => ({ policy_days: 3 }))).toEqual({ body: '{"policy_days":3}', status: 'MISS' });
    // The default policy written out is the same variant as no policy given.
    expect(slaVariant(undefined)).toBe(slaVariant(DEFAULT_SLA_POLICY));
  });

  it('given a failing computation, when requests share it, then each gets the error and nothing is cached', async () => {
    const cache = new ResponseCache('metrics', { redis, names }, silentLogger);
    const req = { endpoint: 'mttr', scope: 'global', params: '[]', clockDependent: false };
    const failing = async () => {
      await new Promise((r) => setTimeout(r, 20));
      throw new Error('store down');
    };
    const results = await Promise.allSettled([cache.through(req, failing), cache.through(req, failing)]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(await cache.through(req, async () => ({ mttr: 1 }))).toEqual({ body: '{"mttr":1}', status: 'MISS' });
  });
});
