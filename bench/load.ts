/**
 * npm run bench:load [-- --scale 100k|1m --duration 300 --rate 500 --connections 10 --warmup 10]
 * npm run bench:load -- --scale 100k --rates 0,100,500 --duration 120 [--bulk 8000] [--service-dir DIR]
 *
 * `--rates`: phases on one service, in the order given (0: an idle phase), each with its own
 * warm-up and window; every phase's figures are also ratios to the last idle phase before it
 * (issue 32; `--rates 0,100,0,500,0` brackets each rate, and records how far the idle phases
 * differ: `idleSpread`, max/min of their requests/s, the host's noise). After
 * the phases and the drain, `--bulk N` enqueues N reports at once (a backlog) and records the
 * engine time per report of the batches that drain it: the bulk replay the paced batches compare
 * to. `--service-dir` runs the service of another checkout (an earlier commit: before/after runs).
 *
 * The service under a mixed load while reports keep arriving (issue 21). On a copy of a benchmark
 * dataset (bench/lib/dataset.ts; built first if missing; the copy keeps the dataset itself as
 * built, and each run starts from the same state), this starts:
 *   - a private redis-server on a free port (the shared Redis on 6379 is not touched);
 *   - the service as `npm start` runs it (one child process: both APIs and the ingest worker on the
 *     embedded store), with both APIs on one port so that one autocannon instance drives the mix;
 *   - in this process, a BullMQ producer adding one job per report to `checks` at --rate reports/s
 *     (the scans that follow the dataset's history, on its targets: they change findings), and
 *     autocannon with --connections connections, each cycling through 7 metrics requests (a
 *     handful of team and global paths, cached in Redis until the next committed batch bumps the
 *     data version), 2 database API statistics (large and small team, varying parameters) and
 *     1 findings page (large and small team, varying pages).
 * After --warmup seconds of the same load (not counted), --duration seconds are measured: per kind
 * requests/s, p50/p90/p99, non-2xx, X-Cache; the ingestion's lag (enqueue → job completed after
 * its batch committed, per job; the age of the oldest report not yet committed, every second);
 * then the producer stops, the queue drains, and single requests of pathological sizes (SPEC §5.6
 * and 100×) are timed on the idle service.
 * Results: bench/results/load-<scale>.json (other --rate / --connections / --api-rate values:
 * load-<scale>-r<rate>-c<connections>….json; each run also kept under bench/results/runs/) and the console.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { tokenKeys } from '../src/auth/keys.js';
import { signJwt } from '../src/metrics/sign.js';
import { dataDirOf, LARGE_TEAM, openDataset, SCALES, SMALL_TEAM, type Dataset, type Scale } from './lib/dataset.js';
import { startIngestion } from './lib/load-ingest.js';
import { rawRequest, runMix, type MixPaths, type RawAnswer } from './lib/load-http.js';
import { cleanUpAtExit, copyDataset, freePort, procCpuSeconds, startService } from './lib/load-procs.js';
import { startPrivateRedis } from '../test/support/private-redis.js';
import { batchFigures, lagFigures, type PhaseRun, phaseFigures, phaseTargets, printPhases, r1, r2, ratiosTo } from './lib/load-phases.js';
import { writeResults } from './lib/results.js';
import { optionOf } from './lib/args.js';

const args = process.argv.slice(2);
const arg = optionOf(args);
const SCALE = arg('scale', '1m') as Scale;
if (!(SCALE in SCALES)) throw new Error(`--scale must be one of ${Object.keys(SCALES).join(', ')}`);
const DURATION = Number(arg('duration', '300'));
const RATE = Number(arg('rate', '500'));
const CONNECTIONS = Number(arg('connections', '10'));
const WARMUP = Number(arg('warmup', '10'));
const TIMEOUT_S = Number(arg('timeout', '10'));
/** Optional cap of the requests per second of all connections together (default: as fast as answered). */
const API_RATE = Number(arg('api-rate', '0'));
for (const [name, v] of Object.entries({ DURATION, RATE })) if (!(v > 0)) throw new Error(`--${name.toLowerCase()} must be positive`);
const RATES = arg('rates', String(RATE))
  .split(',')
  .map((x) => Number(x.trim()));
