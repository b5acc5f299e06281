/**
 * npm run bench:ui [-- --scale 100k|1m --runs 5]
 *
 * The triage page's first view in Chromium (issue 35: within 1 s on the 1M dataset). On a copy of
 * a benchmark dataset (bench/lib/dataset.ts; it must be built already), this starts a private
 * redis-server and the service as `npm start` runs it (both APIs on one port, DB_API_AUTH=jwt),
 * mints a token of a member of the large team and an admin's, and opens in Debian's Chromium:
 *   - the overview (/ui/, the page's first view): the caller's open findings, SLA, MTTR and chart;
 *   - the findings (/ui/findings?status=OPEN), the second view people open.
 * Each is timed from the navigation's start to the frame where it is complete on screen (and to
 * the frame of its first figures), with the duration of every API call it made. Runs: "first"
 * (the service just started, nothing cached: the member's overview only), then --runs times
 * "cold" (the response cache in the private Redis emptied first; the engine's own caches stay
 * warm) followed by "warm" (the same view again: answers cached). Then the chart's answer alone,
 * uncached: one series request against the 13 atDate requests of the page before it had one.
 * Results: bench/results/ui-<scale>.json (each run also kept under bench/results/runs/) and the console.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { Redis } from 'ioredis';
import { tokenKeys } from '../src/auth/keys.js';
import { signJwt } from '../src/metrics/sign.js';
import { launchBrowser } from '../test/support/browser.js';
import { buildUi } from '../ui/build.js';
import { dataDirOf, LARGE_TEAM, SCALES, type Scale } from './lib/dataset.js';
import { cleanUpAtExit, copyDataset, freePort, startService } from './lib/load-procs.js';
import { startPrivateRedis } from '../test/support/private-redis.js';
import { median } from './lib/median.js';
import { writeResults } from './lib/results.js';
import { FINDINGS_SIGNALS, OVERVIEW_SIGNALS, timeView, type ViewSignals, type ViewTiming } from './lib/ui-timing.js';
import { optionOf } from './lib/args.js';

const args = process.argv.slice(2);
const arg = optionOf(args);
const SCALE = arg('scale', '100k') as Scale;
if (!(SCALE in SCALES)) throw new Error(`--scale must be one of ${Object.keys(SCALES).join(', ')}`);
const RUNS = Number(arg('runs', '5'));
const TARGET_MS = 1000;

const marker = path.join(dataDirOf(SCALE), 'dataset.json');
if (!fs.existsSync(marker)) {
  console.error(`${marker} is missing: copy a built dataset there first (README: Benchmarks)`);
  process.exit(1);
}
const dataset = JSON.parse(fs.readFileSync(marker, 'utf8')) as { findings: number; events: number; reports: number };
const loadavgBefore = os.loadavg().map((x) => +x.toFixed(2));
const copyDir = path.join(os.tmpdir(), `vulndb-bench-ui-${SCALE}-${randomUUID().slice(0, 8)}`);
copyDataset(dataDirOf(SCALE), copyDir);
await buildUi();

const redis = await startPrivateRedis();
const secret = randomBytes(36).toString('base64url');
let servicePid: number | undefined;
let redisPid: number | undefined = redis.child.pid;
cleanUpAtExit(() => [servicePid, redisPid], copyDir);
const service = await startService(
  { DATA_DIR: copyDir, REDIS_URL: redis.url, JWT_SECRET: secret, DB_API_AUTH: 'jwt', ADMIN_PORT: String(await freePort()) },
  await freePort(),
);
servicePid = service.pid;

const keys = tokenKeys({ secret, publicKey: undefined, issuer: undefined, audience: undefined }, copyDir);
const nowS = Math.floor(Date.now() / 1000);
const TOKENS = {
  member: signJwt({ sub: 'bench-member', teams: [LARGE_TEAM], iat: nowS, exp: nowS + 86_400 }, keys.secret!),
  admin: signJwt({ sub: 'bench-admin', admin: true, iat: nowS, exp: nowS + 86_400 }, keys.secret!),
};
type Role = keyof typeof TOKENS;
const VIEWS: Record<string, [string, ViewSignals]> = {
  overview: ['/ui/', OVERVIEW_SIGNALS],
  findings: ['/ui/findings?status=OPEN', FINDINGS_SIGNALS],
};

/** Empties the response cache (the private Redis holds only this run's service's keys). */
const cacheClient = new Redis(redis.url);
async function emptyResponseCache(): Promise<void> {
  let cursor = '0';
  do {
    const [next, found] = await cacheClient.scan(cursor, 'MATCH', '*:cache:*', 'COUNT', 1000);
    if (found.length > 0) await cacheClient.del(...found);
    cursor = next;
  } while (cursor !== '0');
}

