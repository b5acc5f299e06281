/**
 * npm run bench:load [-- --scale 100k|1m --duration 300 --rate 500 --connections 10 --warmup 10]
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
import { tokenKeys } from '../src/metrics/keys.js';
import { signJwt } from '../src/metrics/sign.js';
import { dataDirOf, LARGE_TEAM, openDataset, SCALES, SMALL_TEAM, type Dataset, type Scale } from './lib/dataset.js';
import { startIngestion } from './lib/load-ingest.js';
import { KINDS, rawRequest, runMix, type MixPaths, type RawAnswer } from './lib/load-http.js';
import { copyDataset, freePort, procCpuSeconds, startPrivateRedis, startService } from './lib/load-procs.js';
import { writeResults } from './lib/results.js';

const args = process.argv.slice(2);
const arg = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1]! : fallback;
};
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
// If this process ends early (an error, Ctrl-C), its children and the copy go with it.
let servicePid: number | undefined;
let redisPid: number | undefined = redis.pid;
process.on('exit', () => {
  for (const pid of [servicePid, redisPid]) {
    try {
      if (pid) process.kill(pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
  if (!args.includes('--keep')) fs.rmSync(copyDir, { recursive: true, force: true });
});
process.on('SIGINT', () => process.exit(130));
const service = await startService(
  // The admin listener (/metrics) on a free port too: 9464 may be taken by another instance.
  { DATA_DIR: copyDir, REDIS_URL: redis.url, JWT_SECRET: secret, ADMIN_PORT: String(await freePort()) },
  port,
);
servicePid = service.pid;
const cleanup = async () => {
  await service.stop();
  servicePid = undefined;
  await redis.stop();
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

// --- ingestion and load ------------------------------------------------------------------------
const ingestion = startIngestion({ redisUrl: redis.url, queuePrefix: 'bull', rate: RATE, targets: TARGETS, firstScan: SCANS });
ingestion.start();
const ingestStarted = Date.now();
const mixOptions = {
  url: service.url,
  token,
  paths,
  connections: CONNECTIONS,
  timeoutS: TIMEOUT_S,
  ...(API_RATE > 0 ? { overallRate: API_RATE } : {}),
};
if (WARMUP > 0) {
  const w = await runMix({ ...mixOptions, seconds: WARMUP, seed: 1 });
  console.log(
    `warm-up: ${w.requests} requests (${w.rps}/s), ${w.errors} errors, ${w.non2xx} non-2xx; ${ingestion.enqueued()} reports enqueued`,
  );
}
const cpu0 = { service: service.cpuSeconds(), redis: procCpuSeconds(redis.pid), bench: process.cpuUsage() };
const windowStart = Date.now();
const enqueuedAtStart = ingestion.enqueued();
const mix = await runMix({ ...mixOptions, seconds: DURATION, seed: 2 });
const windowEnd = Date.now();
const enqueuedInWindow = ingestion.enqueued() - enqueuedAtStart;
const benchCpu = process.cpuUsage(cpu0.bench);
const cpu = {
  serviceSeconds: +(service.cpuSeconds() - cpu0.service).toFixed(1),
  redisSeconds: +(procCpuSeconds(redis.pid) - cpu0.redis).toFixed(1),
  benchSeconds: +((benchCpu.user + benchCpu.system) / 1e6).toFixed(1),
};
await ingestion.stop();
const endSample = ingestion.samples[ingestion.samples.length - 1];
const drainStarted = performance.now();
const drained = await ingestion.drained(Math.max(120, DURATION) * 1000);
const drainSeconds = (performance.now() - drainStarted) / 1000;
const loadavgAfterLoad = os.loadavg().map((x) => +x.toFixed(2));

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
const q = (xs: number[], p: number) => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))]!;
};
const r1 = (x: number) => (Number.isFinite(x) ? +x.toFixed(1) : null);
const r2 = (x: number) => (Number.isFinite(x) ? +x.toFixed(2) : null);
const inWindow = (at: number) => at >= windowStart && at <= windowEnd;
const lagMs = ingestion.lags.filter((l) => inWindow(l.at)).map((l) => l.ms);
const allLagMs = ingestion.lags.map((l) => l.ms);
const oldest = ingestion.samples.filter((s) => inWindow(ingestStarted + s.t * 1000)).map((s) => s.oldestPendingS);
const windowBatches = batches.filter((b) => inWindow(b.at));
const committedInWindow = windowBatches.reduce((n, b) => n + b.jobs, 0);
const lagFigures = (ms: number[]) => ({
  jobs: ms.length,
  p50S: r2(q(ms, 0.5) / 1000),
  p99S: r2(q(ms, 0.99) / 1000),
  maxS: r2(q(ms, 1) / 1000),
});
const ingestionFigures = {
  rateTarget: RATE,
  enqueuedInWindow,
  enqueuedPerSecond: r1(enqueuedInWindow / ((windowEnd - windowStart) / 1000)),
  committedInWindow,
  committedPerSecond: r1(committedInWindow / ((windowEnd - windowStart) / 1000)),
  enqueuedTotal: ingestion.enqueued(),
  committedTotal: batches.reduce((n, b) => n + b.jobs, 0),
  duplicates: batches.reduce((n, b) => n + b.duplicates, 0),
  addErrors: ingestion.addErrors,
  batchesInWindow: {
    count: windowBatches.length,
    reportsP50: q(
      windowBatches.map((b) => b.jobs),
      0.5,
    ),
    reportsMax: q(
      windowBatches.map((b) => b.jobs),
      1,
    ),
    msP50: q(
      windowBatches.map((b) => b.ms),
      0.5,
    ),
    msP99: q(
      windowBatches.map((b) => b.ms),
      0.99,
    ),
    msMax: q(
      windowBatches.map((b) => b.ms),
      1,
    ),
  },
  // enqueue → job completed (finishedOn), per job, for jobs completed within the measured window
  lag: lagFigures(lagMs),
  lagWholeRun: lagFigures(allLagMs),
  // age of the oldest report not yet committed, sampled every second within the window
  oldestPending: { samples: oldest.length, p50S: r2(q(oldest, 0.5)), p99S: r2(q(oldest, 0.99)), maxS: r2(q(oldest, 1)) },
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
  failedJobs: ingestion.samples[ingestion.samples.length - 1]?.failed ?? 0,
  // every 5th queue sample (t: seconds since the producer started; the window starts at warm-up's end)
  timeline: ingestion.samples.filter((_, i) => i % 5 === 0).map((s) => ({ ...s, t: r1(s.t), oldestPendingS: r2(s.oldestPendingS) })),
};
const lagMax = Math.max(ingestionFigures.lag.maxS ?? 0, ingestionFigures.oldestPending.maxS ?? 0);
const targets = {
  errors: { target: 0, value: mix.errors + mix.non2xx, met: mix.errors + mix.non2xx === 0 },
  lag: { targetS: LAG_TARGET_S, maxS: lagMax, met: lagMax < LAG_TARGET_S && ingestionFigures.failedJobs === 0 },
  keptUp: {
    // what was committed within the window against what was enqueued in it, and the backlog left
    committedShare: r2(committedInWindow / Math.max(1, enqueuedInWindow)),
    backlogAtEnd: endSample ? endSample.waiting + endSample.active + endSample.delayed : null,
    met: drained && (endSample ? endSample.oldestPendingS < LAG_TARGET_S : true),
  },
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
    reportsPerSecond: RATE,
    mix: { metrics: 0.7, stats: 0.2, findings: 0.1 },
    metricsPaths: paths.metrics,
    service:
      'child process: node --max-semi-space-size=64 --import tsx src/cli/main.ts serve (APIs and worker, embedded store), both APIs on one port, on a copy of the dataset',
    serviceEnv: Object.fromEntries(
      ['WORKER_CONCURRENCY', 'INGEST_BATCH_SIZE', 'INGEST_BATCH_WAIT_MS'].map((k) => [k, process.env[k] ?? 'default']),
    ),
    redis: 'a private redis-server started for the run (no persistence)',
    producer: 'this process: one BullMQ job per report on "checks", the scans after the dataset\'s history on its targets',
    loadGenerator: `autocannon ${'8'} in this process, each connection cycling 7 metrics, 2 statistics, 1 findings page`,
  },
  http: mix,
  ingestion: ingestionFigures,
  cpu: { ...cpu, coresBusy: r2((cpu.serviceSeconds + cpu.redisSeconds + cpu.benchSeconds) / ((windowEnd - windowStart) / 1000)) },
  pathological,
  serviceProblems: problems,
  targets,
};

// --- the table ---------------------------------------------------------------------------------
console.log(
  `\n${SCALE}, ${DURATION} s, ${CONNECTIONS} connections, ${RATE} reports/s on ${result.host.model} (loadavg ${loadavgBefore.join(' ')} → ${loadavgAfterLoad.join(' ')})`,
);
console.log('| kind | requests | req/s | p50 ms | p90 ms | p99 ms | max ms | non-2xx | X-Cache HIT |');
console.log('|---|---|---|---|---|---|---|---|---|');
for (const kind of KINDS) {
  const k = mix.kinds[kind];
  console.log(
    `| ${kind} | ${k.requests} | ${k.rps} | ${k.p50} | ${k.p90} | ${k.p99} | ${k.max} | ${k.non2xx} | ${k.hitRatio === null ? '–' : `${(k.hitRatio * 100).toFixed(1)}%`} |`,
  );
}
console.log(`| all | ${mix.requests} | ${mix.rps} | | | | | ${mix.non2xx} | |`);
console.log(
  `errors (connection errors and timeouts): ${mix.errors} (timeouts ${mix.timeouts}); 10 s windows req/s min ${Math.min(...mix.windows10s)} max ${Math.max(...mix.windows10s)}`,
);
const i = ingestionFigures;
console.log(
  `ingestion: enqueued ${i.enqueuedInWindow} (${i.enqueuedPerSecond}/s), committed ${i.committedInWindow} (${i.committedPerSecond}/s) in the window; ` +
    `${i.batchesInWindow.count} batches (p50 ${i.batchesInWindow.reportsP50} reports, ${i.batchesInWindow.msP50} ms; max ${i.batchesInWindow.msMax} ms)`,
);
console.log(
  `lag enqueue → completed: p50 ${i.lag.p50S} s, p99 ${i.lag.p99S} s, max ${i.lag.maxS} s (${i.lag.jobs} jobs measured); ` +
    `oldest uncommitted report: p50 ${i.oldestPending.p50S} s, max ${i.oldestPending.maxS} s; at the end ${JSON.stringify(i.atEndOfLoad)}; ` +
    `drained ${drained ? `in ${i.drainSeconds} s` : 'NOT (timeout)'}; failed jobs ${i.failedJobs}`,
);
console.log(
  `cpu in the window: service ${cpu.serviceSeconds} s, redis ${cpu.redisSeconds} s, load generator + producer ${cpu.benchSeconds} s (${result.cpu.coresBusy} cores busy)`,
);
console.log('pathological requests (idle service, 3 each):');
for (const p of pathological)
  console.log(`  ${p.name}: ${p.status.join('/')} in ${p.medianMs} ms median, ${p.maxMs} ms max (${p.requestBytes} bytes)`);
console.log(
  `targets: errors ${targets.errors.value} (0: ${targets.errors.met ? 'met' : 'MISSED'}); lag max ${lagMax} s (< ${LAG_TARGET_S} s: ${targets.lag.met ? 'met' : 'MISSED'}); ` +
    `kept up: ${targets.keptUp.met ? 'yes' : 'NO'} (committed/enqueued ${targets.keptUp.committedShare}, backlog at the end ${targets.keptUp.backlogAtEnd})`,
);
// Default settings write load-<scale>.json; other rates or connection counts a file of their own.
const variant = `${RATE !== 500 ? `-r${RATE}` : ''}${CONNECTIONS !== 10 ? `-c${CONNECTIONS}` : ''}${API_RATE > 0 ? `-api${API_RATE}` : ''}`;
const written = writeResults(`load-${SCALE}${variant}`, result);
console.log(`written to ${written.latest} and ${written.kept}`);
process.exit(0);
