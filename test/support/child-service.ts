import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Queue } from 'bullmq';
import { demoHistory } from '../../src/demo/history.js';
import { prng } from '../../src/demo/prng.js';
import { CHECK_BUNDLES_QUEUE, CHECKS_QUEUE, type Bundle } from '../../src/queue/contract.js';
import { freePort } from './private-redis.js';

/**
 * The service as users run it (`npm start`: node --import tsx src/cli/main.ts serve) in a child
 * process, for tests that kill it or stop it with a signal. Its JSON log lines (stderr) are parsed
 * and kept, and appended to `service.log` in its data folder for a person reading a failure.
 * Every child started here is SIGKILLed when the test process exits, whatever happens to the hooks.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface LogLine {
  time?: string;
  level: string;
  msg: string;
  [field: string]: unknown;
}

export interface ChildServiceOptions {
  /** DATA_DIR: the embedded store lives there, so a restart on the same folder finds its data. */
  dataDir: string;
  redisUrl: string;
  /** More environment (it overrides the defaults below). */
  env?: Record<string, string>;
  /** `serve` role: all (default), api or worker. */
  role?: 'all' | 'api' | 'worker';
}

/**
 * A killed holder's jobs come back within seconds instead of the default 30 s. Not 2 s: on a
 * loaded two-core host a live worker then missed its lock renewals (batches of 11 s, thousands of
 * "could not renew lock"), and the stall check handed its own jobs back to it, each time a stall.
 */
export const CHILD_JOB_LOCK_MS = '5000';

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

export class ChildService {
  readonly logs: LogLine[] = [];
  readonly exited: Promise<Exit>;
  dbApiUrl: string | undefined;
  private exit: Exit | undefined;
  private readonly waiters = new Set<() => void>();

  constructor(
    readonly child: ChildProcess,
    logFile: string,
  ) {
    const out = fs.createWriteStream(logFile, { flags: 'a' });
    out.write(`--- pid ${child.pid} started ${new Date().toISOString()}\n`);
    const lines = readline.createInterface({ input: child.stderr! });
    lines.on('line', (text) => {
      out.write(`${text}\n`);
      let line: LogLine;
      try {
        line = JSON.parse(text) as LogLine;
      } catch {
        line = { level: 'raw', msg: text };
      }
      this.logs.push(line);
      if (line.msg === 'APIs listening' && typeof line.database === 'string') this.dbApiUrl = line.database;
      this.notify();
    });
    child.stdout!.on('data', (chunk: Buffer) => out.write(chunk));
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        live.delete(child);
        this.exit = { code, signal };
        out.end(`--- pid ${child.pid} exited ${new Date().toISOString()} code ${code} signal ${signal}\n`);
        this.notify();
        resolve(this.exit);
      });
    });
  }

  get pid(): number {
    return this.child.pid!;
  }

  get running(): boolean {
    return this.exit === undefined;
  }

  private notify(): void {
    for (const w of [...this.waiters]) w();
  }

  /** The first log line from index `from` on that `match` accepts; rejects on exit or timeout. */
  waitForLog(match: (l: LogLine) => boolean, timeoutMs: number, from = 0): Promise<LogLine> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = this.logs.slice(from).find(match);
        if (found) return finish(() => resolve(found));
        if (this.exit)
          return finish(() =>
            reject(
              new Error(
                `service (pid ${this.pid}) exited (${JSON.stringify(this.exit)}) before the awaited log line; last lines:\n${this.tail()}`,
              ),
            ),
          );
      };
      const timer = setTimeout(
        () =>
          finish(() =>
            reject(new Error(`no awaited log line from the service (pid ${this.pid}) within ${timeoutMs} ms; last lines:\n${this.tail()}`)),
          ),
        timeoutMs,
      );
      const finish = (then: () => void) => {
        clearTimeout(timer);
        this.waiters.delete(check);
        then();
      };
      this.waiters.add(check);
      check();
    });
  }

  /** Resolves when both APIs listen and the ingest worker runs. */
  async ready(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    await this.waitForLog((l) => l.msg === 'ingest worker started', timeoutMs);
    await this.waitForLog((l) => l.msg === 'APIs listening', Math.max(1, deadline - Date.now()));
  }

  count(msg: string): number {
    return this.logs.filter((l) => l.msg === msg).length;
  }

  tail(n = 15): string {
    return this.logs
      .slice(-n)
      .map((l) => JSON.stringify(l))
      .join('\n');
  }

  /** Sends `signal` and waits for the exit (SIGKILL after `timeoutMs`, and the wait rejects). */
  async stop(signal: NodeJS.Signals = 'SIGKILL', timeoutMs = 10_000): Promise<Exit> {
    if (this.exit) return this.exit;
    this.child.kill(signal);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
    const result = await Promise.race([this.exited, timedOut]);
    clearTimeout(timer);
    if (result === 'timeout') {
      this.child.kill('SIGKILL');
      await this.exited;
      throw new Error(`service (pid ${this.pid}) did not exit within ${timeoutMs} ms of ${signal}; last lines:\n${this.tail()}`);
    }
    return result;
  }

  /** GET of a JSON answer of the database API. */
  async get(pathAndQuery: string): Promise<any> {
    const res = await fetch(`${this.dbApiUrl}${pathAndQuery}`, { signal: AbortSignal.timeout(30_000) });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`GET ${pathAndQuery}: ${res.status} ${text}`);
    return JSON.parse(text);
  }
}