if (RATES.some((r) => !(r >= 0))) throw new Error('--rates must be a comma-separated list of rates >= 0');
const BULK = Number(arg('bulk', '0'));
const SERVICE_DIR = arg('service-dir', '');
const LAG_TARGET_S = 30;
const SCANS = SCALES[SCALE].scans;
const TARGETS = SCALES[SCALE].targets;

const loadavgBefore = os.loadavg().map((x) => +x.toFixed(2));
console.log(
  `load benchmark, ${SCALE}: ${DURATION} s measured after ${WARMUP} s of warm-up, ${CONNECTIONS} connections, ${RATE} reports/s; loadavg ${loadavgBefore.join(' ')}`,
);

// --- the dataset, copied ----------------------------------------------------------------------
const marker = path.join(dataDirOf(SCALE), 'dataset.json');
let dataset: Omit<Dataset, 'dataDir' | 'storePath'>;
if (fs.existsSync(marker)) {
  dataset = JSON.parse(fs.readFileSync(marker, 'utf8')) as typeof dataset;
} else if (fs.existsSync(path.join(dataDirOf(SCALE), 'clickhouse'))) {
  // A build in progress (or an interrupted one) owns that store: never open it from here too.
  console.error(
    `${dataDirOf(SCALE)} holds no finished dataset yet (no dataset.json): wait for its build, or finish it with npm run bench:replay -- --scale ${SCALE}`,
  );
  process.exit(1);
} else {
  const opened = await openDataset(SCALE); // builds it
  await opened.store.close();
  dataset = JSON.parse(fs.readFileSync(marker, 'utf8')) as typeof dataset;
}
const id = randomUUID().slice(0, 8);
const copyDir = path.join(os.tmpdir(), `vulndb-bench-load-${SCALE}-${id}`);
const t = performance.now();
copyDataset(dataDirOf(SCALE), copyDir);
console.log(
  `copied ${dataDirOf(SCALE)} to ${copyDir} in ${((performance.now() - t) / 1000).toFixed(1)} s (${dataset.findings} findings, ${dataset.events} events)`,
);

// --- Redis and the service ----------------------------------------------------------------------
const redis = await startPrivateRedis();
const secret = randomBytes(36).toString('base64url');
const port = await freePort();
let servicePid: number | undefined;
const redisChildPid = redis.child.pid;
if (redisChildPid === undefined) throw new Error('the private redis-server has no process id');
let redisPid: number | undefined = redisChildPid;
cleanUpAtExit(() => [servicePid, redisPid], args.includes('--keep') ? undefined : copyDir);
const service = await startService(
  // The admin listener (/metrics) on a free port too: 9464 may be taken by another instance.
  { DATA_DIR: copyDir, REDIS_URL: redis.url, JWT_SECRET: secret, ADMIN_PORT: String(await freePort()) },
  port,
  undefined,
  SERVICE_DIR || undefined,
);
servicePid = service.pid;
const cleanup = async () => {
  await service.stop();
  servicePid = undefined;
  await redis.shutdown();
  redisPid = undefined;
  if (!args.includes('--keep')) fs.rmSync(copyDir, { recursive: true, force: true });
};

const keys = tokenKeys({ secret, publicKey: undefined, issuer: undefined, audience: undefined }, copyDir);
const nowS = Math.floor(Date.now() / 1000);
const token = signJwt({ sub: 'bench-load', admin: true, iat: nowS, exp: nowS + 86_400 }, keys.secret!);

