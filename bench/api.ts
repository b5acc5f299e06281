/**
 * npm run bench:api [-- --scale 100k|1m|all --runs 100 --only 'stats/open,page 1' --decisions 10000]
 *
 * Database API latency on the benchmark datasets (bench/lib/dataset.ts): for each statistic, for
 * a large team and globally, and for findings list pages 1 and 500 of the large team, p50/p95 of
 * sequential HTTP requests to the API started in this process (sent by the minimal client of
 * bench/lib/http-client.ts, so that the client's own work is not counted), next to p50/p95 of the very same
 * SQL (recorded while serving the request) run directly on the engine in the same run. The
 * findings pages are measured a second time through the API's Redis response cache (repeated
 * requests: hits), marked "cached". With `--decisions N` each statistic is also measured with
 * includeSuppressed=true in alternation with it (the statements of a store without decisions), so
 * that the cost of suppression is a ratio within one stretch of the shared machine's speed.
 * Results: bench/results/api-<scale>.json (each run also kept under bench/results/runs/) and the console.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { Redis } from 'ioredis';
import { createDbApi } from '../src/app.js';
import { createLogger } from '../src/log.js';
import { checksQueue } from '../src/queue/producer.js';
import type { QueryParams, StatementOptions, Store } from '../src/storage/gateway.js';
import { LARGE_TEAM, openDataset, SCALES, SMALL_TEAM, type Scale } from './lib/dataset.js';
import { connectBenchClient } from './lib/http-client.js';
import { writeResults } from './lib/results.js';
import { removeDecisions, seedDecisions } from './lib/decisions.js';
import { ownedStore } from './lib/owned-store.js';
import { optionOf } from './lib/args.js';

const args = process.argv.slice(2);
const arg = optionOf(args);
const scaleArg = arg('scale', 'all');
const scales = (scaleArg === 'all' ? Object.keys(SCALES) : [scaleArg]) as Scale[];
const RUNS = Number(arg('runs', '100'));
const WARMUP = 5;
// --only a,b: just the cases whose names contain one of these (a quicker look at a few).
const ONLY = arg('only', '').split(',').filter(Boolean);
// --decisions N: N triage decisions active while measuring (bench/lib/decisions.ts), removed after.
const DECISIONS = Number(arg('decisions', '0'));

const team = `team=${LARGE_TEAM}`;
const range = 'minDate=2024-01-10&maxDate=2024-01-20';
const today = new Date().toISOString().slice(0, 10);

/** [name, path, absolute p50 target in ms at the 1m scale or undefined, through the response cache] */
const CASES: [string, string, number | undefined, boolean?][] = [
  ['stats/open team', `/stats/open?${team}`, 10],
  ['stats/fixed team', `/stats/fixed?${team}`, 10],
  ['stats/open team dates', `/stats/open?${team}&${range}`, 20],
  ['stats/fixed team dates', `/stats/fixed?${team}&${range}`, 20],
  ['stats/open team atDate', `/stats/open?${team}&atDate=2024-01-15`, 20],
  ['stats/mttr team', `/stats/mttr?${team}`, 20],
  ['stats/mttr team dates', `/stats/mttr?${team}&${range}`, 20],
  ['stats/exposure team', `/stats/exposure?${team}`, undefined],
  ['stats/exposure/current team', `/stats/exposure/current?${team}`, undefined],
  ['stats/assets team', `/stats/assets?${team}`, undefined],
  ['stats/sla team', `/stats/sla?${team}`, undefined],
  ['stats/open global', '/stats/open', 60],
  ['stats/fixed global', '/stats/fixed', 60],
  ['stats/open global dates', `/stats/open?${range}`, 60],
  ['stats/fixed global dates', `/stats/fixed?${range}`, 60],
  ['stats/mttr global', '/stats/mttr', 60],
  ['stats/mttr global dates', `/stats/mttr?${range}`, 60],
  ['stats/exposure global', '/stats/exposure', 60],
  ['stats/exposure/current global', '/stats/exposure/current', 60],
  ['stats/assets global', '/stats/assets', 60],
  ['stats/sla global', '/stats/sla', undefined],
  ['stats/issues', '/stats/issues', 60],
  // Filters and scopes whose suppressed findings are read as a second branch of the statement
  // (docs/DESIGN.md, Suppression): what --decisions costs where no share applies.
  // Dated statistics at an instant when --decisions' decisions (made a day before the run) are active.
  ['stats/open team atDate today', `/stats/open?${team}&atDate=${today}`, undefined],
  ['stats/fixed team to today', `/stats/fixed?${team}&minDate=2024-01-10&maxDate=${today}`, undefined],
  ['stats/mttr team to today', `/stats/mttr?${team}&minDate=2024-01-10&maxDate=${today}`, undefined],
  ['stats/exposure team atDate today', `/stats/exposure?${team}&atDate=${today}`, undefined],
  ['stats/sla team atDate today', `/stats/sla?${team}&atDate=${today}`, undefined],
  ['stats/open team minScore', `/stats/open?${team}&minScore=4`, undefined],
  ['stats/exposure team minScore', `/stats/exposure?${team}&minScore=4`, undefined],
  ['stats/sla two teams', `/stats/sla?teams=${LARGE_TEAM},${SMALL_TEAM}`, undefined],
  ['stats/size', '/stats/size', 60],
  ['findings team page 1', `/findings?${team}`, 15],
  ['findings team page 500', `/findings?${team}&page=500`, undefined],
  ['findings team OPEN page 1', `/findings?${team}&status=OPEN`, undefined],
  ['findings team page 1 cached', `/findings?${team}`, undefined, true],
  ['findings team page 500 cached', `/findings?${team}&page=500`, undefined, true],
];