const browser = await launchBrowser();
const pages = {} as Record<Role, Awaited<ReturnType<typeof browser.newPage>>>;
for (const role of Object.keys(TOKENS) as Role[]) {
  pages[role] = await browser.newPage();
  await pages[role].page.setViewportSize({ width: 1280, height: 800 });
  await pages[role].page.goto(`${service.url}/ui/signin`);
  await pages[role].page.evaluate(`sessionStorage.setItem('vulndb.token', ${JSON.stringify(TOKENS[role])})`);
}

interface Run extends ViewTiming {
  role: Role;
  view: string;
  cache: 'first' | 'cold' | 'warm';
}
const runs: Run[] = [];
async function measure(role: Role, view: string, cache: Run['cache']): Promise<void> {
  const [address, signals] = VIEWS[view]!;
  if (cache !== 'warm') await emptyResponseCache();
  // A tab in the background gets no animation frames and slow timers (Preact's effects wait for both).
  await pages[role].page.bringToFront();
  const t = await timeView(pages[role].page, `${service.url}${address}`, signals);
  runs.push({ role, view, cache, ...t });
  console.log(
    `${role.padEnd(6)} ${view.padEnd(8)} ${cache.padEnd(5)} complete ${t.completeMs} ms, first figures ${t.firstFiguresMs} ms, ` +
      `${t.calls.length} calls, slowest ${Math.max(...t.calls.map((c) => c.ms))} ms`,
  );
}

await measure('member', 'overview', 'first');
for (let i = 0; i < RUNS; i++) {
  for (const role of Object.keys(TOKENS) as Role[]) {
    for (const view of Object.keys(VIEWS)) {
      await measure(role, view, 'cold');
      await measure(role, view, 'warm');
    }
  }
}

/**
 * The chart's answer alone, outside the browser, uncached: one series request against the 13
 * atDate requests the page made before (all at once, as it sent them), alternated.
 */
const weeks = Array.from({ length: 13 }, (_, i) => new Date(Date.now() - (13 - i) * 7 * 86_400_000).toISOString().slice(0, 10));
const CHART_SCOPES: Record<Role, string> = { member: `/api/v1/teams/${LARGE_TEAM}/stats/open`, admin: '/api/v1/stats/open' };
async function timed(role: Role, paths: string[]): Promise<number> {
  await emptyResponseCache();
  const started = performance.now();
  await Promise.all(
    paths.map(async (p) => {
      const res = await fetch(`${service.url}${p}`, { headers: { Authorization: `Bearer ${TOKENS[role]}` } });
      await res.text();
      if (res.status !== 200) throw new Error(`${p} answered ${res.status}`);
    }),
  );
  return Math.round((performance.now() - started) * 10) / 10;
}
const answer = async (role: Role, p: string) =>
  (await fetch(`${service.url}${p}`, { headers: { Authorization: `Bearer ${TOKENS[role]}` } })).json() as Promise<Record<string, unknown>>;
