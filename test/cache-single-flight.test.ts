import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DataVersion } from '../src/cache/data-version.js';
import { ResponseCache } from '../src/cache/response-cache.js';
import { silentLogger } from '../src/log.js';
import type { Store } from '../src/storage/gateway.js';
import { freshStore } from './support/engine.js';
import { REDIS_URL } from './support/service.js';

/**
 * Single flight (issue 32): identical requests missing the cache together run the store's
 * statement once; and an answer keyed by a team's version is computed again only when that team's
 * version (or the shared one) moves. Statements are counted on the real embedded store.
 */

const TEAM_A = 'a3c5e7f9-1b2d-4f6a-8c0e-2b4d6f8a0c1e';
const TEAM_B = 'b7d9e1f3-5a7c-4e9b-8d1f-3a5c7e9b1d3f';

describe('response cache single flight on the embedded store', () => {
  const names = { queuePrefix: `bull-test-${randomUUID().slice(0, 8)}`, keyPrefix: `vulndb-test-${randomUUID().slice(0, 8)}` };
  let redis: Redis;
  let store: Store;
  let statements = 0;
  /** The store, counting the statements that reach it. */
  let counted: Store;

  beforeAll(async () => {
    redis = new Redis(REDIS_URL);
    await redis.ping(); // ready: an unconnected client is a BYPASS
    store = await freshStore();
    counted = {
      ...store,
      query: (sql, params, opts) => {
        statements += 1;
        return store.query(sql, params, opts);
      },
    };
  });
  afterAll(async () => {
    const found = await redis.keys(`${names.keyPrefix}:*`);
    if (found.length > 0) await redis.del(...found);
    await redis.quit();
  });

  it('given 10 identical requests missing together, then one statement runs and all get its answer', async () => {
    const cache = new ResponseCache('metrics', { redis, names }, silentLogger);
    const req = { endpoint: 'open', scope: `team:${TEAM_A}`, params: '[]', clockDependent: false, teams: [TEAM_A] };
    // Slow enough that every request arrives while the first one's statement runs.
    const compute = () => counted.query<{ n: number }>('SELECT sleep(0.3) AS s, 42 AS n');
    const before = statements;
    const answers = await Promise.all(Array.from({ length: 10 }, () => cache.through(req, compute)));
    expect(statements - before).toBe(1);
    expect(new Set(answers.map((a) => a.body)).size).toBe(1);
    expect(answers.every((a) => a.status === 'MISS')).toBe(true);
    expect(await cache.through(req, compute)).toMatchObject({ status: 'HIT', body: answers[0]!.body });
    expect(statements - before).toBe(1);

    const versions = new DataVersion(redis, names, silentLogger);
    await versions.bumpBatch('a batch on B', [TEAM_B]);
    expect((await cache.through(req, compute)).status).toBe('HIT');
    await versions.bumpBatch('a batch on A', [TEAM_A]);
    const again = await Promise.all(Array.from({ length: 5 }, () => cache.through(req, compute)));
    expect(again.map((a) => a.status)).toEqual(['MISS', 'MISS', 'MISS', 'MISS', 'MISS']);
    expect(statements - before).toBe(2);
    await versions.bump('a decision');
    expect((await cache.through(req, compute)).status).toBe('MISS');
    expect(statements - before).toBe(3);
  });

  it('given an answer about all targets, when a batch on any team commits, then it is computed again', async () => {
    const cache = new ResponseCache('metrics', { redis, names }, silentLogger);
    const req = { endpoint: 'open', scope: 'global', params: '[]', clockDependent: false };
    const compute = () => counted.query<{ n: number }>('SELECT 7 AS n');
    expect((await cache.through(req, compute)).status).toBe('MISS');
    expect((await cache.through(req, compute)).status).toBe('HIT');
    await new DataVersion(redis, names, silentLogger).bumpBatch('a batch on targets of no team', []);
    expect((await cache.through(req, compute)).status).toBe('MISS');
  });
});
