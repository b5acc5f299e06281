/**
 * npm run bench:batch-profile [-- --scale 100k --sizes 1,35,200 --repeat 5 --bulk 4000 --label after]
 *
 * Where a batch's time goes (issue 32): on a copy of a benchmark dataset, nothing else of the
 * service running, applies batches of the given sizes (the scans that follow the dataset's
 * history), the sizes in turn `--repeat` times, and times each statement of each batch: those of
 * ingestBatch and the two the worker runs after a commit (the batch's teams for the cache, and the
 * findings totals' rewrite after a status change). `--bulk N` ends with one batch of N reports,
 * what a backlog's batches cost per report. Per size, the console and the result file give the
 * median of each statement over the repeats, the median batch and its engine time per report;
 * the first round pays for cold caches and is left out of the medians when there are several.
 * The host is shared: compare figures of one run, or alternated runs; CPU (the process's, the
 * engine's threads included) is less swayed by other work than time. Results:
 * bench/results/batch-profile-<scale>[-<label>].json.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ingestBatch } from '../src/ingest/batch.js';
import { Interned } from '../src/ingest/interned.js';
import { prepareReport } from '../src/ingest/prepare.js';
import { rewriteTotals } from '../src/ingest/totals.js';
import type { NormalizedReport } from '../src/ingest/normalize.js';
import { ProcessLocks } from '../src/locks/target-locks.js';
import type { Store } from '../src/storage/gateway.js';
import { teamsOf } from '../src/teams/associations.js';
import { nowSeconds } from '../src/domain/time.js';
import { dataDirOf, openDatasetCopy, SCALES, type Scale } from './lib/dataset.js';
import { syntheticReports } from './lib/synthetic.js';
import { writeResults } from './lib/results.js';
import { median } from './lib/median.js';
import { optionOf } from './lib/args.js';

const args = process.argv.slice(2);
const arg = optionOf(args);
const SCALE = arg('scale', '100k') as Scale;
const SIZES = arg('sizes', '1,35,200').split(',').map(Number);
const REPEAT = Number(arg('repeat', '5'));
const BULK = Number(arg('bulk', '0'));
const LABEL = arg('label', '');
if (!fs.existsSync(path.join(dataDirOf(SCALE), 'dataset.json'))) throw new Error(`build the ${SCALE} dataset first (npm run bench:load)`);

const r1 = (x: number) => +x.toFixed(1);

interface Timed {
  kind: string;
  what: string;
  ms: number;
  /** CPU of the process meanwhile (the engine's threads included): less swayed than `ms` by a busy host. */
  cpuMs: number;
}

