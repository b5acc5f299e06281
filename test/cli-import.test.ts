import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { importDirect, importReports } from '../src/cli/import.js';
import { ReportBatcher } from '../src/ingest/batcher.js';
import { silentLogger } from '../src/log.js';
import { defaultRedisNames, keys } from '../src/queue/redis.js';
import { freshStore, testDataDir } from './support/engine.js';
import { report, V } from './support/reports.js';
import { json, REDIS_URL, startTestService, type TestService } from './support/service.js';
import { ownedStore } from './support/owned-store.js';
import { longHelpSarif, manyRunsSarif } from './support/large-imports.js';

const r = (id: string, target = 'www.example.com', day = '01') =>
  report({ check_id: id, target, end_time: `2024-01-${day} 10:00:00`, vulnerabilities: [V] });

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vulndb-import-'));
  fs.mkdirSync(path.join(dir, 'batch'));
  // An array with one invalid report, JSON lines with one broken line, a pretty-printed object.
  fs.writeFileSync(path.join(dir, 'batch', 'array.json'), JSON.stringify([r('a1'), { ...r('a2'), target: '' }], null, 2));
  fs.writeFileSync(
    path.join(dir, 'batch', 'lines.jsonl'),
    [
      JSON.stringify(r('l1', 'b.example.com')),
      '{"broken": ',
      '',
      JSON.stringify({ status: 'RUNNING' }),
      JSON.stringify(r('l2', 'b.example.com', '02')),
    ].join('\n'),
  );
  fs.writeFileSync(path.join(dir, 'single.json'), JSON.stringify(r('s1', 'c.example.com'), null, 2));
  fs.writeFileSync(path.join(dir, 'batch', 'notes.txt'), 'not a report file');
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('vulndb import (queued)', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(() => svc.close());

  it('enqueues the valid reports of files, arrays, JSON lines and directories and names every rejection', async () => {
    // Bundles of two: the four valid reports travel as two jobs.
    const summary = await importReports({
      inputs: [path.join(dir, 'batch'), path.join(dir, 'single.json')],
      queue: svc.bulk,
      bundleSize: 2,
    });
    expect(summary).toMatchObject({ read: 7, accepted: 4, ignored: 1, rejected: 2 });
    expect(summary.rejections).toEqual([
      { origin: `${path.join(dir, 'batch', 'array.json')}[1]`, reason: 'target: must be a non-empty string' },
      { origin: `${path.join(dir, 'batch', 'lines.jsonl')}:2`, reason: expect.stringContaining('not valid JSON') },
    ]);
    await svc.settle();
    expect(await svc.bulk.getJobCounts('completed')).toEqual({ completed: 2 });
    expect((await json(svc.db('/stats/size'))).size).toMatchObject({ sources: 4, targets: 3, findings: 3, finding_events: 4 });
  });
});

describe('vulndb import options', () => {
  it.each([
    ['--bundle-size', '0', '--bundle-size must be an integer from 1 to 1000'],
    ['--bundle-size', '1001', '--bundle-size must be an integer from 1 to 1000'],
    ['--max-pending', '-5', '--max-pending must be a positive integer'],
  ])('refuses %s %s before reading or enqueueing anything', async (option, value, message) => {
    const env = { ...process.env, REDIS_URL: 'redis://127.0.0.1:1', LOG_LEVEL: 'error' };
    const failed = await promisify(execFile)(
      process.execPath,
      [path.resolve('bin/vulndb.mjs'), 'import', option, value, path.join(dir, 'single.json')],
      { env },
    ).catch((e) => e);
    expect(failed.code).toBe(2);
    expect(failed.stderr).toContain(message);
  });
});