/** Spawns `vulndb serve` on free ports (it does not wait for it to be ready: see `ready()`). */
export async function spawnService(opts: ChildServiceOptions): Promise<ChildService> {
  fs.mkdirSync(opts.dataDir, { recursive: true });
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? opts.dataDir,
    ...(process.env.TMPDIR ? { TMPDIR: process.env.TMPDIR } : {}),
    DATA_DIR: opts.dataDir,
    REDIS_URL: opts.redisUrl,
    DB_API_PORT: String(await freePort()),
    METRICS_API_PORT: String(await freePort()),
    HOST: '127.0.0.1',
    JOB_LOCK_MS: CHILD_JOB_LOCK_MS,
    ADMIN_PORT: '0',
    LOG_LEVEL: 'info',
    ...opts.env,
  };
  const args = [
    '--max-semi-space-size=64',
    '--import',
    'tsx',
    'src/cli/main.ts',
    'serve',
    ...(opts.role && opts.role !== 'all' ? [opts.role] : []),
  ];
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(child);
  return new ChildService(child, path.join(opts.dataDir, 'service.log'));
}

/** Spawns the service and waits until it is ready. */
export async function startChildService(opts: ChildServiceOptions, timeoutMs = 60_000): Promise<ChildService> {
  // The ports are free when chosen, but another test file running meanwhile can take one before
  // the child listens (EADDRINUSE, exit 1): then the child starts again on other ports.
  for (let attempt = 1; ; attempt++) {
    const svc = await spawnService(opts);
    try {
      await svc.ready(timeoutMs);
      return svc;
    } catch (err) {
      await svc.stop('SIGKILL').catch(() => undefined);
      if (attempt >= 3 || !String((err as Error).message).includes('EADDRINUSE')) throw err;
    }
  }
}

/** SIGKILLs every child service still running (afterAll). */
export async function killChildServices(): Promise<void> {
  await Promise.all(
    [...live].map(
      (c) =>
        new Promise<void>((resolve) => {
          if (c.exitCode !== null || c.signalCode !== null) return resolve();
          c.once('exit', () => resolve());
          c.kill('SIGKILL');
        }),
    ),
  );
}

const UNSETTLED = ['waiting', 'active', 'delayed', 'prioritized', 'waiting-children'] as const;

/** Job counts of the queues that are not finished (waiting, active, delayed …), summed per state. */
export async function unsettled(queues: Queue[]): Promise<Record<string, number>> {
  const sum: Record<string, number> = {};
  for (const q of queues) {
    const c = await q.getJobCounts(...UNSETTLED);
    for (const [k, v] of Object.entries(c)) sum[k] = (sum[k] ?? 0) + v;
  }
  return sum;
}