/** The store, each statement timed (from the call to its answer: nothing else runs here). */
function timedStore(store: Store, log: Timed[]): Store {
  const what = (sql: string) => sql.replace(/\s+/g, ' ').trim().slice(0, 90);
  const time = async <T>(kind: string, label: string, run: () => Promise<T>): Promise<T> => {
    const t = performance.now();
    const cpu = process.cpuUsage();
    try {
      return await run();
    } finally {
      const used = process.cpuUsage(cpu);
      log.push({ kind, what: label, ms: +(performance.now() - t).toFixed(1), cpuMs: +((used.user + used.system) / 1000).toFixed(1) });
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

const store = await openDatasetCopy(SCALE, 'batch-profile');
const locks = new ProcessLocks();
const { targets, scans } = SCALES[SCALE];
const reports = syntheticReports({ targets, scans: scans + 100, churn: 0.01, skipScans: scans });
// As the worker's batcher holds them: one set of shared texts for the reports and the findings loaded.
const interned = new Interned();
const next = (): NormalizedReport => {
  const prepared = prepareReport(reports.next().value!, { maxEventAgeDays: 0, now: nowSeconds(), interned });
  if (prepared.kind !== 'report') throw new Error(`unexpected ${prepared.kind} report`);
  return prepared.report;
};

interface BatchRun {
  size: number;
  round: number;
  totalMs: number;
  statementsMs: number;
  statementsCpuMs: number;
  counts: object;
  statements: Timed[];
}

/** One batch as the worker applies it: ingestBatch, then its post-commit reads and writes. */
async function runBatch(size: number, round: number): Promise<BatchRun> {
  const batch = Array.from({ length: size }, next);
  const log: Timed[] = [];
  const timed = timedStore(store, log);
  const t = performance.now();
  const result = await ingestBatch(timed, batch, { interned });
  await teamsOf(timed, [...new Set(batch.map((r) => r.targetId))]);
  if (result.counts.statusChanges > 0) await rewriteTotals(timed, locks);
  const totalMs = performance.now() - t;
  const statementsMs = log.reduce((n, s) => n + s.ms, 0);
  const statementsCpuMs = log.reduce((n, s) => n + s.cpuMs, 0);
  console.log(
    `batch of ${size} (round ${round}): ${totalMs.toFixed(0)} ms, ${log.length} statements ${statementsMs.toFixed(0)} ms (CPU ${statementsCpuMs.toFixed(0)} ms); ${JSON.stringify(result.counts)}`,
  );
  return {
    size,
    round,
    totalMs: r1(totalMs),
    statementsMs: r1(statementsMs),
    statementsCpuMs: r1(statementsCpuMs),
    counts: result.counts,
    statements: log,
  };
}

/** Per size: the median of each statement (by its text and kind, row counts aside) and of the batch. */
function summary(runs: BatchRun[]) {
  return [...new Set(runs.map((r) => r.size))].map((size) => {
    const all = runs.filter((r) => r.size === size);
    const warm = all.length > 1 ? all.filter((r) => r.round > 0) : all;
    const byStatement = new Map<string, Timed[]>();
    for (const run of warm) {
      for (const s of run.statements) {
        const key = `${s.kind.padEnd(7)} ${s.what.replace(/ \(\d+ rows\)$/, '')}`;
        byStatement.set(key, [...(byStatement.get(key) ?? []), s]);
      }
    }
    const statementsMs = median(warm.map((r) => r.statementsMs));
    const statementsCpuMs = median(warm.map((r) => r.statementsCpuMs));
    return {
      size,
      batches: warm.length,
      totalMsP50: r1(median(warm.map((r) => r.totalMs))),
      statementsMsP50: r1(statementsMs),
      statementsCpuMsP50: r1(statementsCpuMs),
      statementsMsPerReport: +(statementsMs / size).toFixed(3),
      statementsCpuMsPerReport: +(statementsCpuMs / size).toFixed(3),
      statements: [...byStatement].map(([what, ts]) => ({
        what,
        batches: ts.length,
        msP50: r1(median(ts.map((t) => t.ms))),
        msMax: r1(Math.max(...ts.map((t) => t.ms))),
        cpuMsP50: r1(median(ts.map((t) => t.cpuMs))),
      })),
    };
  });
}

const runs: BatchRun[] = [];
for (let round = 0; round < REPEAT; round++) for (const size of SIZES) runs.push(await runBatch(size, round));
if (BULK > 0) runs.push(await runBatch(BULK, 0));
await store.close();

const sizes = summary(runs);
for (const s of sizes) {
  console.log(
    `\nbatch of ${s.size}, median of ${s.batches}: ${s.totalMsP50} ms, statements ${s.statementsMsP50} ms (${s.statementsMsPerReport} ms per report), ` +
      `their CPU ${s.statementsCpuMsP50} ms (${s.statementsCpuMsPerReport} per report)`,
  );
  for (const st of s.statements) {
    console.log(
      `  ${String(st.msP50).padStart(8)} ms (max ${String(st.msMax).padStart(6)}, CPU ${String(st.cpuMsP50).padStart(6)})  ${st.what}`,
    );
  }
}
const written = writeResults(`batch-profile-${SCALE}${LABEL ? `-${LABEL}` : ''}`, {
  date: new Date().toISOString(),
  host: { model: os.cpus()[0]?.model, cpus: os.cpus().length, loadavg: os.loadavg() },
  scale: SCALE,
  settings: { sizes: SIZES, repeat: REPEAT, bulk: BULK || null },
  sizes,
  batches: runs,
});
console.log(`written to ${written.latest}`);
process.exit(0);