describe('vulndb import --direct', () => {
  it('applies the reports in process and finds them duplicates the second time', async () => {
    const store = await freshStore();
    const batcher = new ReportBatcher({
      store,
      ...ownedStore(store),
      batchSize: 2,
      waitMs: 1,
      concurrency: 1,
      maxEventAgeDays: 0,
      log: silentLogger,
    });
    const inputs = [path.join(dir, 'batch'), path.join(dir, 'single.json')];
    const first = await importDirect({ inputs, batcher, maxInFlight: 4 });
    expect(first).toMatchObject({ read: 7, ingested: 4, duplicates: 0, ignored: 1, rejected: 2 });
    const again = await importDirect({ inputs, batcher, maxInFlight: 4 });
    expect(again).toMatchObject({ ingested: 0, duplicates: 4, rejected: 2 });
    const [size] = await store.query<{ n: number }>('SELECT count() AS n FROM sources');
    expect(size!.n).toBe(4);
  });

  const run = promisify(execFile);
  const bin = path.resolve('bin/vulndb.mjs');
  // A Redis database of its own, so the command's data version bump is visible and touches no one else's.
  const redisUrl = Object.assign(new URL(REDIS_URL), { pathname: '/15' }).href;
  const redis = new Redis(redisUrl);
  const version = async () => Number((await redis.get(keys.dataVersion(defaultRedisNames))) ?? 0);
  afterAll(async () => {
    await redis.del(keys.dataVersion(defaultRedisNames));
    redis.disconnect();
  });

  it('runs as a command with a summary and exit code 1 when reports were rejected, and bumps the data version', async () => {
    const env = { ...process.env, DATA_DIR: path.join(testDataDir(), 'cli'), REDIS_URL: redisUrl, LOG_LEVEL: 'error' };
    const before = await version();
    const failed = await run(process.execPath, [bin, 'import', '--direct', '--json', path.join(dir, 'batch')], { env }).catch((e) => e);
    expect(failed.code).toBe(1);
    expect(JSON.parse(failed.stdout)).toMatchObject({ read: 6, ingested: 3, ignored: 1, rejected: 2 });
    expect(await version()).toBe(before + 1);
    const ok = await run(process.execPath, [bin, 'import', '--direct', path.join(dir, 'single.json')], { env });
    expect(ok.stdout).toMatch(/^ingested 1, duplicates 0, ignored 0 \(status not FINISHED\), rejected 0 of 1 reports/);
    expect(ok.stderr).not.toContain('warning');
    expect(await version()).toBe(before + 2);
  });

  it('warns that cached answers may be stale when Redis does not answer', async () => {
    const env = {
      ...process.env,
      DATA_DIR: path.join(testDataDir(), 'cli-no-redis'),
      REDIS_URL: 'redis://127.0.0.1:1',
      LOG_LEVEL: 'error',
    };
    const ok = await run(process.execPath, [bin, 'import', '--direct', path.join(dir, 'single.json')], { env });
    expect(ok.stdout).toMatch(/^ingested 1, /);
    expect(ok.stderr).toContain('warning: Redis at redis://127.0.0.1:1 did not answer, so the data version was not bumped');
  });
});

