import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../src/storage/gateway.js';
import { QueryTimeout } from '../src/storage/store-errors.js';
import { migrate } from '../src/storage/migrate.js';
import { testDataDir, testStoreConfig } from './support/engine.js';
import { ADMIN_TOKEN, METRICS_SECRET } from './support/metrics.js';
import { startTestService, type TestService } from './support/service.js';

/**
 * SPEC §5.6: every store statement has a time limit (QUERY_TIMEOUT_MS). The gateway sends the
 * engine its own limit and aborts the call shortly after; in embedded mode a statement whose time
 * ran out while it waited for the engine never runs.
 */

/** Takes about `seconds` of wall time and almost no CPU (one row per block, a tenth of a second each). */
const sleepFor = (seconds: number) => `SELECT sleepEachRow(0.1) FROM numbers(${seconds * 10}) SETTINGS max_block_size = 1`;
const NEVER_ENDING = 'SELECT count() FROM numbers(100000000000000)';

async function timedOut(run: Promise<unknown>): Promise<{ err: unknown; ms: number }> {
  const started = performance.now();
  const err = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  return { err, ms: performance.now() - started };
}

describe('statement time limit in the gateway (embedded engine)', () => {
  let store: Store;
  beforeAll(async () => {
    store = await openStore({ ...testStoreConfig(), queryTimeoutMs: 300 });
  });
  afterAll(() => store.close());

  it('cancels a statement past the limit with QueryTimeout, and the next one runs normally', async () => {
    const { err, ms } = await timedOut(store.query(NEVER_ENDING));
    expect(err).toBeInstanceOf(QueryTimeout);
    expect(ms).toBeLessThan(1500);
    // The engine stopped it (it would never end): a statement without limit gets through at once,
    // give or take the block the engine was working on when its time ran out.
    const started = performance.now();
    await store.command('SELECT 1', undefined, { timeoutMs: 0 });
    expect(performance.now() - started).toBeLessThan(1000);
    expect(await store.query<{ ok: number }>('SELECT 1 AS ok')).toEqual([{ ok: 1 }]);
  });

  it('limits commands, inserts and parameterised reads too', async () => {
    expect((await timedOut(store.command(`CREATE TABLE big ENGINE = Memory AS ${NEVER_ENDING}`))).err).toBeInstanceOf(QueryTimeout);
    const bound = store.queryFields('SELECT count() FROM numbers({n:UInt64})', { n: 100_000_000_000_000 });
    expect((await timedOut(bound)).err).toBeInstanceOf(QueryTimeout);
  });

  it('runs a command without the limit when asked (migrations), and limits the next statements again', async () => {
    await store.command(sleepFor(1), undefined, { timeoutMs: 0 });
    await store.command(sleepFor(1), undefined, { timeoutMs: 5000 });
    expect((await timedOut(store.query(sleepFor(1)))).err).toBeInstanceOf(QueryTimeout);
  });

  it('never hands the engine a statement whose time ran out while it waited for its turn', async () => {
    await store.command('CREATE TABLE IF NOT EXISTS marks (n UInt8) ENGINE = MergeTree ORDER BY n');
    // The engine runs one statement at a time: the insert waits behind a 1.5 s statement.
    const blocker = store.command(sleepFor(1.5), undefined, { timeoutMs: 0 });
    const queued = timedOut(store.command('INSERT INTO marks VALUES (1)'));
    const { err, ms } = await queued;
    expect(err).toBeInstanceOf(QueryTimeout);
    expect(ms).toBeLessThan(1000); // answered at its own limit, not when the blocker ended
    await blocker;
    expect(await store.query('SELECT n FROM marks')).toEqual([]);
  });

  it('runs migrations without the limit', async () => {
    const dir = fs.mkdtempSync(path.join(testDataDir(), 'sql-'));
    fs.writeFileSync(
      path.join(dir, '0001_slow_backfill.sql'),
      `CREATE TABLE IF NOT EXISTS slow (s UInt8) ENGINE = MergeTree ORDER BY s;\n${sleepFor(1).replace('SELECT', 'INSERT INTO slow SELECT')};\n`,
    );
    const other = await openStore({ ...testStoreConfig(), queryTimeoutMs: 300 });
    try {
      expect(await migrate(other, undefined, dir)).toEqual([1]);
      expect(await other.query('SELECT count() AS n FROM slow')).toEqual([{ n: 10 }]);
    } finally {
      await other.close();
    }
  });
});

describe('503 Query Timeout over HTTP', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ worker: false, env: { QUERY_TIMEOUT_MS: '300', JWT_SECRET: METRICS_SECRET } });
    // Warm up: the first request of a process compiles the whole route stack. (Not the endpoints
    // below, whose answers would be cached.)
    expect((await svc.db('/targets')).status).toBe(200);
    expect((await fetch(`${svc.metricsApiUrl}/api/v1/stats/fixed`, { headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } })).status).toBe(
      200,
    );
  });
  afterAll(() => svc.close());

  /** Holds the engine for 1.5 s (a statement without limit), as a long statement of another request would. */
  const busyEngine = () => svc.store.command(sleepFor(1.5), undefined, { timeoutMs: 0 });

  it('database API: answers 503 {"message": "Query Timeout"} at the limit, then answers normally', async () => {
    const busy = busyEngine();
    const started = performance.now();
    const res = await svc.db('/findings');
    expect({ status: res.status, body: await res.json() }).toEqual({ status: 503, body: { message: 'Query Timeout' } });
    expect(performance.now() - started).toBeLessThan(1000);
    await busy;
    expect((await svc.db('/findings')).status).toBe(200);
  });

  it('metrics API: answers 503 with type Unavailable, then answers normally', async () => {
    const url = `${svc.metricsApiUrl}/api/v1/stats/open`;
    const init = { headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } };
    const busy = busyEngine();
    const started = performance.now();
    const res = await fetch(url, init);
    expect({ status: res.status, body: await res.json() }).toEqual({
      status: 503,
      body: { code: 503, error: 'Query Timeout', type: 'Unavailable' },
    });
    expect(performance.now() - started).toBeLessThan(1000);
    await busy;
    expect((await fetch(url, init)).status).toBe(200);
  });
});