const cases = ONLY.length > 0 ? CASES.filter(([name]) => ONLY.some((o) => name.includes(o))) : CASES;

const cacheNames = { queuePrefix: 'bench-unused', keyPrefix: 'bench-api-cache' };

function quantile(sorted: number[], p: number): number {
  const h = p * (sorted.length - 1);
  const k = Math.floor(h);
  return sorted[k]! + (h - k) * ((sorted[k + 1] ?? sorted[k]!) - sorted[k]!);
}

const summarise = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: +quantile(s, 0.5).toFixed(2), p95: +quantile(s, 0.95).toFixed(2) };
};

/** A store that can record the statements it runs. */
function recording(store: Store) {
  let log: { sql: string; params?: QueryParams; opts?: StatementOptions }[] | undefined;
  const wrapped: Store = {
    ...store,
    query: (sql, params, opts) => {
      log?.push({ sql, ...(params ? { params } : {}), ...(opts ? { opts } : {}) });
      return store.query(sql, params, opts);
    },
  };
  return {
    store: wrapped,
    start: () => (log = []),
    stop: () => {
      const out = log ?? [];
      log = undefined;
      return out;
    },
  };
}

const results: Record<string, unknown> = {};
for (const scale of scales) {
  const { dataset, store } = await openDataset(scale);
  console.log(`\n${scale}: ${dataset.findings} findings, ${dataset.events} events, ${dataset.reports} reports`);
  const rec = recording(store);
  const owned = await ownedStore(rec.store, createLogger('warn'));
  if (DECISIONS > 0) await seedDecisions(store, owned.suppression, DECISIONS);
  const redis = new Redis(process.env.REDIS_URL?.trim() || 'redis://127.0.0.1:6379');
  await redis.ping(); // ready before the first request: an unconnected cache is a BYPASS
  const apiDeps = {
    store: rec.store,
    ...owned,
    queue: checksQueue(redis, { queuePrefix: 'bench-unused', keyPrefix: 'bench-unused' }),
    log: createLogger('warn'),
    maxReportBytes: 1 << 20,
    pageSizeDefault: 20,
    pageSizeMax: 100,
  };
  // Uncached: the engine's time is what is measured. Cached: the production setup (src/service.ts).
  const servers = [createDbApi(apiDeps), createDbApi({ ...apiDeps, cache: { redis, names: cacheNames } })].map((app) =>
    http.createServer(app.callback()),
  );
  for (const server of servers) await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const [client, cachedClient] = servers.map((server) => connectBenchClient('127.0.0.1', (server.address() as AddressInfo).port));

  const request = async (path: string, cached?: boolean) => {
    const answer = await (cached ? cachedClient! : client!).get(path);
    if (answer.status !== 200) throw new Error(`${path}: ${answer.status} ${answer.body.toString()}`);
  };
  // The serving code (Koa, routing, validation, the client) is compiled while it runs: one pass
  // over every case first, or the first cases measured pay for it (stats/open team, measured first,
  // had the worst ratio of most runs before this pass).
  for (let i = 0; i < WARMUP; i++) for (const [, path, , cached] of cases) await request(path, cached);

  const rows = [];
  for (const [name, path, target, cached] of cases) {
    const get = () => request(path, cached);
    for (let i = 0; i < WARMUP; i++) await get();
    rec.start();
    await get();
    const statements = rec.stop();
    // The same statistic counting suppressed findings: what it costs without decisions.
    const paired =
      DECISIONS > 0 && path.startsWith('/stats/') ? `${path}${path.includes('?') ? '&' : '?'}includeSuppressed=true` : undefined;
    const httpTimes: number[] = [];
    const rawTimes: number[] = [];
    const pairedTimes: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      let t = performance.now();
      await get();
      httpTimes.push(performance.now() - t);
      t = performance.now();
      for (const s of statements) await store.query(s.sql, s.params, s.opts);
      rawTimes.push(performance.now() - t);
      if (paired) {
        t = performance.now();
        await request(paired);
        pairedTimes.push(performance.now() - t);
      }
    }
    const h = summarise(httpTimes);
    const raw = summarise(rawTimes);
    const unsuppressed = paired ? summarise(pairedTimes) : undefined;
    const row = {
      name,
      path,
      cached: cached ?? false,
      queries: statements.length,
      http: h,
      raw,
      ratio: statements.length > 0 ? +(h.p50 / raw.p50).toFixed(2) : null,
      ...(unsuppressed ? { includeSuppressed: unsuppressed, suppressionRatio: +(h.p50 / unsuppressed.p50).toFixed(2) } : {}),
      target1m: target,
      meetsTarget: target === undefined || scale !== '1m' ? undefined : h.p50 <= target,
    };
    rows.push(row);
    console.log(
      `${name.padEnd(32)} http p50 ${h.p50.toFixed(1).padStart(6)} p95 ${h.p95.toFixed(1).padStart(6)} | raw p50 ${raw.p50.toFixed(1).padStart(6)} p95 ${raw.p95.toFixed(1).padStart(6)} | ×${row.ratio?.toFixed(2) ?? '  – '} (${statements.length} q)` +
        (target && scale === '1m' ? ` target ${target} ms ${h.p50 <= target ? 'ok' : 'MISSED'}` : '') +
        (unsuppressed ? ` | includeSuppressed p50 ${unsuppressed.p50.toFixed(1)} (×${row.suppressionRatio?.toFixed(2)})` : ''),
    );
  }
  for (const c of [client!, cachedClient!]) c.close();
  if (DECISIONS > 0) await removeDecisions(store);
  for (const server of servers) server.close();
  await store.close();
  // The cache's entries, and the meta key BullMQ writes for the (unused) queue of POST /checks.
  const cachedKeys = [...(await redis.keys(`${cacheNames.keyPrefix}:*`)), ...(await redis.keys(`${cacheNames.queuePrefix}:*`))];
  if (cachedKeys.length > 0) await redis.del(...cachedKeys);
  redis.disconnect();
  results[scale] = {
    date: new Date().toISOString(),
    machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version },
    dataset,
    runs: RUNS,
    client: 'bench/lib/http-client.ts (minimal keep-alive HTTP/1.1; node:http before 2026-11-24)',
    ...(DECISIONS > 0 ? { decisions: DECISIONS } : {}),
    rows,
  };
  // A partial run (--only) must not replace the latest full one.
  const written = writeResults(
    `api-${scale}${DECISIONS > 0 ? `-decisions${DECISIONS}` : ''}${ONLY.length > 0 ? '-partial' : ''}`,
    results[scale],
  );
  console.log(`written to ${written.latest} and ${written.kept}`);
}
process.exit(0);