describe('vulndb import --format sarif|trivy', () => {
  const run = promisify(execFile);
  const bin = path.resolve('bin/vulndb.mjs');
  const TRIVY = path.resolve('test/fixtures/trivy/alpine-310.json.golden');
  const SARIF = path.resolve('test/fixtures/trivy/alpine-310.sarif.golden');
  let svc: TestService;
  let docs: string;
  beforeAll(async () => {
    svc = await startTestService();
    docs = fs.mkdtempSync(path.join(os.tmpdir(), 'vulndb-import-docs-'));
    fs.copyFileSync(SARIF, path.join(docs, 'image.sarif'));
    fs.writeFileSync(path.join(docs, 'not-sarif.json'), fs.readFileSync(TRIVY));
    fs.writeFileSync(path.join(docs, 'notes.txt'), 'not a document');
  });
  afterAll(async () => {
    await svc.close();
    fs.rmSync(docs, { recursive: true, force: true });
  });
  const vulndb = (args: string[]) =>
    run(process.execPath, [bin, 'import', '--queue-prefix', String(svc.bulk.opts.prefix), ...args], {
      env: { ...process.env, REDIS_URL, LOG_LEVEL: 'error' },
    }).catch((e) => e);
  const findingsOf = async (identifier: string) =>
    (await json(svc.db(`/findings?identifier=${encodeURIComponent(identifier)}&identifiermatch=true&size=100`))).findings;

  it('converts a Trivy document, queues its report and waits for the worker, with the summary of any import', async () => {
    const done = await vulndb(['--format', 'trivy', '--wait', '--json', TRIVY]);
    expect(done.code ?? 0).toBe(0);
    expect(JSON.parse(done.stdout)).toMatchObject({
      read: 1,
      bytesRead: fs.statSync(TRIVY).size,
      accepted: 1,
      ignored: 0,
      rejected: 0,
      failedBundles: { count: 0 },
      processed: { ingested: 1, duplicates: 0, ignored: 0, unknownBundles: 0 },
    });
    const findings = await findingsOf('testdata/fixtures/images/alpine-310.tar.gz');
    expect(findings.map((f: any) => `${f.issue.summary.slice(0, 13)} ${f.affected_resource.split(' ')[0]} ${f.score}`).sort()).toEqual([
      'CVE-2019-1549 libcrypto1.1@1.1.1c-r0 5.3',
      'CVE-2019-1549 libssl1.1@1.1.1c-r0 5.3',
      'CVE-2019-1551 libcrypto1.1@1.1.1c-r0 5.3',
      'CVE-2019-1551 libssl1.1@1.1.1c-r0 5.3',
    ]);
  });

  it('reads every document of a directory with the target and time given, and names the document it refuses', async () => {
    const done = await vulndb(['--format', 'sarif', '--target', 'cli-sarif.example.com', '--time', '2024-06-01T12:00:00Z', '--wait', docs]);
    expect(done.code).toBe(1);
    expect(done.stdout).toMatch(/^accepted 1, ignored 0 \(status not FINISHED\), rejected 1 of 2 reports/);
    expect(done.stdout).toContain(`rejected ${path.join(docs, 'not-sarif.json')}: not a SARIF 2.1.0 document: runs`);
    const findings = await findingsOf('cli-sarif.example.com');
    expect(findings).toHaveLength(2);
    expect(findings.map((f: any) => f.source.time)).toEqual(['2024-06-01T12:00:00Z', '2024-06-01T12:00:00Z']);
  });

  it('refuses a document whose reports pass MAX_REPORT_BYTES or 1,000 reports, naming the bound (exit 1), and queues nothing of it', async () => {
    const bounds = fs.mkdtempSync(path.join(os.tmpdir(), 'vulndb-import-bounds-'));
    onTestFinished(() => fs.rmSync(bounds, { recursive: true, force: true }));
    fs.writeFileSync(path.join(bounds, 'long-help.sarif'), longHelpSarif(50_000, 2000));
    fs.writeFileSync(path.join(bounds, 'many-runs.sarif'), manyRunsSarif(1001));
    const before = await svc.bulk.getJobCounts('waiting', 'active', 'completed', 'failed');
    const done = await vulndb(['--format', 'sarif', '--target', 'cli-bounds.example.com', bounds]);
    expect(done.code).toBe(1);
    expect(done.stdout).toMatch(/^accepted 0, ignored 0 \(status not FINISHED\), rejected 2 of 2 reports/);
    expect(done.stdout).toContain(
      `rejected ${path.join(bounds, 'long-help.sarif')}: Import Too Large: its reports would hold more than 10485760 bytes`,
    );
    expect(done.stdout).toContain(`rejected ${path.join(bounds, 'many-runs.sarif')}: Import Too Large: it yields more than 1000 reports`);
    expect(await svc.bulk.getJobCounts('waiting', 'active', 'completed', 'failed')).toEqual(before);
  });

  it('finds the same document imported again a duplicate, and says so', async () => {
    const before = (await json(svc.db('/stats/size'))).size;
    const done = await vulndb(['--format', 'trivy', '--wait', TRIVY]);
    expect(done.code ?? 0).toBe(0);
    expect((await json(svc.db('/stats/size'))).size).toEqual(before);
    expect(done.stdout).toMatch(
      /^accepted 1, ignored 0 \(status not FINISHED\), rejected 0 of 1 reports in [\d.]+ s \(processed: ingested 0, duplicates 1\)\n/,
    );
    expect(done.stdout).toContain('\n  every report was a duplicate: imported before, nothing changed\n');
  });

  it('moves the progress with every document read, by its bytes', async () => {
    const three = fs.mkdtempSync(path.join(os.tmpdir(), 'vulndb-import-three-'));
    for (const name of ['a.json', 'b.json', 'c.json']) fs.copyFileSync(TRIVY, path.join(three, name));
    const seen: number[] = [];
    const documents = { format: 'trivy' as const, target: 'three.example.com', maxReportBytes: 10 * 1024 * 1024 };
    try {
      const summary = await importReports({ inputs: [three], documents, queue: svc.bulk, onProgress: (p) => seen.push(p.bytesRead) });
      const size = fs.statSync(TRIVY).size;
      expect(seen).toEqual([size, 2 * size, 3 * size, 3 * size]);
      expect(summary.bytesRead).toBe(3 * size);
      await svc.settle();
    } finally {
      fs.rmSync(three, { recursive: true, force: true });
    }
  });

  it('shows the progress of a document by its bytes: the whole file read, no unknown ETA', async () => {
    const done = await vulndb(['--format', 'trivy', '--target', 'progress.example.com', TRIVY]);
    expect(done.code ?? 0).toBe(0);
    const kB = `${(fs.statSync(TRIVY).size / 1e3).toFixed(1)} kB`;
    // Not a terminal: the first and the last progress lines, one a line.
    const lines = done.stderr.trim().split('\n');
    expect(lines[0]).toBe(`importing ${kB} from ${TRIVY}`);
    expect(lines[lines.length - 1]).toMatch(new RegExp(`^100% of ${kB}, [\\d,]+ reports/s  read 1  accepted 1  ignored 0  rejected 0$`));
    expect(done.stderr).not.toContain('ETA ?');
  });

  it.each([
    [['--target', 'x', TRIVY], '--target and --time apply to --format sarif|trivy only'],
    [['--format', 'trivy', '--time', 'yesterday', TRIVY], '--time must be an RFC 3339 timestamp'],
    [['--format', 'cyclonedx', TRIVY], "argument 'cyclonedx' is invalid"],
  ])('refuses %j before reading or enqueueing anything (exit 2)', async (args, message) => {
    const failed = await vulndb(args);
    expect(failed.code).toBe(2);
    expect(failed.stderr).toContain(message);
  });

  it('applies documents in process with --direct, the second time as duplicates', async () => {
    const store = await freshStore();
    const batcher = new ReportBatcher({
      store,
      ...ownedStore(store),
      batchSize: 2,
      waitMs: 1,
      concurrency: 1,
      maxEventAgeDays: 0,
      log: silentLogger,
    });
    const documents = { format: 'trivy' as const, target: 'direct.example.com', maxReportBytes: 10 * 1024 * 1024 };
    expect(await importDirect({ inputs: [TRIVY], documents, batcher, maxInFlight: 4 })).toMatchObject({
      read: 1,
      bytesRead: fs.statSync(TRIVY).size,
      ingested: 1,
      rejected: 0,
    });
    expect(await importDirect({ inputs: [TRIVY], documents, batcher, maxInFlight: 4 })).toMatchObject({ duplicates: 1 });
    const [row] = await store.query<{ n: number }>('SELECT count() AS n FROM finding_events');
    expect(row!.n).toBe(4);
  });
});
