import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageVersion } from '../src/version.js';
import { createLogger } from '../src/log.js';
import { ADMIN_TOKEN, METRICS_SECRET } from './support/metrics.js';
import { startPrivateRedis, type PrivateRedis } from './support/private-redis.js';
import { report, V } from './support/reports.js';
import { json, startTestService, type TestService } from './support/service.js';

/**
 * The admin listener (issue 22): /metrics carries the listed series with values that follow what
 * the service did, /healthz and /readyz answer, bull-board is served, and every API answer carries
 * a request id.
 */

/** The value of one series of a Prometheus text exposition (0 when absent). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-z_:]+)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = (m[2] ?? '').split(',');
    if (wanted.every((w) => have.includes(w))) return Number(m[3]);
  }
  return 0;
}

describe('the admin listener', () => {
  let svc: TestService;
  let metricsText: string;
  /** The service's log lines at the default level (info), parsed. */
  const logLines: Record<string, unknown>[] = [];
  beforeAll(async () => {
    svc = await startTestService({
      env: { JWT_SECRET: METRICS_SECRET, VULNDB_COMMIT: 'abc1234' },
      log: createLogger('info', {}, (line) => logLines.push(JSON.parse(line))),
    });
    const before = await (await fetch(`${svc.adminUrl}/metrics`)).text();
    // A few requests, one ingested report, one cache hit, one rejected report.
    await json(
      svc.postJson(
        '/checks',
        report({ check_id: 'obs-1', target: 'obs.example.com', end_time: '2024-01-01 10:00:00', vulnerabilities: [V] }),
      ),
      202,
    );
    await svc.settle();
    expect((await svc.postJson('/checks', { status: 'FINISHED' })).status).toBe(400);
    await json(svc.db('/findings?status=OPEN'));
    const again = await svc.db('/findings?status=OPEN');
    expect(again.headers.get('x-cache')).toBe('HIT');
    await again.text();
    await json(fetch(`${svc.metricsApiUrl}/api/v1/stats/open`, { headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } }));
    metricsText = await (await fetch(`${svc.adminUrl}/metrics`)).text();
    // Counters are per process and other tests of this file's process may have counted before.
    (svc as unknown as { before: string }).before = before;
  });
  afterAll(() => svc?.close());

  const delta = (name: string, labels: Record<string, string> = {}) =>
    sample(metricsText, name, labels) - sample((svc as unknown as { before: string }).before, name, labels);

  it('given a few requests, when scraped, then request durations are counted by API, route pattern, method and status', () => {
    expect(delta('vulndb_http_request_duration_seconds_count', { api: 'database', route: '/findings', method: 'GET', status: '200' })).toBe(
      2,
    );
    expect(delta('vulndb_http_request_duration_seconds_count', { api: 'database', route: '/checks', method: 'POST', status: '202' })).toBe(
      1,
    );
    expect(
      delta('vulndb_http_request_duration_seconds_count', { api: 'metrics', route: '/api/v1/stats/open', method: 'GET', status: '200' }),
    ).toBe(1);
  });

  it('given one stored and one rejected report, when scraped, then the outcomes, the batch and the lag are counted', () => {
    expect(delta('vulndb_ingest_reports_total', { outcome: 'stored' })).toBe(1);
    expect(delta('vulndb_ingest_reports_total', { outcome: 'rejected' })).toBe(1);
    expect(metricsText).toMatch(/vulndb_ingest_reports_total\{outcome="failed"\} \d/);
    expect(delta('vulndb_ingest_batch_duration_seconds_count')).toBeGreaterThanOrEqual(1);
    expect(delta('vulndb_ingest_lag_seconds_count')).toBe(1);
    const lag = delta('vulndb_ingest_lag_seconds_sum');
    expect(lag).toBeGreaterThan(0);
    expect(lag).toBeLessThan(60);
  });

  it('given a repeated findings page, when scraped, then a cache hit and a miss are counted', () => {
    expect(delta('vulndb_cache_requests_total', { result: 'hit' })).toBeGreaterThanOrEqual(1);
    expect(delta('vulndb_cache_requests_total', { result: 'miss' })).toBeGreaterThanOrEqual(1);
  });

  it('when scraped, then the queues, the store statements and the process are described', () => {
    for (const queue of ['checks', 'checks-bulk']) {
      for (const state of ['waiting', 'active', 'delayed', 'failed'])
        expect(metricsText).toContain(`vulndb_queue_jobs{queue="${queue}",state="${state}"} 0`);
    }
    expect(delta('vulndb_store_query_duration_seconds_count', { kind: 'query' })).toBeGreaterThan(0);
    expect(delta('vulndb_store_query_duration_seconds_count', { kind: 'insert' })).toBeGreaterThan(0);
    expect(sample(metricsText, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
  });

  it('when probed, then /healthz and /readyz answer and bull-board is served', async () => {
    expect(await json(fetch(`${svc.adminUrl}/healthz`))).toEqual({ status: 'ok' });
    expect(await json(fetch(`${svc.adminUrl}/readyz`))).toEqual({ status: 'ready', store: 'ok', redis: 'ok' });
    const board = await fetch(`${svc.adminUrl}/admin/queues`);
    expect(board.status).toBe(200);
    expect(await board.text()).toMatch(/<html/i);
    const queues = await json(fetch(`${svc.adminUrl}/admin/queues/api/queues`));
    expect(queues.queues.map((q: { name: string }) => q.name).sort()).toEqual(['checks', 'checks-bulk', 'notifications']);
  });

  it('given a statement the store refuses, when scraped, then it is counted as a store error of its kind', async () => {
    const scrape = async () => (await fetch(`${svc.adminUrl}/metrics`)).text();
    const before = sample(await scrape(), 'vulndb_store_errors_total', { kind: 'query' });
    await expect(svc.store.query('SELECT no_such_function_at_all()')).rejects.toThrow();
    const after = await scrape();
    expect(sample(after, 'vulndb_store_errors_total', { kind: 'query' }) - before).toBe(1);
    expect(after).toMatch(/^vulndb_store_errors_total\{kind="insert"\} \d+$/m);
    expect(sample(after, 'vulndb_ready', { dependency: 'store' })).toBe(1);
    expect(sample(after, 'vulndb_ready', { dependency: 'redis' })).toBe(1);
  });

  it('when scraped, then vulndb_build_info names the version, the Node.js version and the commit', () => {
    const lines = metricsText.split('\n').filter((l) => l.startsWith('vulndb_build_info{'));
    expect(lines).toEqual([`vulndb_build_info{version="${packageVersion()}",node="${process.version}",commit="abc1234"} 1`]);
    expect(packageVersion()).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('given requests to both APIs, when answered, then each has one access-log line at info with its route pattern, status, duration, id and API', async () => {
    const res = await svc.db('/findings?status=OPEN&size=1', { headers: { 'X-Request-Id': 'access-log-1' } });
    await res.text();
    const missing = await svc.db('/targets/not-a-target', { headers: { 'X-Request-Id': 'access-log-2' } });
    await missing.text();
    const metrics = await fetch(`${svc.metricsApiUrl}/api/v1/stats/open`, { headers: { 'X-Request-Id': 'access-log-3' } });
    await metrics.text();
    const access = (id: string) => logLines.filter((l) => l.requestId === id);
    expect(access('access-log-1')).toEqual([
      {
        time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        level: 'info',
        msg: 'request',
        api: 'database',
        requestId: 'access-log-1',
        method: 'GET',
        route: '/findings',
        path: '/findings',
        status: 200,
        ms: expect.any(Number),
      },
    ]);
    expect(access('access-log-1')[0]!.ms).toBeGreaterThanOrEqual(0);
    expect(access('access-log-2')).toEqual([
      expect.objectContaining({
        level: 'info',
        msg: 'request',
        api: 'database',
        route: expect.stringMatching(/^\/targets\/:\w+$/),
        path: '/targets/not-a-target',
        status: missing.status,
      }),
    ]);
    // The metrics API without a token: 401, logged with its own API and route pattern.
    expect(access('access-log-3')).toEqual([
      expect.objectContaining({ level: 'info', msg: 'request', api: 'metrics', route: '/api/v1/stats/open', method: 'GET', status: 401 }),
    ]);
  });

  it('given a request with or without X-Request-Id, when answered, then the id is echoed or made', async () => {
    const given = await svc.db('/stats/size', { headers: { 'X-Request-Id': 'trace-123' } });
    expect(given.headers.get('x-request-id')).toBe('trace-123');
    const made = await svc.db('/nowhere');
    expect(made.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const odd = await svc.db('/stats/size', { headers: { 'X-Request-Id': 'no spaces allowed' } });
    expect(odd.headers.get('x-request-id')).not.toBe('no spaces allowed');
  });
});

describe('/readyz without Redis', () => {
  let redis: PrivateRedis;
  let svc: TestService;
  beforeAll(async () => {
    redis = await startPrivateRedis();
    svc = await startTestService({ worker: false, env: { REDIS_URL: redis.url } });
  });
  afterAll(async () => {
    await svc?.close();
    await redis?.kill();
  });

  it('given a private Redis that stops, when probed, then /readyz answers 503 naming Redis while /healthz stays 200', async () => {
    expect((await fetch(`${svc.adminUrl}/readyz`)).status).toBe(200);
    await redis.kill();
    const res = await fetch(`${svc.adminUrl}/readyz`);
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ status: 'unavailable', store: 'ok', redis: 'down' });
    expect((await fetch(`${svc.adminUrl}/healthz`)).status).toBe(200);
    const metrics = await (await fetch(`${svc.adminUrl}/metrics`)).text();
    expect(metrics).toContain('vulndb_ready{dependency="redis"} 0');
    expect(metrics).toContain('vulndb_ready{dependency="store"} 1');
  });
});
