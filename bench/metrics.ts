/**
 * npm run bench:metrics [-- --scale 1m|100k --duration 5 --connections 16]
 *
 * Metrics API latency and throughput on the benchmark dataset (bench/lib/dataset.ts; built on
 * first use). This process serves, on the dataset's store:
 *   - the metrics API with the Redis cache (the production setup),
 *   - the metrics API without a cache (every answer computed: the "uncached" figures),
 *   - the database API (the same statistics, for the uncached comparison).
 * Load comes from autocannon in a child process (this file with --load), so the load generator
 * does not share the server's event loop. Per case:
 *   uncached  1 connection, metrics API without cache, p50/p95
 *   database  1 connection, the database API's same statistic, p50/p95 (ratio = uncached / database)
 *   cached    1 connection p50/p95 (latency), then --connections connections: requests/s
 * Targets (issue 4): cached p50 ≤ 2 ms and ≥ 3,000 requests/s; uncached ≤ 1.3 × database.
 * Results: bench/results/metrics-<scale>.json (each run also kept under bench/results/runs/) and the console.
 */
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { isDeepStrictEqual } from 'node:util';
import autocannon from 'autocannon';
import { writeResults } from './lib/results.js';
import { ownedStore } from './lib/owned-store.js';
import { optionOf } from './lib/args.js';

const args = process.argv.slice(2);
const arg = optionOf(args);

interface LoadSpec {
  url: string;
  token: string;
  connections: number;
  duration: number;
}

interface LoadResult {
  requests: number;
  rps: number;
  p50: number;
  p95: number;
  mean: number;
  failures: number;
}

const percentile = (sorted: number[], p: number) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;

/** Child mode: one autocannon run, per-response latencies kept for exact p50/p95, JSON on stdout. */
async function load(spec: LoadSpec): Promise<void> {
  const times: number[] = [];
  let failures = 0;
  const started = performance.now();
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const options = {
      url: spec.url,
      connections: spec.connections,
      duration: spec.duration,
      timeout: 120,
      headers: { Authorization: `Bearer ${spec.token}` },
    };
    const instance = autocannon(options, (err, res) => (err ? reject(err) : resolve(res)));
    instance.on('response', (_client, status, _bytes, ms) => {
      if (status === 200) times.push(ms);
      else failures += 1;
    });
  });
  const seconds = (performance.now() - started) / 1000;
  times.sort((a, b) => a - b);
  const out: LoadResult = {
    requests: times.length,
    rps: Math.round(times.length / seconds),
    p50: percentile(times, 0.5),
    p95: percentile(times, 0.95),
    mean: times.reduce((a, b) => a + b, 0) / Math.max(1, times.length),
    failures: failures + result.errors + result.timeouts,
  };
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

if (args[0] === '--load') {
  await load(JSON.parse(args[1]!) as LoadSpec);
  process.exit(0);
}

// --- server side ---------------------------------------------------------------------------------
const { Redis } = await import('ioredis');
const { createDbApi } = await import('../src/app.js');
const { createLogger } = await import('../src/log.js');
const { createMetricsApi } = await import('../src/metrics/app.js');
const { tokenKeys } = await import('../src/auth/keys.js');
const { signJwt } = await import('../src/metrics/sign.js');
const { checksQueue } = await import('../src/queue/producer.js');
const { requestConnection, whenReady } = await import('../src/queue/redis.js');
const { LARGE_TEAM, SMALL_TEAM, openDataset, SCALES } = await import('./lib/dataset.js');

const SCALE = arg('scale', '1m') as keyof typeof SCALES;
if (!(SCALE in SCALES)) throw new Error(`--scale must be one of ${Object.keys(SCALES).join(', ')}`);
const DURATION = Number(arg('duration', '5'));
const CONNECTIONS = Number(arg('connections', '16'));
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
/** The clock of both APIs: the day after the synthetic history ends (reproducible exposures). */
const NOW = Date.UTC(2024, 0, 26) / 1000;

const log = createLogger('warn');
const { dataset, store } = await openDataset(SCALE);
console.log(`metrics benchmark on the ${SCALE} dataset: ${dataset.findings} findings, ${dataset.events} FOUND events`);

const redis = requestConnection(REDIS_URL);
if (!(await whenReady(redis))) throw new Error(`Redis is not answering at ${REDIS_URL}`);
const id = randomUUID().slice(0, 8);
const names = { queuePrefix: `bench-metrics-${id}`, keyPrefix: `bench-metrics-${id}` };
const secret = randomBytes(32).toString('base64url');
const tokens = tokenKeys({ secret, publicKey: undefined, issuer: undefined, audience: undefined }, dataset.dataDir);
const token = signJwt(
  { sub: 'bench', admin: true, iat: Math.floor(Date.now() / 1000), exp: Math.floor(Date.now() / 1000) + 86_400 },
  tokens.secret!,
);
const now = () => NOW;

