/**
 * npm run bench:batch-profile [-- --scale 100k --sizes 1,35,35,500]
 *
 * Where a batch's time goes (issue 32): on a copy of a benchmark dataset, nothing else running,
 * applies batches of the given sizes (the scans that follow the dataset's history) one after the
 * other and prints each statement of each batch with its time, and per batch the total, the
 * statements' share and the derivation's (JavaScript) rest. The first batch of a process pays
 * for cold caches: repeat a size to see the warm figure.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { ingestBatch } from '../src/ingest/batch.js';
import { Interned } from '../src/ingest/interned.js';
import { prepareReport } from '../src/ingest/prepare.js';
import type { NormalizedReport } from '../src/ingest/normalize.js';
import { openStore, type Store } from '../src/storage/gateway.js';
import { nowSeconds } from '../src/domain/time.js';
import { dataDirOf, SCALES, type Scale } from './lib/dataset.js';
import { copyDataset } from './lib/load-procs.js';
import { syntheticReports } from './lib/synthetic.js';
import { writeResults } from './lib/results.js';

const args = process.argv.slice(2);
const arg = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1]! : fallback;
};
const SCALE = arg('scale', '100k') as Scale;
const SIZES = arg('sizes', '1,35,1,35,500').split(',').map(Number);
if (!fs.existsSync(path.join(dataDirOf(SCALE), 'dataset.json'))) throw new Error(`build the ${SCALE} dataset first (npm run bench:load)`);

interface Timed {
  kind: string;
  what: string;
  ms: number;
}

/** The store, each statement timed (from the call to its answer: nothing else runs here). */
function timedStore(store: Store, log: Timed[]): Store {
  const what = (sql: string) => sql.replace(/\s+/g, ' ').trim().slice(0, 90);
  const time = async <T>(kind: string, label: string, run: () => Promise<T>): Promise<T> => {
    const t = performance.now();
    try {
      return await run();
    } finally {
      log.push({ kind, what: label, ms: +(performance.now() - t).toFixed(1) });
    }
  };
  return {
    ...store,
    query: (sql, params, opts) => time('query', what(sql), () => store.query(sql, params, opts)),
    queryFields: (sql, params) => time('query', what(sql), () => store.queryFields(sql, params)),
    command: (sql, params, opts) => time('command', what(sql), () => store.command(sql, params, opts)),
    insert: (table, rows, opts) =>
      rows.length === 0 ? Promise.resolve() : time('insert', `${table} (${rows.length} rows)`, () => store.insert(table, rows, opts)),
  };
}

const copyDir = path.join(os.tmpdir(), `vulndb-batch-profile-${SCALE}-${randomUUID().slice(0, 8)}`);
copyDataset(dataDirOf(SCALE), copyDir);
process.on('exit', () => fs.rmSync(copyDir, { recursive: true, force: true }));
const store = await openStore({
  url: undefined,
  database: 'vulndb',
  user: 'default',
  password: '',
  embeddedPath: path.join(copyDir, 'clickhouse'),
});
const { targets, scans } = SCALES[SCALE];
const reports = syntheticReports({ targets, scans: scans + 100, churn: 0.01, skipScans: scans });
// As the worker's batcher holds them: one set of shared texts for the reports and the findings loaded.
const interned = new Interned();
const next = (): NormalizedReport => {
  const prepared = prepareReport(reports.next().value!, { maxEventAgeDays: 0, now: nowSeconds(), interned });
  if (prepared.kind !== 'report') throw new Error(`unexpected ${prepared.kind} report`);
  return prepared.report;
};

const batches = [];
for (const size of SIZES) {
  const batch = Array.from({ length: size }, next);
  const log: Timed[] = [];
  const t = performance.now();
  const result = await ingestBatch(timedStore(store, log), batch, { interned });
  const totalMs = performance.now() - t;
  const statementsMs = log.reduce((n, s) => n + s.ms, 0);
  console.log(
    `\nbatch of ${size}: ${totalMs.toFixed(0)} ms, ${log.length} statements ${statementsMs.toFixed(0)} ms, the rest (derivation) ${(totalMs - statementsMs).toFixed(0)} ms; ${JSON.stringify(result.counts)}`,
  );
  for (const s of log) console.log(`  ${String(s.ms).padStart(8)} ms  ${s.kind.padEnd(7)} ${s.what}`);
  batches.push({ size, totalMs: +totalMs.toFixed(1), statementsMs: +statementsMs.toFixed(1), counts: result.counts, statements: log });
}
await store.close();
const written = writeResults(`batch-profile-${SCALE}`, {
  date: new Date().toISOString(),
  host: { model: os.cpus()[0]?.model, cpus: os.cpus().length, loadavg: os.loadavg() },
  scale: SCALE,
  batches,
});
console.log(`written to ${written.latest}`);
process.exit(0);
