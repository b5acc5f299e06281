import http from 'node:http';
import os from 'node:os';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { createDbApi } from '../src/app.js';
import { ingestBatch } from '../src/ingest/batch.js';
import { Interned } from '../src/ingest/interned.js';
import { prepareReport } from '../src/ingest/prepare.js';
import { rewriteTotals } from '../src/ingest/totals.js';
import { createLogger } from '../src/log.js';
import { checksQueue } from '../src/queue/producer.js';
import { nowSeconds } from '../src/domain/time.js';
import { LARGE_TEAM, openDatasetCopy, SCALES, type Scale } from './lib/dataset.js';
import { ownedStore } from './lib/owned-store.js';
import { syntheticReports } from './lib/synthetic.js';
import { optionOf } from './lib/args.js';
import { writeResults } from './lib/results.js';

const arg = optionOf(process.argv.slice(2));
const SCALE = arg('scale', '100k') as Scale;
const BATCHES = Number(arg('batches', '60'));
/** Seconds to wait before each reading after the last batch. */
const WAITS = arg('waits', '15,30,60').split(',').map(Number);
const store = await openDatasetCopy(SCALE, 'after-ingest');
const log = createLogger('warn');
const owned = await ownedStore(store, log);
const redis = new Redis('redis://127.0.0.1:6379');
const app = createDbApi({
  store,
  ...owned,
  queue: checksQueue(redis, { queuePrefix: 'bench-unused', keyPrefix: 'bench-unused' }),
  log,
  maxReportBytes: 1 << 20,
  pageSizeDefault: 20,
  pageSizeMax: 100,
});
const server = http.createServer(app.callback());
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
const team = `team=${LARGE_TEAM}`;
const paths = [
  `/stats/open?${team}&minDate=2024-01-05&maxDate=2024-01-12`,
  `/stats/fixed?${team}&minDate=2024-01-05&maxDate=2024-01-12`,
  `/stats/open?${team}&atDate=2024-01-15`,
  `/stats/mttr?${team}`,
  `/stats/exposure?${team}`,
  `/stats/assets?${team}`,
  `/findings?${team}&page=50`,
  `/findings?${team}&page=3&status=OPEN`,
];
const rounds: { label: string; readsMs: number[]; sumMs: number; merging: number; parts: Record<string, number> }[] = [];
async function timeReads(label: string) {
  const per: number[] = [];
  for (const p of paths) {
    const ts: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t = performance.now();
      const res = await fetch(base + p);
      await res.text();
      ts.push(performance.now() - t);
    }
    ts.sort((a, b) => a - b);
    per.push(ts[2]!);
  }
  const parts = await store.query<{ table: string; n: number }>(
    `SELECT table, toUInt32(count()) AS n FROM system.parts WHERE active AND database = currentDatabase()
     GROUP BY table HAVING n > 1 ORDER BY n DESC LIMIT 12`,
  );
  const merges = await store.query<{ n: number }>('SELECT toUInt32(count()) AS n FROM system.merges');
  const sumMs = per.reduce((a, b) => a + b, 0);
  rounds.push({
    label,
    readsMs: per.map((x) => +x.toFixed(1)),
    sumMs: +sumMs.toFixed(1),
    merging: merges[0]?.n ?? 0,
    parts: Object.fromEntries(parts.map((p) => [p.table, p.n])),
  });
  console.log(
    `${label}: reads sum of medians ${sumMs.toFixed(0)} ms [${per.map((x) => x.toFixed(0)).join(' ')}]; merging ${merges[0]?.n}; parts ${parts.map((p) => `${p.table}:${p.n}`).join(' ')}`,
  );
}
await timeReads('warm-up');
await timeReads('before');
const { targets, scans } = SCALES[SCALE];
const reports = syntheticReports({ targets, scans: scans + 100, churn: 0.01, skipScans: scans });
const interned = new Interned();
for (let b = 0; b < BATCHES; b++) {
  const batch = Array.from({ length: 200 }, () => {
    const p = prepareReport(reports.next().value!, { maxEventAgeDays: 0, now: nowSeconds(), interned });
    if (p.kind !== 'report') throw new Error(p.kind);
    return p.report;
  });
  const result = await ingestBatch(store, batch, { interned });
  if (result.counts.statusChanges > 0) await rewriteTotals(store, owned.locks);
}
await timeReads(`after ${BATCHES} batches of 200`);
// By default 15, 45 and 105 s after the last batch.
for (const wait of WAITS) {
  await new Promise((r) => setTimeout(r, wait * 1000));
  await timeReads(`+${wait} s more`);
}
await store.close();
redis.disconnect();
const written = writeResults(`after-ingest-${SCALE}`, {
  date: new Date().toISOString(),
  host: { model: os.cpus()[0]?.model, cpus: os.cpus().length, loadavg: os.loadavg() },
  scale: SCALE,
  settings: { batches: BATCHES, reportsPerBatch: 200, waits: WAITS, reads: paths },
  rounds,
  afterOverBefore: +(rounds[rounds.length - 1]!.sumMs / rounds[1]!.sumMs).toFixed(2),
});
console.log(`written to ${written.latest}`);
process.exit(0);
