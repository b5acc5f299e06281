import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { failedBundles } from '../src/cli/import.js';
import { formatDuration, importRate } from '../src/cli/progress.js';
import { BUNDLE_MAX_REPORTS, BUNDLE_SIZE } from '../src/queue/contract.js';
import { report, V } from './support/reports.js';
import { REDIS_URL, startTestService, type TestService } from './support/service.js';
import { runVulndb } from './support/cli-run.js';

/**
 * The `vulndb` command as a process (`node --import tsx src/cli/main.ts …`): exit codes 0 (done),
 * 1 (reports rejected or failed, the import gave up) and 2 (usage, input or configuration error),
 * --version, one-line errors, a subcommand's own help after its usage errors, and start-up time.
 * Queued imports only ever use queues of their own (hidden --queue-prefix), never `bull:*`.
 */

const exec = promisify(execFile);

const vulndb = runVulndb;

const r = (id: string, target: string) => report({ check_id: id, target, end_time: '2024-01-01 10:00:00', vulnerabilities: [V] });

let dir: string;
let good: string;
let withRejected: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vulndb-cli-'));
  good = path.join(dir, 'good.jsonl');
  fs.writeFileSync(good, [r('c1', 'a.example.com'), r('c2', 'b.example.com')].map((x) => JSON.stringify(x)).join('\n'));
  withRejected = path.join(dir, 'rejected.json');
  fs.writeFileSync(withRejected, JSON.stringify([r('c3', 'c.example.com'), { ...r('c4', 'd.example.com'), target: '' }]));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('vulndb exit codes with a worker', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(() => svc?.close());
  const prefix = () => ['--queue-prefix', svc.names.queuePrefix];

  it('given valid reports, when imported with --wait, then they are processed and it exits 0', async () => {
    const run = await vulndb(['import', '--wait', ...prefix(), good], { REDIS_URL });
    expect(run.stderr).not.toContain('vulndb:');
    expect(run.stdout).toMatch(
      /^accepted 2, ignored 0 \(status not FINISHED\), rejected 0 of 2 reports in [\d.]+ s \(processed: ingested 2, duplicates 0\)\n$/,
    );
    expect(run.code).toBe(0);
    expect(await svc.bulk.getJobCounts('completed', 'failed')).toEqual({ completed: 1, failed: 0 });
  });

  it('given a rejected report, when imported, then the others are enqueued and it exits 1 naming the rejection', async () => {
    const run = await vulndb(['import', '--wait', '--json', ...prefix(), withRejected], { REDIS_URL });
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({
      read: 2,
      accepted: 1,
      rejected: 1,
      rejections: [{ origin: `${withRejected}[1]`, reason: 'target: must be a non-empty string' }],
      failedBundles: { count: 0, first: [] },
    });
  });

  it('given a bundle the worker fails, then failedBundles counts it (and only jobs of this import) with the reason', async () => {
    const startedAt = Date.now();
    const bad = { reports: [r('b1', 'x.example.com'), { ...r('b2', 'y.example.com'), end_time: 'yesterday' }] };
    const [mine, other] = await Promise.all([svc.bulk.add('reports', bad), svc.bulk.add('reports', bad)]);
    await svc.settle();
    const failed = await failedBundles(svc.bulk, new Set([String(mine.id)]), startedAt);
    expect(failed.count).toBe(1);
    expect(failed.first).toEqual([{ id: String(mine.id), reason: expect.stringContaining('end_time') }]);
    expect(other.id).not.toBe(mine.id);
  });
});

describe('vulndb import --wait-timeout', () => {
  // A queue prefix no worker reads: the bundles stay waiting.
  const prefix = `bull-cli-test-${randomUUID().slice(0, 8)}`;
  afterAll(async () => {
    const redis = new Redis(REDIS_URL);
    const found = await redis.keys(`${prefix}:*`);
    if (found.length > 0) await redis.del(...found);
    redis.disconnect();
  });

  it('given no worker, when waiting, then it gives up after the timeout with a clear message and exits 1', async () => {
    const started = performance.now();
    const run = await vulndb(['import', '--wait', '--wait-timeout', '1', '--queue-prefix', prefix, good], { REDIS_URL });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      'vulndb: gave up waiting after enqueueing 2 reports: no job of the queue finished in 1 s (1 bundles waiting)',
    );
    expect(run.stderr).toContain('is a worker running');
    expect(performance.now() - started).toBeLessThan(30_000);
  });
});