// --- the mix -----------------------------------------------------------------------------------
const L = LARGE_TEAM;
const S = SMALL_TEAM;
const pick = <T>(rnd: () => number, xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
const LAST_PAGE = SCALE === '1m' ? 1000 : 100;
const day = (d: number) => `2024-01-${String(d).padStart(2, '0')}`;
const paths: MixPaths = {
  metrics: [
    `/api/v1/teams/${L}/stats/open`,
    `/api/v1/teams/${L}/stats/mttr`,
    `/api/v1/teams/${L}/stats/exposure/current`,
    `/api/v1/teams/${S}/stats/open`,
    `/api/v1/teams/${S}/stats/fixed`,
    '/api/v1/stats/open',
    '/api/v1/stats/mttr',
  ],
  stats: (rnd) => {
    const team = `team=${rnd() < 0.5 ? L : S}`;
    const from = 1 + Math.floor(rnd() * 20);
    const range = `minDate=${day(from)}&maxDate=${day(from + 3 + Math.floor(rnd() * 8))}`;
    const at = `atDate=${day(1 + Math.floor(rnd() * 25))}`;
    return pick(rnd, [
      `/stats/open?${team}`,
      `/stats/fixed?${team}`,
      `/stats/open?${team}&${range}`,
      `/stats/fixed?${team}&${range}`,
      `/stats/open?${team}&${at}`,
      `/stats/mttr?${team}`,
      `/stats/mttr?${team}&${range}`,
      `/stats/exposure?${team}`,
      `/stats/exposure/current?${team}`,
      `/stats/assets?${team}`,
    ]);
  },
  findings: (rnd) => {
    const team = rnd() < 0.5 ? L : S;
    // Half of the pages among the first five (the ones people read), half anywhere up to a page
    // that even the small team's OPEN findings fill (about 3,400 at 100k, 34,000 at 1M).
    const page = rnd() < 0.5 ? 1 + Math.floor(rnd() * 5) : 1 + Math.floor(rnd() * LAST_PAGE);
    return `/findings?team=${team}&page=${page}${rnd() < 0.25 ? '&status=OPEN' : ''}`;
  },
};

// Every kind answers before anything is timed.
{
  const r = (() => {
    let s = 1;
    return () => (s = (s * 16807) % 2147483647) / 2147483647;
  })();
  for (const p of [...paths.metrics, paths.stats(r), paths.findings(r)]) {
    const res = await fetch(`${service.url}${p}`, p.startsWith('/api/v1') ? { headers: { Authorization: `Bearer ${token}` } } : {});
    const body = await res.text();
    if (res.status !== 200) {
      await cleanup();
      throw new Error(`${p} answered ${res.status}: ${body.slice(0, 300)}`);
    }
  }
}

// --- ingestion and load, phase by phase ------------------------------------------------------------
const ingestion = startIngestion({ redisUrl: redis.url, queuePrefix: 'bull', rate: RATES[0]!, targets: TARGETS, firstScan: SCANS });
ingestion.start();
const mixOptions = {
  url: service.url,
  token,
  paths,
  connections: CONNECTIONS,
  timeoutS: TIMEOUT_S,
  ...(API_RATE > 0 ? { overallRate: API_RATE } : {}),
};
const runs: PhaseRun[] = [];
for (const [n, rate] of RATES.entries()) {
  ingestion.setRate(rate);
  // An idle phase after a rate starts once what that rate queued is committed.
  if (rate === 0 && n > 0 && !(await ingestion.drained(Math.max(120, DURATION) * 1000)))
    console.log('phase 0/s: the queue did not drain first');
  if (WARMUP > 0) {
    const w = await runMix({ ...mixOptions, seconds: WARMUP, seed: 1 + 2 * n });
    console.log(
      `phase ${rate}/s warm-up: ${w.requests} requests (${w.rps}/s), ${w.errors} errors, ${w.non2xx} non-2xx; ${ingestion.enqueued()} reports enqueued`,
    );
  }
  const cpu0 = { service: service.cpuSeconds(), redis: procCpuSeconds(redisChildPid), bench: process.cpuUsage() };
  const windowStart = Date.now();
  const enqueuedAtStart = ingestion.enqueued();
  const mix = await runMix({ ...mixOptions, seconds: DURATION, seed: 2 + 2 * n });
  const windowEnd = Date.now();
  const benchCpu = process.cpuUsage(cpu0.bench);
  runs.push({
    rate,
    windowStart,
    windowEnd,
    mix,
    enqueuedInWindow: ingestion.enqueued() - enqueuedAtStart,
    cpu: {
      serviceSeconds: +(service.cpuSeconds() - cpu0.service).toFixed(1),
      redisSeconds: +(procCpuSeconds(redisChildPid) - cpu0.redis).toFixed(1),
      benchSeconds: +((benchCpu.user + benchCpu.system) / 1e6).toFixed(1),
    },
    endSample: ingestion.samples[ingestion.samples.length - 1],
  });
  console.log(`phase ${rate}/s: ${mix.requests} requests (${mix.rps}/s), ${mix.errors} errors, ${mix.non2xx} non-2xx`);
}
await ingestion.stop();
const endSample = ingestion.samples[ingestion.samples.length - 1];
const drainStarted = performance.now();
const drained = await ingestion.drained(Math.max(120, DURATION) * 1000);
const drainSeconds = (performance.now() - drainStarted) / 1000;
const loadavgAfterLoad = os.loadavg().map((x) => +x.toFixed(2));
// The bulk comparison: a backlog drained as fast as the worker can, without API load.
let bulk: { reports: number; seconds: number | null; drained: boolean; from: number; to: number } | undefined;
if (BULK > 0 && drained) {
  const from = Date.now();
  await ingestion.burst(BULK);
  const bulkDrained = await ingestion.drained(Math.max(300, DURATION) * 1000);
  bulk = { reports: BULK, seconds: r1((Date.now() - from) / 1000), drained: bulkDrained, from, to: Date.now() };
}

// --- pathological requests on the idle service --------------------------------------------------
const auth = { Authorization: `Bearer ${token}` };
const PATHOLOGICAL: [string, string, Record<string, string>][] = [];
for (const [factor, label] of [
  [1, 'SPEC §5.6 size'],
  [100, '100× SPEC §5.6'],
] as const) {
  const slashes = 15_000 * factor;
  const repeated = 5_000 * factor;
  PATHOLOGICAL.push(
    [`database API: path of ${slashes.toLocaleString('en')} slashes (${label})`, '/'.repeat(slashes), {}],
    [
      `database API: /findings with ${repeated.toLocaleString('en')} repeated keys (${label})`,
      `/findings?${Array(repeated).fill('a').join('&')}`,
      {},
    ],
    [`metrics API: /api/v1 + ${slashes.toLocaleString('en')} slashes (${label})`, `/api/v1${'/'.repeat(slashes)}`, auth],
    [
      `metrics API: /api/v1/stats/open with ${repeated.toLocaleString('en')} repeated keys (${label})`,
      `/api/v1/stats/open?${Array(repeated).fill('a').join('&')}`,
      auth,
    ],
  );
}
const pathological: {
  name: string;
  requestBytes: number;
  answers: RawAnswer[];
  status: (number | null)[];
  medianMs: number;
  maxMs: number;
}[] = [];
for (const [name, target, headers] of PATHOLOGICAL) {
  const answers: RawAnswer[] = [];
  for (let i = 0; i < 3; i++) answers.push(await rawRequest(port, target, headers));
  const ms = answers.map((a) => a.ms).sort((a, b) => a - b);
  pathological.push({
    name,
    requestBytes: target.length,
    answers,
    status: answers.map((a) => a.status ?? null),
    medianMs: ms[1]!,
    maxMs: ms[2]!,
  });
}

await ingestion.close();
const problems = Object.fromEntries(service.problems);
const batches = service.batches.slice();
await cleanup();
const loadavgAfter = os.loadavg().map((x) => +x.toFixed(2));

// --- figures -----------------------------------------------------------------------------------
const bulkBatches = bulk ? batchFigures(batches.filter((b) => b.at >= bulk.from && b.at <= bulk.to)) : null;
const phaseList = runs.map((r) => phaseFigures(r, ingestion, batches));
// A phase's idle reference: the last idle phase before it (the first one for phases before any).
// With idle phases between and after the rates (--rates 0,100,0,500,0) each rate compares with
// the state of the service and host just before it, and the idle phases' spread is recorded.
const idles = phaseList.filter((p) => p.rate === 0);
const idleBefore = (i: number) => phaseList.slice(0, i).findLast((p) => p.rate === 0) ?? idles[0];
const phases = phaseList.map((p, i) => {
  const idle = idleBefore(i);
  return {
    ...p,
    ratios: idle && p !== idle && p.rate > 0 ? ratiosTo(idle, p) : null,
    targets: phaseTargets(idle, p, bulkBatches?.engineMsPerReport ?? null),
  };
});
const idleSpread = idles.length > 1 ? r2(Math.max(...idles.map((p) => p.api.rps)) / Math.min(...idles.map((p) => p.api.rps))) : null;
const errorsTotal = runs.reduce((n, r) => n + r.mix.errors + r.mix.non2xx, 0);
const lagMax = Math.max(...phases.map((p) => Math.max(p.ingestion.lag.maxS ?? 0, p.ingestion.oldestPending.maxS ?? 0)));
const failedJobs = ingestion.samples[ingestion.samples.length - 1]?.failed ?? 0;
const targets = {
  errors: { target: 0, value: errorsTotal, met: errorsTotal === 0 },
  lag: { targetS: LAG_TARGET_S, maxS: lagMax, met: lagMax < LAG_TARGET_S && failedJobs === 0 },
  keptUp: {
    backlogAtEnd: endSample ? endSample.waiting + endSample.active + endSample.delayed : null,
    met: drained && (endSample ? endSample.oldestPendingS < LAG_TARGET_S : true),
  },
};
const ingestionRun = {
  enqueuedTotal: ingestion.enqueued(),
  committedTotal: batches.reduce((n, b) => n + b.jobs, 0),
  duplicates: batches.reduce((n, b) => n + b.duplicates, 0),
  addErrors: ingestion.addErrors,
  lagWholeRun: lagFigures(ingestion.lags.map((l) => l.ms)),
  atEndOfLoad: endSample
    ? {
        waiting: endSample.waiting,
        held: endSample.active,
        delayed: endSample.delayed,
        failed: endSample.failed,
        oldestPendingS: r2(endSample.oldestPendingS),
      }
    : null,
  drained,
  drainSeconds: r1(drainSeconds),
  failedJobs,
  bulk: bulk ? { ...bulk, batches: bulkBatches } : null,
  // every 5th queue sample (t: seconds since the producer started)
  timeline: ingestion.samples.filter((_, i) => i % 5 === 0).map((s) => ({ ...s, t: r1(s.t), oldestPendingS: r2(s.oldestPendingS) })),
};

// Which code served: the commit, and whether the service's sources differed from it (a shared tree).
const git = (...a: string[]) => {
  try {
    return execFileSync('git', a, { encoding: 'utf8' }).trim();
  } catch {
    return undefined;
  }
};
const code = {
  commit: git('rev-parse', '--short', 'HEAD'),
  uncommittedServiceChanges: (git('status', '--porcelain', '--', 'src', 'workers', 'sql') ?? '') !== '',
};
const result = {
  date: new Date().toISOString(),
  code,
  host: { model: os.cpus()[0]?.model, cpus: os.cpus().length, node: process.version, loadavgBefore, loadavgAfterLoad, loadavgAfter },
  scale: SCALE,
  dataset,
  settings: {
    durationSeconds: DURATION,
    warmupSeconds: WARMUP,
    connections: CONNECTIONS,
    apiRateCap: API_RATE || null,
    requestTimeoutSeconds: TIMEOUT_S,
    reportsPerSecond: RATES,
    bulkReports: BULK || null,
    serviceDir: SERVICE_DIR || null,
    mix: { metrics: 0.7, stats: 0.2, findings: 0.1 },
    metricsPaths: paths.metrics,
    service:
      'child process: node --max-semi-space-size=64 --import tsx src/cli/main.ts serve (APIs and worker, embedded store), both APIs on one port, on a copy of the dataset',
    serviceEnv: Object.fromEntries(
      ['WORKER_CONCURRENCY', 'INGEST_BATCH_SIZE', 'INGEST_BATCH_WAIT_MS', 'INGEST_COMMIT_INTERVAL_MS'].map((k) => [
        k,
        process.env[k] ?? 'default',
      ]),
    ),
    redis: 'a private redis-server started for the run (no persistence)',
    producer: 'this process: one BullMQ job per report on "checks", the scans after the dataset\'s history on its targets',
    loadGenerator: `autocannon ${'8'} in this process, each connection cycling 7 metrics, 2 statistics, 1 findings page`,
  },
  phases,
  idleSpread,
  // The whole mix of each phase (per kind: statuses, X-Cache, 10 s windows).
  http: runs.map((r) => ({ rate: r.rate, ...r.mix })),
  ingestion: ingestionRun,
  pathological,
  serviceProblems: problems,
  targets,
};

// --- the table ---------------------------------------------------------------------------------
console.log(
  `\n${SCALE}, ${DURATION} s per phase, ${CONNECTIONS} connections, reports/s ${RATES.join(', ')} on ${result.host.model} (loadavg ${loadavgBefore.join(' ')} → ${loadavgAfterLoad.join(' ')})`,
);
printPhases(phases);
if (idleSpread !== null) console.log(`idle phases: requests/s ${idles.map((p) => p.api.rps).join(', ')} (max/min ×${idleSpread})`);
const i = ingestionRun;
console.log(
  `ingestion: ${i.committedTotal} committed of ${i.enqueuedTotal} enqueued; at the end of the load ${JSON.stringify(i.atEndOfLoad)}; ` +
    `drained ${drained ? `in ${i.drainSeconds} s` : 'NOT (timeout)'}; failed jobs ${i.failedJobs}`,
);
if (i.bulk) console.log(`bulk: ${i.bulk.reports} reports at once drained in ${i.bulk.seconds} s; ${JSON.stringify(i.bulk.batches)}`);
for (const p of phases) if (p.targets) console.log(`targets at ${p.rate}/s: ${JSON.stringify(p.targets)}`);
console.log('pathological requests (idle service, 3 each):');
for (const p of pathological)
  console.log(`  ${p.name}: ${p.status.join('/')} in ${p.medianMs} ms median, ${p.maxMs} ms max (${p.requestBytes} bytes)`);
console.log(
  `targets: errors ${targets.errors.value} (0: ${targets.errors.met ? 'met' : 'MISSED'}); lag max ${lagMax} s (< ${LAG_TARGET_S} s: ${targets.lag.met ? 'met' : 'MISSED'}); ` +
    `kept up: ${targets.keptUp.met ? 'yes' : 'NO'} (backlog at the end ${targets.keptUp.backlogAtEnd})`,
);
// Default settings write load-<scale>.json; other rates or connection counts a file of their own.
const rates = RATES.length > 1 ? `-rates${RATES.join('-')}` : RATES[0] !== 500 ? `-r${RATES[0]}` : '';
const variant = `${rates}${CONNECTIONS !== 10 ? `-c${CONNECTIONS}` : ''}${API_RATE > 0 ? `-api${API_RATE}` : ''}`;
const written = writeResults(`load-${SCALE}${variant}`, result);
console.log(`written to ${written.latest} and ${written.kept}`);
process.exit(0);
