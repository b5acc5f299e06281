/**
 * npm run bench:api-layouts [-- --scale 100k|1m --runs 60]
 *
 * The database API on the two store layouts (CLICKHOUSE_LAYOUT, docs/SCALING.md) in one run: the
 * benchmark dataset of the scale in both layouts (bench/lib/dataset.ts; the cluster copy copied from
 * the single layout's tables once, with a tenth of each key-value table's keys written twice and left
 * unmerged), an uncached API on each,
 * and for every case sequential requests alternated between the layouts, each followed by the very
 * same SQL run directly ("raw"). The ratio cluster / single of the p50s is the cost of the cluster
 * layout's reads within one stretch of the shared machine's speed.
 * Results: bench/results/api-layouts-<scale>.json (each run also kept under bench/results/runs/).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { Redis } from 'ioredis';
import { createDbApi } from '../src/app.js';
import type { StoreLayout } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { checksQueue } from '../src/queue/producer.js';
import type { QueryParams, StatementOptions, Store } from '../src/storage/gateway.js';
import { LARGE_TEAM, openDataset, type Scale } from './lib/dataset.js';
import { connectBenchClient } from './lib/http-client.js';
import { ownedStore } from './lib/owned-store.js';
import { writeResults } from './lib/results.js';
import { optionOf } from './lib/args.js';

const args = process.argv.slice(2);
const arg = optionOf(args);
const scale = arg('scale', '100k') as Scale;
const RUNS = Number(arg('runs', '60'));
const WARMUP = 5;

const team = `team=${LARGE_TEAM}`;
const range = 'minDate=2024-01-10&maxDate=2024-01-20';
const CASES: [string, string][] = [
  ['findings team page 1', `/findings?${team}`],
  ['findings team page 500', `/findings?${team}&page=500`],
  ['findings team OPEN page 1', `/findings?${team}&status=OPEN`],
  ['findings global page 1', '/findings'],
  ['findings team by score', `/findings?${team}&sortBy=-score`],
  ['stats/open team', `/stats/open?${team}`],
  ['stats/open team dates', `/stats/open?${team}&${range}`],
  ['stats/mttr team', `/stats/mttr?${team}`],
  ['stats/exposure team', `/stats/exposure?${team}`],
  ['stats/open global', '/stats/open'],
  ['stats/fixed global dates', `/stats/fixed?${range}`],
  ['stats/mttr global', '/stats/mttr'],
  ['stats/exposure global', '/stats/exposure'],
  ['stats/exposure/current global', '/stats/exposure/current'],
  ['stats/issues', '/stats/issues'],
];

const p50 = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const h = 0.5 * (s.length - 1);
  const k = Math.floor(h);
  return +(s[k]! + (h - k) * ((s[k + 1] ?? s[k]!) - s[k]!)).toFixed(2);
};

interface Side {
  layout: StoreLayout;
  store: Store;
  get: (path: string) => Promise<void>;
  record: (path: string) => Promise<{ sql: string; params?: QueryParams; opts?: StatementOptions }[]>;
  close: () => void;
}

async function side(layout: StoreLayout, redis: Redis): Promise<Side> {
  const { store } = await openDataset(scale, layout);
  let log: { sql: string; params?: QueryParams; opts?: StatementOptions }[] | undefined;
  const recorded: Store = {
    ...store,
    query: (sql, params, opts) => {
      log?.push({ sql, ...(params ? { params } : {}), ...(opts ? { opts } : {}) });
      return store.query(sql, params, opts);
    },
  };
  const app = createDbApi({
    store: recorded,
    ...(await ownedStore(recorded, createLogger('warn'))),
    queue: checksQueue(redis, { queuePrefix: 'bench-unused', keyPrefix: 'bench-unused' }),
    log: createLogger('warn'),
    maxReportBytes: 1 << 20,
    pageSizeDefault: 20,
    pageSizeMax: 100,
  });
  const server = http.createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const client = connectBenchClient('127.0.0.1', (server.address() as AddressInfo).port);
  const get = async (path: string) => {
    const answer = await client.get(path);
    if (answer.status !== 200) throw new Error(`${layout} ${path}: ${answer.status} ${answer.body.toString()}`);
  };
  const record = async (path: string) => {
    log = [];
    await get(path);
    const out = log;
    log = undefined;
    return out;
  };
  return { layout, store, get, record, close: () => (client.close(), server.close()) };
}

const redis = new Redis('redis://127.0.0.1:6379');
const sides = [await side('single', redis), await side('cluster', redis)];
const cluster = sides[1]!.store;
await cluster.command('SYSTEM STOP MERGES');
const versions = [];
for (const table of ['finding_latest_events', 'issue_objects', 'target_objects', 'finding_total_values']) {
  const [v] = await cluster.query<{ parts: number; rows: number; keys: number }>(
    `SELECT uniqExact(_part) AS parts, count() AS rows, (SELECT count() FROM ${table} FINAL) AS keys FROM ${table}`,
  );
  versions.push({ table, ...v });
}
console.log(`${scale}, cluster layout's key-value tables:`, JSON.stringify(versions));

for (const s of sides) for (let i = 0; i < WARMUP; i++) for (const [, path] of CASES) await s.get(path);
const rows = [];
for (const [name, path] of CASES) {
  const statements = await Promise.all(sides.map((s) => s.record(path)));
  const times = sides.map(() => ({ http: [] as number[], raw: [] as number[] }));
  for (let i = 0; i < RUNS; i++) {
    // Alternated: single, cluster (and the other way round every second run).
    const order = i % 2 === 0 ? [0, 1] : [1, 0];
    for (const j of order) {
      const s = sides[j]!;
      let t = performance.now();
      await s.get(path);
      times[j]!.http.push(performance.now() - t);
      t = performance.now();
      for (const q of statements[j]!) await s.store.query(q.sql, q.params, q.opts);
      times[j]!.raw.push(performance.now() - t);
    }
  }
  const [single, clustered] = times.map((t) => ({ http: p50(t.http), raw: p50(t.raw) }));
  const row = {
    name,
    path,
    queries: statements.map((s) => s.length),
    single,
    cluster: clustered,
    httpRatio: +(clustered!.http / single!.http).toFixed(2),
    rawRatio: +(clustered!.raw / single!.raw).toFixed(2),
  };
  rows.push(row);
  console.log(
    `${name.padEnd(32)} http p50 ${single!.http.toFixed(1).padStart(6)} / ${clustered!.http.toFixed(1).padStart(6)} ×${row.httpRatio.toFixed(2)} | raw p50 ${single!.raw.toFixed(1).padStart(6)} / ${clustered!.raw.toFixed(1).padStart(6)} ×${row.rawRatio.toFixed(2)}`,
  );
}
for (const s of sides) s.close();
for (const s of sides) await s.store.close();
const cached = await redis.keys('bench-unused:*');
if (cached.length > 0) await redis.del(...cached);
redis.disconnect();
const written = writeResults(`api-layouts-${scale}`, {
  date: new Date().toISOString(),
  machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version },
  scale,
  runs: RUNS,
  clusterKeyValueTables: versions,
  rows,
});
console.log(`written to ${written.latest} and ${written.kept}`);
process.exit(0);