const chart: { role: Role; seriesMs: number[]; pointsMs: number[] }[] = [];
for (const role of Object.keys(TOKENS) as Role[]) {
  const base = CHART_SCOPES[role];
  // The answers must agree before anything is timed: each point as its own request answers, on
  // the chart's weeks and on every day of the synthetic history (January 2024), where they change.
  for (const days of [weeks, Array.from({ length: 27 }, (_, i) => `2024-01-${String(i + 1).padStart(2, '0')}`)]) {
    const series = (await answer(role, `${base}/series?atDates=${days.join(',')}`)).open_issues_series as { open_issues: unknown }[];
    const points = await Promise.all(days.map(async (d) => (await answer(role, `${base}?atDate=${d}`)).open_issues));
    const same = isDeepStrictEqual(
      series.map((p) => p.open_issues),
      points,
    );
    if (!same) throw new Error(`${role}: the series and the points differ:\n${JSON.stringify(series)}\n${JSON.stringify(points)}`);
  }
  const row = { role, seriesMs: [] as number[], pointsMs: [] as number[] };
  for (let i = 0; i < RUNS; i++) {
    row.seriesMs.push(await timed(role, [`${base}/series?atDates=${weeks.join(',')}`]));
    row.pointsMs.push(
      await timed(
        role,
        weeks.map((d) => `${base}?atDate=${d}`),
      ),
    );
  }
  chart.push(row);
}

const summary = [];
for (const role of Object.keys(TOKENS) as Role[]) {
  for (const view of Object.keys(VIEWS)) {
    for (const cache of ['first', 'cold', 'warm'] as const) {
      const these = runs.filter((r) => r.role === role && r.view === view && r.cache === cache);
      if (these.length === 0) continue;
      const complete = these.map((r) => r.completeMs);
      // The calls of the run nearest the median, to show where its time went.
      const typical = these.reduce((a, b) =>
        Math.abs(b.completeMs - median(complete)) < Math.abs(a.completeMs - median(complete)) ? b : a,
      );
      summary.push({
        role,
        view,
        cache,
        runs: these.length,
        completeMs: { median: median(complete), min: Math.min(...complete), max: Math.max(...complete) },
        firstFiguresMs: { median: median(these.map((r) => r.firstFiguresMs)) },
        calls: typical.calls.length,
        typicalCalls: typical.calls,
      });
    }
  }
}
console.log('\n| caller | view | cache | runs | complete median (min–max) ms | first figures median ms | API calls |');
console.log('|---|---|---|---|---|---|---|');
for (const s of summary) {
  console.log(
    `| ${s.role} | ${s.view} | ${s.cache} | ${s.runs} | ${s.completeMs.median} (${s.completeMs.min}–${s.completeMs.max}) | ${s.firstFiguresMs.median} | ${s.calls} |`,
  );
}
for (const c of chart) {
  console.log(
    `${c.role}: the chart's 13 points uncached, one series request median ${median(c.seriesMs)} ms, 13 atDate requests at once median ${median(c.pointsMs)} ms`,
  );
}
const firstViews = summary.filter((s) => s.view === 'overview');
const worstMedian = Math.max(...firstViews.map((s) => s.completeMs.median));
console.log(
  `\nworst median first view (overview) ${worstMedian} ms: target ≤ ${TARGET_MS} ms ${worstMedian <= TARGET_MS ? 'met' : 'MISSED'}`,
);

const written = writeResults(`ui-${SCALE}`, {
  scale: SCALE,
  dataset,
  machine: {
    cpus: os.cpus().length,
    cpu: os.cpus()[0]?.model,
    node: process.version,
    loadavgBefore,
    loadavgAfter: os.loadavg().map((x) => +x.toFixed(2)),
  },
  date: new Date().toISOString(),
  settings: { runs: RUNS, team: LARGE_TEAM, dbApiAuth: 'jwt', viewport: '1280x800' },
  targetMs: TARGET_MS,
  worstMedianFirstViewMs: worstMedian,
  met: worstMedian <= TARGET_MS,
  summary,
  chart: chart.map((c) => ({ ...c, seriesMedianMs: median(c.seriesMs), pointsMedianMs: median(c.pointsMs) })),
  runs,
});
console.log(`results written to ${written.latest} and ${written.kept}`);

await browser.close();
await cacheClient.quit();
await service.stop();
servicePid = undefined;
await redis.shutdown();
redisPid = undefined;
fs.rmSync(copyDir, { recursive: true, force: true });