const queue = checksQueue(redis, names);
const owned = await ownedStore(store, log);
const apps = {
  cached: createMetricsApi({ store, suppression: owned.suppression, log, keys: tokens, cache: { redis, names }, now }),
  uncached: createMetricsApi({ store, suppression: owned.suppression, log, keys: tokens, now }),
  database: createDbApi({
    store,
    ...owned,
    queue,
    log,
    maxReportBytes: 1 << 20,
    pageSizeDefault: 20,
    pageSizeMax: 100,
    now,
  }),
};
const servers: http.Server[] = [];
async function serve(app: { callback(): http.RequestListener }): Promise<string> {
  const server = http.createServer(app.callback());
  server.keepAliveTimeout = 60_000;
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
const url = { cached: await serve(apps.cached), uncached: await serve(apps.uncached), database: await serve(apps.database) };

function runLoad(target: string, connections: number, duration: number): Promise<LoadResult> {
  const spec: LoadSpec = { url: target, token, connections, duration };
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'bench/metrics.ts', '--load', JSON.stringify(spec)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve(JSON.parse(out) as LoadResult) : reject(new Error(`load generator exited with ${code}`)),
    );
  });
}

async function xCache(target: string): Promise<string | null> {
  const res = await fetch(target, { headers: { Authorization: `Bearer ${token}` } });
  await res.text();
  if (res.status !== 200) throw new Error(`${target} answered ${res.status}`);
  return res.headers.get('x-cache');
}

const L = LARGE_TEAM;
const S = SMALL_TEAM;
const range = 'minDate=2024-01-10&maxDate=2024-01-20';
/** [name, metrics API path, database API path of the same statistic]. */
const CASES: [string, string, string][] = [
  ['open (large team)', `/teams/${L}/stats/open`, `/stats/open?team=${L}`],
  ['open, date range (large team)', `/teams/${L}/stats/open?${range}`, `/stats/open?team=${L}&${range}`],
  ['fixed (large team)', `/teams/${L}/stats/fixed`, `/stats/fixed?team=${L}`],
  ['mttr (large team)', `/teams/${L}/stats/mttr`, `/stats/mttr?team=${L}`],
  ['mttr, date range (large team)', `/teams/${L}/stats/mttr?${range}`, `/stats/mttr?team=${L}&${range}`],
  ['exposure (large team)', `/teams/${L}/stats/exposure`, `/stats/exposure?team=${L}`],
  ['exposure atDate (large team)', `/teams/${L}/stats/exposure?atDate=2024-01-15`, `/stats/exposure?team=${L}&atDate=2024-01-15`],
  ['current exposure (large team)', `/teams/${L}/stats/exposure/current`, `/stats/exposure/current?team=${L}`],
  ['assets (large team)', `/teams/${L}/stats/assets`, `/stats/assets?team=${L}`],
  ['open (small team)', `/teams/${S}/stats/open`, `/stats/open?team=${S}`],
  ['open, teams=large,small', `/stats/open?teams=${L},${S}`, `/stats/open?teams=${L},${S}`],
  ['open (global)', '/stats/open', '/stats/open'],
  ['exposure (global)', '/stats/exposure', '/stats/exposure'],
  ['assets (global)', '/stats/assets', '/stats/assets'],
];

interface CaseResult {
  name: string;
  metricsPath: string;
  databasePath: string;
  uncached: LoadResult;
  database: LoadResult;
  ratio: number;
  cachedLatency: LoadResult;
  cachedThroughput: LoadResult;
}

