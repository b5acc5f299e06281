import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { JobType, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { checksQueue } from '../src/queue/producer.js';
import { defaultRedisNames } from '../src/queue/redis.js';
import { entryOf, execCmd, readDockerfile, type Stage } from './support/dockerfile.js';
import { freePort, startPrivateRedis, type PrivateRedis } from './support/private-redis.js';
import { report } from './support/reports.js';

/**
 * Issue 22: stops never reached the service in containers (npm and sh took SIGTERM, node was
 * orphaned and SIGKILLed). This test runs EXACTLY the command of the image's CMD, parsed from the
 * Dockerfile, in a copy of the production stage's layout made as the Dockerfile makes it: the
 * build stage's `npm run build` (the package.json script, emitting into the copy; its type check
 * is `tsc --noEmit` of `npm test`, so it is skipped here with --noCheck), sql/ and package.json
 * beside dist/, the stage's WORKDIR and ENV. node_modules is the checkout's (the image omits dev
 * and optional packages; what the compiled code imports is checked in test/deploy.test.ts).
 *
 * There is no ClickHouse server here, so the store is embedded (DATA_DIR in a temp folder), and
 * Redis is a private redis-server. The CMD is `serve api`, which has no worker: the api is run as
 * the CMD says, takes reports on POST /checks and stops on SIGTERM; the batch part runs the same
 * entry file with the same node flags and `serve` (all roles), because in embedded mode one
 * process owns the store (in the stack, `serve worker` is a separate container on the server).
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const REPORTS = 500;
const BATCH = 100;

interface LogLine {
  level: string;
  msg: string;
  [field: string]: unknown;
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

/** A process of the image's command, its JSON log lines (stderr) kept in order. */
class Run {
  readonly logs: LogLine[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly started = performance.now();
  private readonly waiters = new Set<() => void>();
  private done = false;

  constructor(readonly child: ChildProcess) {
    live.add(child);
    readline.createInterface({ input: child.stderr! }).on('line', (text) => {
      try {
        this.logs.push(JSON.parse(text) as LogLine);
      } catch {
        this.logs.push({ level: 'raw', msg: text });
      }
      for (const w of [...this.waiters]) w();
    });
    child.stdout!.resume();
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        live.delete(child);
        this.done = true;
        for (const w of [...this.waiters]) w();
        resolve({ code, signal });
      }),
    );
  }

  tail(n = 20): string {
    return this.logs
      .slice(-n)
      .map((l) => JSON.stringify(l))
      .join('\n');
  }

  index(msg: string | RegExp, from = 0): number {
    const i = this.logs.slice(from).findIndex((l) => (typeof msg === 'string' ? l.msg === msg : msg.test(l.msg)));
    return i < 0 ? -1 : i + from;
  }

  waitFor(msg: string, timeoutMs: number): Promise<LogLine> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const i = this.index(msg);
        if (i >= 0) return finish(() => resolve(this.logs[i]!));
        if (this.done) return finish(() => reject(new Error(`exited before logging "${msg}":\n${this.tail()}`)));
      };
      const timer = setTimeout(() => finish(() => reject(new Error(`no "${msg}" within ${timeoutMs} ms:\n${this.tail()}`))), timeoutMs);
      const finish = (then: () => void) => {
        clearTimeout(timer);
        this.waiters.delete(check);
        then();
      };
      this.waiters.add(check);
      check();
    });
  }

  /** SIGTERM, then the exit within `graceMs` (else SIGKILL, as the container engine would). */
  async terminate(graceMs: number): Promise<{ code: number | null; signal: NodeJS.Signals | null; seconds: number }> {
    const sent = performance.now();
    this.child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), graceMs)));
    const result = await Promise.race([this.exited, late]);
    clearTimeout(timer);
    if (result === 'late') {
      this.child.kill('SIGKILL');
      await this.exited;
      throw new Error(`no exit within ${graceMs} ms of SIGTERM (SIGKILLed):\n${this.tail()}`);
    }
    return { ...result, seconds: (performance.now() - sent) / 1000 };
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Job counts of the given states (0 for a state BullMQ leaves out). */
async function jobCounts<T extends JobType>(queue: Queue, ...states: T[]): Promise<Record<T, number>> {
  const counts = await queue.getJobCounts(...states);
  return Object.fromEntries(states.map((s) => [s, counts[s] ?? 0])) as Record<T, number>;
}

/** `ENV A=1 B=2` lines of a stage. */
function stageEnv(stage: Stage): Record<string, string> {
  const env: Record<string, string> = {};
  for (const i of stage.instructions.filter((i) => i.keyword === 'ENV')) {
    for (const pair of i.args.split(' ')) {
      const eq = pair.indexOf('=');
      if (eq > 0) env[pair.slice(0, eq)] = pair.slice(eq + 1);
    }
  }
  return env;
}