/** Waits until no job of `queues` is waiting, active or delayed; throws with the counts after `timeoutMs`. */
export async function settleQueues(queues: Queue[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const counts = await unsettled(queues);
    if (Object.values(counts).every((n) => n === 0)) return;
    if (Date.now() > deadline) throw new Error(`queues did not settle within ${timeoutMs} ms: ${JSON.stringify(counts)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

// --- What the fault tests feed and compare -------------------------------------------------------

/** A job as a producer adds it: a report on `checks` or a bundle on `checks-bulk`. */
export type FaultJob = { queue: typeof CHECKS_QUEUE; data: Record<string, unknown> } | { queue: typeof CHECK_BUNDLES_QUEUE; data: Bundle };

const HISTORY_END = Date.parse('2024-03-01T00:00:00Z') / 1000;

/**
 * A generated history (daily scans of `targets` targets by the check types that fit them over
 * `days` days: findings opened, fixed and reopened, src/demo/history.ts) as a producer would
 * deliver it: out of order within windows of 40 reports, 3% of the reports sent again later, a few
 * reports that are not FINISHED, and a share of the reports in bundles of 5-30 on `checks-bulk`.
 * Deterministic for a seed.
 */
export function faultJobs(opts: { seed: number; targets: number; days: number; bundleShare?: number }): {
  jobs: FaultJob[];
  reports: number;
} {
  const rnd = prng(opts.seed);
  const history = [...demoHistory({ targets: opts.targets, days: opts.days, end: HISTORY_END, intervalDays: 1, seed: opts.seed })];
  const shuffled: Record<string, unknown>[] = [];
  for (let i = 0; i < history.length; i += 40) {
    const window = history.slice(i, i + 40);
    for (let k = window.length - 1; k > 0; k--) {
      const j = Math.floor(rnd() * (k + 1));
      [window[k], window[j]] = [window[j]!, window[k]!];
    }
    shuffled.push(...window);
  }
  const delivered = [...shuffled];
  for (const r of shuffled) {
    if (rnd() < 0.03) delivered.splice(Math.floor(delivered.indexOf(r) + 1 + rnd() * (delivered.length - delivered.indexOf(r))), 0, r);
    if (rnd() < 0.01)
      delivered.splice(Math.floor(rnd() * delivered.length), 0, { ...r, status: 'RUNNING', check_id: `running-${String(r.check_id)}` });
  }
  const jobs: FaultJob[] = [];
  for (let i = 0; i < delivered.length; ) {
    if (rnd() < (opts.bundleShare ?? 0) / 15) {
      const size = 5 + Math.floor(rnd() * 26);
      jobs.push({ queue: CHECK_BUNDLES_QUEUE, data: { reports: delivered.slice(i, i + size) } });
      i += size;
    } else {
      jobs.push({ queue: CHECKS_QUEUE, data: delivered[i]! });
      i += 1;
    }
  }
  return { jobs, reports: delivered.length };
}

/** Dates inside and after the generated history (statistics at a fixed instant, not "now"). */
const AT_DATES = ['2024-02-15', '2024-03-10'];
const RANGE = 'minDate=2024-02-05&maxDate=2024-02-12';

/** Exposures without atDate run to "now": the only answers that depend on when they are read. */
function withoutClock(finding: Record<string, unknown>) {
  const { total_exposure: _t, current_exposure: _c, ...rest } = finding;
  return rest;
}

/**
 * What the database API shows of a store: sizes, every findings list (all pages) with status,
 * atDate and range filters, sources, targets and issues (all pages), and the statistics, current
 * and at fixed dates. Two stores holding the same history answer the same, except for exposures
 * measured to "now", which are left out.
 */
export async function apiState(get: (pathAndQuery: string) => Promise<any>): Promise<Record<string, unknown>> {
  const pages = async (path: string, query: string, key: string) => {
    const items: unknown[] = [];
    for (let page = 1; ; page++) {
      const body = await get(`${path}?${query}${query ? '&' : ''}size=100&page=${page}`);
      items.push(...body[key]);
      if (!body.pagination.more) return items;
    }
  };
  const state: Record<string, unknown> = {};
  state.size = await get('/stats/size');
  for (const q of ['', 'status=OPEN', 'status=FIXED', `status=OPEN&${RANGE}`, `status=FIXED&${RANGE}`]) {
    state[`/findings?${q}`] = ((await pages('/findings', q, 'findings')) as Record<string, unknown>[]).map(withoutClock);
  }
  for (const at of AT_DATES) {
    for (const q of [`atDate=${at}`, `status=OPEN&atDate=${at}`, `status=FIXED&atDate=${at}`])
      state[`/findings?${q}`] = await pages('/findings', q, 'findings');
  }
  state['/sources'] = await pages('/sources', '', 'sources');
  state['/targets'] = await pages('/targets', '', 'targets');
  state['/issues'] = await pages('/issues', '', 'issues');
  state['/stats/issues'] = await pages('/stats/issues', '', 'issues');
  const stats = [
    '/stats/open',
    '/stats/fixed',
    '/stats/mttr',
    '/stats/assets',
    `/stats/open?${RANGE}`,
    `/stats/fixed?${RANGE}`,
    `/stats/mttr?${RANGE}`,
  ];
  for (const at of AT_DATES) stats.push(...['open', 'fixed', 'exposure', 'exposure/current'].map((s) => `/stats/${s}?atDate=${at}`));
  for (const s of stats) state[s] = await get(s);
  return state;
}

/** The failed jobs of `queues` with their reasons and how often they were started and found stalled. */
export async function failedJobs(queues: Queue[]) {
  const out: { queue: string; id: string | undefined; reason: string; starts: number; stalls: number }[] = [];
  for (const q of queues) {
    for (const job of await q.getFailed(0, -1)) {
      out.push({ queue: q.name, id: job.id, reason: job.failedReason, starts: job.attemptsStarted, stalls: job.stalledCounter });
    }
  }
  return out;
}

/**
 * Where two API states differ: per answer, the first few differing list items (by position) or the
 * whole answer. Empty when they are equal. (A failed toEqual of two whole states prints a diff too
 * large to show anything.)
 */
export function stateDifferences(actual: Record<string, unknown>, expected: Record<string, unknown>, perKey = 3) {
  const out: { answer: string; index?: number; actual: unknown; expected: unknown }[] = [];
  for (const key of new Set([...Object.keys(expected), ...Object.keys(actual)])) {
    const [a, e] = [actual[key], expected[key]];
    if (isDeepStrictEqual(a, e)) continue;
    if (Array.isArray(a) && Array.isArray(e)) {
      const found = [];
      for (let i = 0; i < Math.max(a.length, e.length) && found.length < perKey; i++) {
        if (!isDeepStrictEqual(a[i], e[i]))
          found.push({ answer: `${key} (${a.length} items, expected ${e.length})`, index: i, actual: a[i], expected: e[i] });
      }
      out.push(...found);
    } else out.push({ answer: key, actual: a, expected: e });
  }
  return out;
}