describe('vulndb usage, input and configuration errors exit 2', () => {
  it.each([
    ['an unknown option', ['import', '--bogus', 'x.json'], "error: unknown option '--bogus'"],
    [
      'a bad --bundle-size',
      ['import', '--bundle-size', 'x', 'x.json'],
      `error: --bundle-size must be an integer from 1 to ${BUNDLE_MAX_REPORTS}`,
    ],
    ['a bad --wait-timeout', ['import', '--wait-timeout', 'soon', 'x.json'], 'error: --wait-timeout must be a number of seconds'],
    ['an unknown command', ['bogus'], "error: unknown command 'bogus'"],
  ])('given %s, then it exits 2', async (_name, args, message) => {
    const run = await vulndb(args);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(message);
    expect(run.stdout).toBe('');
  });

  it('given an invalid env var, then it exits 2 with one line naming it', async () => {
    const run = await vulndb(['import', good], { PAGE_SIZE_MAX: 'x' });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^vulndb: invalid configuration: PAGE_SIZE_MAX: [^\n]*\n$/);
  });

  it.each(['localhost:6379', 'redis//redis:6379', 'http://redis:6379', 'redis://'])(
    'given REDIS_URL=%s (not a redis:// URL), then every command that needs it exits 2 naming it',
    async (url) => {
      for (const args of [['import', good], ['jobs', 'failed'], ['serve']]) {
        const run = await vulndb(args, { REDIS_URL: url });
        expect(run.stderr).toMatch(/^vulndb: invalid configuration: REDIS_URL: must be a redis:\/\/ or rediss:\/\/ URL[^\n]*\n$/);
        expect(run.code).toBe(2);
      }
    },
  );

  it('given a missing file, then it says so in one line and exits 2 before connecting anywhere', async () => {
    const missing = path.join(dir, 'reports.json');
    for (const args of [
      ['import', missing],
      ['import', '--direct', missing],
      ['import', good, missing],
    ]) {
      const run = await vulndb(args);
      expect(run.stderr).toBe(`vulndb: cannot read ${missing}: no such file\n`);
      expect(run.code).toBe(2);
    }
  });

  it("given a subcommand's usage error, then its own help follows, not the top-level one", async () => {
    const run = await vulndb(['import', '--bundle-size', '0', good]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('Usage: vulndb import [options] <inputs...>');
    expect(run.stderr).toContain('--wait-timeout <seconds>');
    expect(run.stderr).not.toContain('Commands:');
    const token = await vulndb(['token', '--sub', 'a', '--ttl', '3x']);
    expect(token.code).toBe(2);
    expect(token.stderr).toContain('Usage: vulndb token [options]');
    const recompute = await vulndb(['recompute', '--bogus']);
    expect(recompute.code).toBe(2);
    expect(recompute.stderr).toContain('Usage: vulndb recompute [options]');
  });
});

describe('vulndb --version and --help', () => {
  it("prints package.json's version", async () => {
    const pkg = JSON.parse(fs.readFileSync('package.json', 'utf8')) as { version: string };
    const run = await vulndb(['--version']);
    expect(run).toEqual({ code: 0, stdout: `${pkg.version}\n`, stderr: '' });
  });

  it("prints vulndb's version, not npm's, as `npx vulndb --version` and `npm run -s vulndb -- --version`", async () => {
    const pkg = JSON.parse(fs.readFileSync('package.json', 'utf8')) as { version: string };
    const npm = (await exec('npm', ['--version'])).stdout.trim();
    expect(npm).not.toBe(pkg.version);
    const env = { ...process.env, NPM_CONFIG_UPDATE_NOTIFIER: 'false', LOG_LEVEL: 'error' };
    for (const [tool, args] of [
      ['npx', ['--no-install', 'vulndb', '--version']],
      ['npm', ['run', '-s', 'vulndb', '--', '--version']],
    ] as const) {
      const { stdout } = await exec(tool, [...args], { env, timeout: 60_000 });
      expect(stdout, `${tool} ${args.join(' ')}`).toBe(`${pkg.version}\n`);
    }
  });

  it("starts fast (no service modules loaded) and shows import's numbers as the queue contract has them", async () => {
    const started = performance.now();
    const run = await vulndb(['--help']);
    const ms = performance.now() - started;
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Exit codes: 0 done, 1');
    // A generous bound for a busy machine (tsx included); measured ~1.5 s with tsx, ~0.5 s compiled.
    expect(ms).toBeLessThan(3000);
    const help = await vulndb(['import', '--help']);
    expect(help.stdout).toContain(`(1-${BUNDLE_MAX_REPORTS}) (default: ${BUNDLE_SIZE})`);
    expect(help.stdout).not.toContain('--queue-prefix');
    // Commands loaded lazily (jobs, recompute) show their real help, however asked.
    for (const args of [
      ['help', 'jobs'],
      ['jobs', '--help'],
    ])
      expect((await vulndb(args)).stdout).toContain('Usage: vulndb jobs [options] [command]');
  });
});

describe('import progress', () => {
  it('shows the share of the input bytes, the rate and the time left', () => {
    expect(importRate({ read: 100, bytesRead: 250 }, 1000, 2)).toBe('25% of 1.0 kB, 50 reports/s, ETA 6 s');
    expect(importRate({ read: 100, bytesRead: 1000 }, 1000, 2)).toBe('100% of 1.0 kB, 50 reports/s');
    expect(importRate({ read: 30_000, bytesRead: 0 }, undefined, 2)).toBe('15,000 reports/s');
    expect([formatDuration(59.6), formatDuration(125), formatDuration(7300), formatDuration(Infinity)]).toEqual([
      '1 min 0 s',
      '2 min 5 s',
      '2 h 1 min',
      '?',
    ]);
  });
});