const ms = (v: number) => (Number.isFinite(v) ? v.toFixed(v < 10 ? 2 : 1) : '-');
const results: CaseResult[] = [];
for (const [name, metricsPath, databasePath] of CASES) {
  const m = `${url.uncached}/api/v1${metricsPath}`;
  const c = `${url.cached}/api/v1${metricsPath}`;
  const d = `${url.database}${databasePath}`;
  // Bodies must agree before timing anything.
  const [mb, db] = await Promise.all([m, d].map(async (u) => (await fetch(u, { headers: { Authorization: `Bearer ${token}` } })).text()));
  if (!isDeepStrictEqual(JSON.parse(mb!), JSON.parse(db!)))
    throw new Error(`${name}: metrics and database API bodies differ:\n${mb}\n${db}`);
  // Alternate the two uncached runs so neither benefits from a warmer engine.
  await xCache(m);
  const database = await runLoad(d, 1, DURATION);
  const uncached = await runLoad(m, 1, DURATION);
  await xCache(c); // fill
  const status = await xCache(c);
  if (status !== 'HIT') throw new Error(`${name}: expected a cache hit, got ${status}`);
  const cachedLatency = await runLoad(c, 1, Math.min(DURATION, 3));
  const cachedThroughput = await runLoad(c, CONNECTIONS, DURATION);
  if ((await xCache(c)) !== 'HIT') throw new Error(`${name}: the cache entry vanished during the run`);
  const r = { name, metricsPath, databasePath, uncached, database, ratio: uncached.p50 / database.p50, cachedLatency, cachedThroughput };
  results.push(r);
  console.log(
    `${name.padEnd(32)} uncached p50 ${ms(uncached.p50)} p95 ${ms(uncached.p95)} ms | database p50 ${ms(database.p50)} p95 ${ms(database.p95)} ms ` +
      `(×${r.ratio.toFixed(2)}) | cached p50 ${ms(cachedLatency.p50)} p95 ${ms(cachedLatency.p95)} ms, ${cachedThroughput.rps} req/s`,
  );
}

const targets = { cachedP50Ms: 2, cachedRps: 3000, uncachedRatio: 1.3 };
const failures = results.reduce(
  (n, r) => n + r.uncached.failures + r.database.failures + r.cachedLatency.failures + r.cachedThroughput.failures,
  0,
);
const summary = {
  scale: SCALE,
  dataset: { findings: dataset.findings, events: dataset.events, reports: dataset.reports },
  machine: { cpus: os.cpus().length, cpu: os.cpus()[0]?.model, node: process.version },
  date: new Date().toISOString(),
  settings: {
    durationSeconds: DURATION,
    cachedConnections: CONNECTIONS,
    uncachedConnections: 1,
    clock: new Date(NOW * 1000).toISOString(),
  },
  targets,
  cases: results,
  worst: {
    cachedP50Ms: Math.max(...results.map((r) => r.cachedLatency.p50)),
    cachedRps: Math.min(...results.map((r) => r.cachedThroughput.rps)),
    uncachedRatio: Math.max(...results.map((r) => r.ratio)),
  },
  failures,
};
const met = {
  cachedP50: summary.worst.cachedP50Ms <= targets.cachedP50Ms,
  cachedRps: summary.worst.cachedRps >= targets.cachedRps,
  uncachedRatio: summary.worst.uncachedRatio <= targets.uncachedRatio,
};

console.log('\n' + '| case | uncached p50 / p95 ms | database p50 / p95 ms | ratio | cached p50 / p95 ms | cached req/s |');
console.log('|---|---|---|---|---|---|');
for (const r of results) {
  console.log(
    `| ${r.name} | ${ms(r.uncached.p50)} / ${ms(r.uncached.p95)} | ${ms(r.database.p50)} / ${ms(r.database.p95)} | ${r.ratio.toFixed(2)} | ` +
      `${ms(r.cachedLatency.p50)} / ${ms(r.cachedLatency.p95)} | ${r.cachedThroughput.rps} |`,
  );
}
console.log(
  `\nworst cached p50 ${ms(summary.worst.cachedP50Ms)} ms (target ≤ ${targets.cachedP50Ms}: ${met.cachedP50 ? 'met' : 'MISSED'}), ` +
    `worst cached throughput ${summary.worst.cachedRps} req/s with ${CONNECTIONS} connections (target ≥ ${targets.cachedRps}: ${met.cachedRps ? 'met' : 'MISSED'}), ` +
    `worst uncached/database ratio ${summary.worst.uncachedRatio.toFixed(2)} (target ≤ ${targets.uncachedRatio}: ${met.uncachedRatio ? 'met' : 'MISSED'}); ` +
    `${failures} failed requests`,
);

const written = writeResults(`metrics-${SCALE}`, { ...summary, met });
console.log(`results written to ${written.latest} and ${written.kept}`);

// --- clean up ----------------------------------------------------------------------------------
for (const s of servers) s.closeAllConnections();
await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
await queue.close();
const cleaner = new Redis(REDIS_URL);
for (const prefix of [names.queuePrefix, names.keyPrefix]) {
  const found = await cleaner.keys(`${prefix}:*`);
  if (found.length > 0) await cleaner.del(...found);
}
await cleaner.quit();
await redis.quit();
await store.close();
