import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '../src/queue/redis.js';
import { report, V, worked } from './support/reports.js';
import { fetchCached, ingestWorkedFixed, json, REDIS_URL, startTestService, type TestService } from './support/service.js';

/**
 * The database API's findings lists go through the Redis response cache (src/cache/response-cache.ts):
 * a repeated page is one Redis round trip, and ingestion or team re-association makes every cached
 * page stale at once (the data version). Redis failures: see metrics-cache-redis-down.test.ts.
 */

const NOW = Date.parse('2024-01-06T10:00:00Z') / 1000;
const TEAM_A = 'a3c5e7f9-1b2d-4f6a-8c0e-2b4d6f8a0c1e';
const TEAM_B = 'b7d9e1f3-5a7c-4e9b-8d1f-3a5c7e9b1d3f';

describe('findings lists through the response cache', () => {
  let svc: TestService;
  let redis: Redis;
  const get = (path: string) => fetchCached(`${svc.dbApiUrl}${path}`);
  const entries = () => redis.keys(`${keys.cache(svc.names, 'db')}:*:findings:*`);

  beforeAll(async () => {
    svc = await startTestService({ now: () => NOW });
    redis = new Redis(REDIS_URL);
    await ingestWorkedFixed(svc, TEAM_A);
  });
  afterAll(async () => {
    await redis.quit();
    await svc.close();
  });

  it('given a first page, when the same page is asked again, then it comes from Redis with the same body and type', async () => {
    const first = await get(`/findings?team=${TEAM_A}`);
    expect(first).toMatchObject({ status: 200, cache: 'MISS' });
    expect(first.type).toBe('application/json; charset=utf-8');
    expect(first.body.pagination).toEqual({ limit: 20, offset: 0, total: 1, more: false });
    expect(first.body.findings[0]).toMatchObject({
      status: 'FIXED',
      total_exposure: 48,
      issue: { summary: V.summary },
      target: { identifier: 'www.example.com', teams: [TEAM_A] },
    });
    const second = await get(`/findings?team=${TEAM_A}`);
    expect(second).toMatchObject({ status: 200, cache: 'HIT' });
    expect(second.text).toBe(first.text);
    expect(second.type).toBe(first.type);
    expect(await entries()).toHaveLength(1);
  });

  it('given equal selections written differently, when asked, then they share one entry; other selections do not', async () => {
    expect((await get('/findings?labels=TLS,issue&minScore=1')).cache).toBe('MISS');
    expect((await get('/findings?minScore=1.0&labels=issue,TLS')).cache).toBe('HIT');
    expect((await get('/findings?labels=TLS,issue&minScore=1&page=1&size=20')).cache).toBe('HIT');
    const other = await get('/findings?labels=TLS,issue&minScore=7');
    expect(other).toMatchObject({ cache: 'MISS', body: { findings: [] } });
  });

  it('given a cached list of one parent, when another parent asks with the same parameters, then it gets its own answer', async () => {
    const [finding] = (await get('/findings')).body.findings;
    const ofIssue = await get(`/issues/${finding.issue.id}/findings`);
    expect(ofIssue).toMatchObject({ cache: 'MISS', body: { findings: [{ id: finding.id }] } });
    const ofTarget = await get(`/targets/${finding.target.id}/findings`);
    expect(ofTarget).toMatchObject({ cache: 'MISS', body: { findings: [{ id: finding.id }] } });
    const ofSource = await get(`/sources/${finding.source.id}/findings`);
    expect(ofSource).toMatchObject({ cache: 'MISS', body: { findings: [{ id: finding.id }] } });
    const otherIssue = await get('/issues/00000000-0000-4000-8000-000000000001/findings');
    expect(otherIssue).toMatchObject({ cache: 'MISS', body: { findings: [] } });
    expect((await get(`/issues/${finding.issue.id}/findings`)).cache).toBe('HIT');
  });

  it('given an error answer, when it is asked again, then it is computed again and nothing is stored', async () => {
    const before = (await entries()).length;
    for (let i = 0; i < 2; i += 1) {
      const past = await get(`/findings?team=${TEAM_A}&page=9`);
      expect(past).toMatchObject({ status: 404, cache: null, body: { message: 'Page Not Found' } });
    }
    expect(await entries()).toHaveLength(before);
  });

  it('given lists with exposures to now, when cached, then they live at most 60 s', async () => {
    const ttls = await Promise.all((await entries()).map((k) => redis.ttl(k)));
    expect(ttls.length).toBeGreaterThan(0);
    for (const ttl of ttls) {
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(60);
    }
  });

  it('given a cached page, when a report reopens its finding, then the next request shows the new state', async () => {
    expect((await get(`/findings?team=${TEAM_A}`)).cache).toBe('HIT');
    const before = Number(await redis.get(keys.dataVersion(svc.names)));
    await json(svc.postJson('/checks', worked.r4), 202); // F reopens on 01-05
    await svc.settle();
    expect(Number(await redis.get(keys.dataVersion(svc.names)))).toBeGreaterThan(before);
    const after = await get(`/findings?team=${TEAM_A}`);
    expect(after).toMatchObject({ cache: 'MISS', body: { findings: [{ status: 'OPEN', total_exposure: 72, current_exposure: 24 }] } });
  });

  it('given a cached page of a team, when POST /targets associates a target with it, then the next request lists its findings', async () => {
    expect(await get(`/findings?team=${TEAM_B}`)).toMatchObject({ cache: 'MISS', body: { findings: [] } });
    expect((await get(`/findings?team=${TEAM_B}`)).cache).toBe('HIT');
    await json(svc.postJson('/targets', { identifier: 'www.example.com', teams: [TEAM_B] }), 201);
    const after = await get(`/findings?team=${TEAM_B}`);
    expect(after).toMatchObject({ cache: 'MISS', body: { pagination: { total: 1 }, findings: [{ target: { teams: [TEAM_A, TEAM_B] } }] } });
    // The other team's cached page carried the old team list of the same target.
    expect(await get(`/findings?team=${TEAM_A}`)).toMatchObject({
      cache: 'MISS',
      body: { findings: [{ target: { teams: [TEAM_A, TEAM_B] } }] },
    });
  });

  it('given a cached global list, when a new target appears through ingestion, then the total follows', async () => {
    const first = await get('/findings');
    expect((await get('/findings')).cache).toBe('HIT');
    await json(
      svc.postJson(
        '/checks',
        report({ check_id: 'new-1', target: 'new.example.com', end_time: '2024-01-05 12:00:00', vulnerabilities: [{ ...V, score: 9.8 }] }),
      ),
      202,
    );
    await svc.settle();
    const after = await get('/findings');
    expect(after.cache).toBe('MISS');
    expect(after.body.pagination.total).toBe(first.body.pagination.total + 1);
  });
});