describe("the image's CMD, run as the image runs it", () => {
  const stages = readDockerfile();
  const production = stages[stages.length - 1]!;
  const build = stages.find((s) => s.name === 'build')!;
  const cmd = execCmd(production);
  const { index: entryIndex } = entryOf(cmd);
  /** The same node flags and entry file, all roles (see above). */
  const allRoles = [...cmd.slice(0, entryIndex + 1), 'serve'];
  const compose = parseYaml(fs.readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true });
  const graceSeconds = (duration: string) => Number(/^(\d+)s$/.exec(duration)?.[1]);
  const workerGraceMs = graceSeconds(compose.services.worker.stop_grace_period) * 1000;
  const apiGraceMs = graceSeconds(compose.services.api.stop_grace_period) * 1000;

  let tmp: string;
  let app: string;
  let redis: PrivateRedis;
  let producer: Redis;
  let queue: Queue;
  let env: NodeJS.ProcessEnv;
  const runs: Run[] = [];

  const start = (argv: string[]) => {
    expect(argv[0]).toBe('node');
    const run = new Run(spawn(process.execPath, argv.slice(1), { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'] }));
    runs.push(run);
    return run;
  };

  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'vulndb-image-'));
    // WORKDIR of the production stage, laid out by its COPY instructions.
    const workdir = production.instructions.filter((i) => i.keyword === 'WORKDIR').map((i) => i.args);
    expect(workdir).toEqual(['/app']);
    app = path.join(tmp, 'app');
    fs.mkdirSync(app);
    for (const copy of production.instructions.filter((i) => i.keyword === 'COPY').map((i) => i.args.split(' '))) {
      const dest = copy[copy.length - 1]!;
      if (copy[0] === '--from=build') {
        // The build stage's output: `npm run build` with the output directory in the copy.
        expect(copy.slice(1)).toEqual(['/app/dist', './dist']);
        expect(build.instructions.map((i) => i.args)).toContain('npm run build');
        const script: string = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).scripts.build;
        const [tool, ...args] = script.split(' ');
        expect(tool).toBe('tsc');
        const tsc = spawnSync(
          process.execPath,
          [path.join(ROOT, 'node_modules/typescript/bin/tsc'), ...args, '--noCheck', '--outDir', path.join(app, 'dist')],
          {
            cwd: ROOT,
            encoding: 'utf8',
          },
        );
        expect(tsc.status, `${script}: ${tsc.stdout}${tsc.stderr}`).toBe(0);
        continue;
      }
      for (const src of copy.slice(0, -1)) fs.cpSync(path.join(ROOT, src), path.join(app, dest === './' ? src : dest), { recursive: true });
    }
    expect(fs.existsSync(path.join(app, cmd[entryIndex]!))).toBe(true);
    // In place of `npm ci --omit=dev --omit=optional`: the checkout's packages (chdb among them,
    // for the embedded store of this test).
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(app, 'node_modules'), 'dir');

    redis = await startPrivateRedis();
    producer = new Redis(redis.url, { maxRetriesPerRequest: null });
    queue = checksQueue(producer, defaultRedisNames);
    env = { ...process.env };
    for (const key of Object.keys(env)) {
      if (/^(CLICKHOUSE_|REDIS_|JWT_|DB_API_|METRICS_API_|ADMIN_|INGEST_|WORKER_)/.test(key)) delete env[key];
    }
    Object.assign(env, stageEnv(production), {
      DATA_DIR: path.join(tmp, 'data'),
      REDIS_URL: redis.url,
      HOST: '127.0.0.1',
      DB_API_PORT: '0',
      METRICS_API_PORT: '0',
      ADMIN_HOST: '127.0.0.1',
      ADMIN_PORT: String(await freePort()),
      JWT_SECRET: 'image-command-test-secret-0123456789abcdef',
      INGEST_BATCH_SIZE: String(BATCH),
      LOG_LEVEL: 'info',
    });
    expect(env.NODE_ENV).toBe('production');
  }, 240_000);

  afterAll(async () => {
    for (const run of runs) if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill('SIGKILL');
    await Promise.all(runs.map((r) => r.exited));
    await queue?.close();
    producer?.disconnect();
    await redis?.kill();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  });

  it('links `vulndb` onto PATH to bin/vulndb.mjs, which runs the compiled CLI (no src/ in the image)', () => {
    const links = production.instructions.filter((i) => i.keyword === 'RUN' && /\bln -s\b.*\/usr\/local\/bin\/vulndb$/.test(i.args));
    expect(links.map((i) => i.args)).toEqual(['ln -s /app/bin/vulndb.mjs /usr/local/bin/vulndb']);
    expect(fs.existsSync(path.join(app, 'src'))).toBe(false);
    const version = spawnSync(process.execPath, [path.join(app, 'bin/vulndb.mjs'), '--version'], { cwd: app, env, encoding: 'utf8' });
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect({ status: version.status, stdout: version.stdout }).toEqual({ status: 0, stdout: `${pkg.version}\n` });
  });

  it('serves the API, takes reports on POST /checks, and stops on SIGTERM: "signal received", "stopped", exit 0', async () => {
    const api = start(cmd);
    const listening = await api.waitFor('APIs listening', 60_000);
    const readySeconds = (performance.now() - api.started) / 1000;
    const base = String(listening.database);
    expect((await fetch(`${base}/healthcheck`)).status).toBe(200);
    // The admin listener's readiness, once it exists (issue 22; compose's health checks use it).
    const ready = await fetch(`http://127.0.0.1:${env.ADMIN_PORT}/readyz`).catch(() => undefined);
    if (ready) expect(ready.status).toBe(200);

    for (let i = 0; i < REPORTS; i += 20) {
      await Promise.all(
        Array.from({ length: Math.min(20, REPORTS - i) }, async (_, k) => {
          const n = i + k;
          const body = report({
            check_id: `image-${String(n).padStart(4, '0')}`,
            target: `host-${n % 25}.example.com`,
            end_time: `2026-01-${String(1 + (n % 28)).padStart(2, '0')} 10:00:00`,
            vulnerabilities: [{ summary: `Image test issue ${n}`, score: 5, affected_resource: `r-${n}` }],
          });
          const res = await fetch(`${base}/checks`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(body),
          });
          expect(res.status, await res.clone().text()).toBe(202);
        }),
      );
    }
    expect((await jobCounts(queue, 'waiting')).waiting).toBe(REPORTS);

    const exit = await api.terminate(apiGraceMs);
    expect(exit, api.tail()).toMatchObject({ code: 0, signal: null });
    const signal = api.index(/^signal received/);
    expect(signal, api.tail()).toBeGreaterThanOrEqual(0);
    expect(api.logs[signal]!.signal).toBe('SIGTERM');
    expect(api.index('stopped', signal), api.tail()).toBeGreaterThan(signal);
    console.info(`image CMD: ready in ${readySeconds.toFixed(1)} s, stopped in ${exit.seconds.toFixed(2)} s`);
  }, 180_000);

  it('commits the batch in flight on SIGTERM (same entry, all roles), exits 0 within the worker grace period, and loses no report', async () => {
    const svc = start(allRoles);
    await svc.waitFor('batch committed', 60_000);
    // Wait until the worker holds a new full batch (in flight: being applied, or about to be): as
    // many jobs active as a batch while every job of a logged batch has completed, twice 50 ms
    // apart with no batch logged in between (the jobs of a batch committed an instant ago are
    // still active until BullMQ finishes them).
    const committedJobs = () => svc.logs.filter((l) => l.msg === 'batch committed').reduce((sum, l) => sum + Number(l.jobs), 0);
    const holdsNewBatch = async () => {
      const logged = committedJobs();
      const c = await jobCounts(queue, 'active', 'completed');
      return c.active >= BATCH && c.completed === logged && committedJobs() === logged;
    };
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (Date.now() > deadline) throw new Error(`the worker never held a new full batch:\n${svc.tail()}`);
      const before = committedJobs();
      if ((await holdsNewBatch()) && (await sleep(50), await holdsNewBatch()) && committedJobs() === before) break;
      await sleep(5);
    }
    const exit = await svc.terminate(workerGraceMs);
    expect(exit, svc.tail()).toMatchObject({ code: 0, signal: null });
    const signal = svc.index(/^signal received/);
    expect(signal, svc.tail()).toBeGreaterThanOrEqual(0);
    expect(svc.logs[signal]!.signal).toBe('SIGTERM');
    // The batch held at the signal was committed after it, then the service stopped.
    const committedAfter = svc.index('batch committed', signal);
    expect(committedAfter, svc.tail()).toBeGreaterThan(signal);
    expect(svc.index('stopped', committedAfter), svc.tail()).toBeGreaterThan(committedAfter);
    expect(
      svc.logs.filter((l) => ['error', 'fatal'].includes(String(l.level)) || Number(l.level) >= 50),
      svc.tail(),
    ).toEqual([]);

    // Nothing left active for stall recovery, nothing failed; every completed job was in a committed batch.
    const counts = await jobCounts(queue, 'active', 'waiting', 'completed', 'failed', 'delayed', 'prioritized');
    expect(counts.active).toBe(0);
    expect(counts.failed).toBe(0);
    const committed = committedJobs();
    expect(counts.completed).toBe(committed);
    expect(counts.completed + counts.waiting + counts.delayed + counts.prioritized).toBe(REPORTS);
    expect(counts.waiting, 'the stop came before the queue was drained').toBeGreaterThan(0);
    console.info(`SIGTERM with a batch in flight: ${committed} reports committed, exit 0 in ${exit.seconds.toFixed(2)} s`);

    // Restarted, it ingests the rest: every accepted report is stored once.
    const again = start(allRoles);
    const listening = await again.waitFor('APIs listening', 60_000);
    const drained = Date.now() + 60_000;
    while ((await jobCounts(queue, 'completed')).completed < REPORTS) {
      if (Date.now() > drained) throw new Error(`the queue did not drain:\n${again.tail()}`);
      await sleep(100);
    }
    const size = (await (await fetch(`${String(listening.database)}/stats/size`)).json()) as { size: Record<string, number> };
    expect(size.size.sources).toBe(REPORTS);
    expect(size.size.findings).toBe(REPORTS);
    const last = await again.terminate(workerGraceMs);
    expect(last, again.tail()).toMatchObject({ code: 0, signal: null });
    expect(again.index('stopped'), again.tail()).toBeGreaterThan(again.index(/^signal received/));
  }, 180_000);
});
