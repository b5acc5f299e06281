/**
 * npm run bench:ingest [-- --reports 200000 --mode queue|direct --bundle 250 --keep]
 *
 * Ingestion throughput of a synthetic history (10 vulnerabilities per report) into a fresh
 * embedded store; committed reports are sampled every second until all are in.
 *   queue  (default) end to end: a producer process enqueues while this process runs the ingest
 *          worker. --bundle N (default 250, what `vulndb import` sends): bundles of N reports on the
 *          checks-bulk queue; --bundle 1: a job per report on the checks queue, as scanners send.
 *          With --prefill the whole history is enqueued first and the worker's drain rate is measured
 *          (the producer then does not compete for this machine's two cores).
 *   direct the replay path of `vulndb import --direct`: the history is generated as JSON lines in
 *          another thread (bench/lib/synthetic-texts.ts), and each line is parsed here and handed to
 *          the same batcher, with the same batches in flight, without the queue.
 * Next to it, the raw insert rate of the same FOUND event rows into the same engine (inserts of
 * 10,000 rows, built like the worker builds them) is measured in the same run, and the CPU time the
 * ingestion took: this process (worker and engine), Redis, and the producer (queue mode).
 * Results: bench/results/ingest-<variant>-<reports>.json (each run also kept under bench/results/runs/) and the console.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { loadConfig } from '../src/config.js';
import { directBatchesInFlight } from '../src/cli/import.js';
import { eventRows } from '../src/ingest/rows.js';
import { ReportBatcher } from '../src/ingest/batcher.js';
import { prepareReport, type Prepared } from '../src/ingest/prepare.js';
import { createLogger } from '../src/log.js';
import { startService } from '../src/service.js';
import { replayLines } from './lib/replay-lines.js';
import { syntheticTexts } from './lib/synthetic-texts.js';
import { syntheticReports, targetName, teamName, teamOf, VULNS_PER_REPORT } from './lib/synthetic.js';
import { TEAMS } from './lib/dataset.js';
import { writeResults } from './lib/results.js';
import { targetId } from '../src/domain/ids.js';
import { BUNDLE_MAX_REPORTS, BUNDLE_SIZE } from '../src/queue/contract.js';
import { ownedStore } from './lib/owned-store.js';
import { optionOf } from './lib/args.js';

const args = process.argv.slice(2);
const arg = optionOf(args);
const REPORTS = Number(arg('reports', '200000'));
const SCANS = 25;
const TARGETS = Math.ceil(REPORTS / SCANS);
const KEEP = args.includes('--keep');
const MODE = arg('mode', 'queue');
const BUNDLE = Number(arg('bundle', String(BUNDLE_SIZE)));
if (!Number.isInteger(BUNDLE) || BUNDLE < 1 || BUNDLE > BUNDLE_MAX_REPORTS) throw new Error(`--bundle must be 1 to ${BUNDLE_MAX_REPORTS}`);
// queue mode: enqueue the whole history before the worker starts, to measure the worker alone.
const PREFILL = args.includes('--prefill');
if (MODE !== 'queue' && MODE !== 'direct') throw new Error('--mode must be queue or direct');
const DATA_DIR = arg('data-dir', path.join(os.tmpdir(), `vulndb-bench-ingest-${REPORTS}`));
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

const log = createLogger('warn');
fs.rmSync(DATA_DIR, { recursive: true, force: true });
const config = loadConfig({
  ...process.env,
  DATA_DIR,
  REDIS_URL,
  LOG_LEVEL: 'warn',
  DB_API_PORT: '0',
  METRICS_API_PORT: '0',
  ADMIN_PORT: '0',
});
const id = randomUUID().slice(0, 8);
const names = { queuePrefix: `bench-${id}`, keyPrefix: `bench-${id}` };

console.log(
  `ingest benchmark (${MODE}${MODE === 'queue' ? `, ${BUNDLE > 1 ? `bundles of ${BUNDLE}` : 'a job per report'}` : ''}): ${REPORTS} reports × ${VULNS_PER_REPORT} vulnerabilities, ${TARGETS} targets, batch ${config.ingest.batchSize}`,
);
let produced: { sent: number; seconds: number; pausedSeconds: number; cpuSeconds: number } | undefined;
const produce = (maxPending: number) =>
  new Promise<void>((resolve) => {
    const producer = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'bench/lib/produce.ts',
        REDIS_URL,
        names.queuePrefix,
        String(TARGETS),
        String(SCANS),
        String(maxPending),
        String(BUNDLE),
      ],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    producer.stdout.on('data', (d: Buffer) => (produced = JSON.parse(d.toString())));
    producer.on('exit', () => resolve());
  });
if (MODE === 'queue' && PREFILL) {
  await produce(Number.MAX_SAFE_INTEGER);
  console.log(`prefilled the queue: ${produced?.sent} reports in ${produced?.seconds.toFixed(1)} s`);
}
const service = await startService(config, { api: false, worker: MODE === 'queue', log, names });
const count = async (table: string) => (await service.store.query<{ n: number }>(`SELECT count() AS n FROM ${table}`))[0]!.n;

// Every target belongs to a team before its first report, as in production: each findings insert
// then also feeds the team copies (sql/0009_team_copies.sql).
await service.store.insert(
  'target_teams',
  Array.from({ length: TARGETS }, (_, i) => ({ team: teamName(teamOf(i, TEAMS)), target_id: targetId(targetName(i)), associated_seq: i })),
);

// CPU used by this process (the worker, the engine's threads included) and by Redis, during
// ingestion: what the run costs per report, against what the machine's cores allow.
const redisCpu = async (redis: Redis) => {
  const info = await redis.info('cpu');
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
  return field('used_cpu_user') + field('used_cpu_sys');
};
const cpuRedis = new Redis(REDIS_URL);
const redisCpuBefore = await redisCpu(cpuRedis);
const cpuBefore = process.cpuUsage();

// --- ingestion --------------------------------------------------------------------------------
const started = performance.now();
if (MODE === 'queue') {
  if (!PREFILL) void produce(20_000);
} else {
  const concurrency = directBatchesInFlight(config.ingest.concurrency);
  const batcher = new ReportBatcher({
    store: service.store,
    ...(await ownedStore(service.store, log)),
    batchSize: config.ingest.batchSize,
    waitMs: config.ingest.batchWaitMs,
    concurrency,
    maxEventAgeDays: 0,
    log,
  });
  // JSON lines from another thread, parsed here as `vulndb import --direct` parses what it reads.
  void replayLines(batcher, syntheticTexts({ targets: TARGETS, scans: SCANS, churn: 0.01 }), concurrency * config.ingest.batchSize);
}

const samples: { t: number; committed: number }[] = [];
for (;;) {
  await new Promise((r) => setTimeout(r, 1000));
  const committed = await count('sources');
  const t = (performance.now() - started) / 1000;
  samples.push({ t, committed });
  if (samples.length % 10 === 0) console.log(`  ${t.toFixed(0)} s: ${committed} reports committed (${Math.round(committed / t)}/s)`);
  if (committed >= REPORTS) break;
}
const seconds = samples[samples.length - 1]!.t;
const workerCpu = process.cpuUsage(cpuBefore);
const cpu = {
  workerSeconds: +((workerCpu.user + workerCpu.system) / 1e6).toFixed(1),
  redisSeconds: +((await redisCpu(cpuRedis)) - redisCpuBefore).toFixed(1),
  // The producer's whole run (mostly inside the ingestion's; absent in direct mode).
  producerSeconds: produced && !PREFILL ? +produced.cpuSeconds.toFixed(1) : 0,
};
cpuRedis.disconnect();
const cpuSeconds = cpu.workerSeconds + cpu.redisSeconds + cpu.producerSeconds;
const windows = samples
  .slice(5)
  .map((s, i, a) => (i >= 10 ? (s.committed - a[i - 10]!.committed) / (s.t - a[i - 10]!.t) : undefined))
  .filter((x): x is number => x !== undefined)
  .sort((a, b) => a - b);
const [events, findings] = [await count('finding_events'), await count('findings FINAL')];

// --- raw insert of the same event rows --------------------------------------------------------
await service.store.command('CREATE TABLE bench_raw_events AS finding_events');
const sample: Record<string, unknown>[] = [];
for (const raw of syntheticReports({ targets: TARGETS, scans: SCANS, churn: 0.01 })) {
  const p = prepareReport(raw, { maxEventAgeDays: 0, now: 0 }) as Extract<Prepared, { kind: 'report' }>;
  sample.push(...eventRows([p.report]));
  if (sample.length >= 200_000) break;
}
const rawStarted = performance.now();
for (let i = 0; i < sample.length; i += 10_000) await service.store.insert('bench_raw_events', sample.slice(i, i + 10_000));
const rawSeconds = (performance.now() - rawStarted) / 1000;

await service.close();
const redis = new Redis(REDIS_URL);
const leftovers = await redis.keys(`bench-${id}:*`);
if (leftovers.length) await redis.del(...leftovers);
await redis.quit();
if (!KEEP) fs.rmSync(DATA_DIR, { recursive: true, force: true });

const result = {
  date: new Date().toISOString(),
  machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version },
  parameters: {
    mode: MODE + (PREFILL ? ' (prefilled)' : ''),
    bundleSize: MODE === 'queue' ? BUNDLE : undefined,
    teams: TEAMS,
    workerConcurrency: config.ingest.concurrency,
    reports: REPORTS,
    targets: TARGETS,
    scans: SCANS,
    vulnerabilitiesPerReport: VULNS_PER_REPORT,
    batchSize: config.ingest.batchSize,
  },
  endToEnd: {
    seconds: +seconds.toFixed(1),
    reportsPerSecond: Math.round(REPORTS / seconds),
    eventsPerSecond: Math.round(events / seconds),
    sustainedReportsPerSecond: {
      median10s: Math.round(windows[Math.floor(windows.length / 2)] ?? 0),
      min10s: Math.round(windows[0] ?? 0),
    },
    producer: produced,
  },
  cpu: {
    ...cpu,
    msPerReport: +((cpuSeconds * 1000) / REPORTS).toFixed(2),
    coresBusy: +(cpuSeconds / seconds).toFixed(2),
    cores: os.cpus().length,
  },
  stored: { reports: REPORTS, findings, events },
  rawInsert: { rows: sample.length, seconds: +rawSeconds.toFixed(2), eventsPerSecond: Math.round(sample.length / rawSeconds) },
};
const variant = `${MODE}${MODE === 'queue' && BUNDLE > 1 ? `-bundles${BUNDLE}` : ''}${PREFILL ? '-prefilled' : ''}${config.ingest.concurrency > 1 ? `-c${config.ingest.concurrency}` : ''}${config.ingest.batchSize !== 4000 ? `-b${config.ingest.batchSize}` : ''}`;
const written = writeResults(`ingest-${variant}-${REPORTS}`, result);
console.log(JSON.stringify(result, null, 2));
console.log(`written to ${written.latest} and ${written.kept}`);
process.exit(0);
