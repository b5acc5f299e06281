import { Command, Option } from 'commander';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { seedDemo } from '../demo/seed.js';
import { createLogger, type Logger } from '../log.js';
import { bundlesQueue, checksQueue } from '../queue/producer.js';
import { BUNDLE_MAX_REPORTS, BUNDLE_SIZE } from '../queue/contract.js';
import { ReportBatcher } from '../ingest/batcher.js';
import { ProcessLocks, TargetLocks } from '../ingest/target-locks.js';
import { defaultRedisNames, keys, requestConnection, whenReady } from '../queue/redis.js';
import { startService, type Service } from '../service.js';
import { openStore } from '../storage/gateway.js';
import { migrate } from '../storage/migrate.js';
import { directBatchesInFlight, importDirect, importReports, waitForQueueDrain, type DirectProgress, type ImportProgress } from './import.js';
import { totalInputBytes } from './read-reports.js';
import { progressShower } from './progress.js';
import { jobsCommand } from './jobs.js';
import { recomputeCommand } from './recompute.js';
import { tokenCommand } from './token.js';

/** The `vulndb` command: run the service, apply migrations, import reports, and the operator commands. */

function config(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}

/**
 * Installed before the service starts: a signal during start-up (the worker may already hold
 * jobs) lets the start finish and then stops gracefully, instead of ending the process at once.
 */
function onSignals(starting: Promise<Service>, log: Logger) {
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) {
      log.warn('second signal: exiting without waiting', { signal });
      process.exit(1);
    }
    stopping = true;
    log.info('signal received, stopping gracefully', { signal });
    starting.then((service) => service.close()).then(
      () => process.exit(0),
      (err) => {
        log.error('shutdown failed', { err });
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

function progressLine(p: ImportProgress, seconds: number): string {
  const rate = seconds > 0 ? Math.round(p.accepted / seconds) : 0;
  return `read ${p.read}  accepted ${p.accepted}  ignored ${p.ignored}  rejected ${p.rejected}  (${rate}/s)`;
}

const program = new Command()
  .name('vulndb')
  .description('Vulnerability tracking service: Vulcan check reports in, findings and security metrics out.')
  .showHelpAfterError();

program
  .command('serve')
  .description('run the service: both APIs and the ingest worker (default), or one role in server mode')
  .argument('[role]', 'all (default), api or worker')
  .option('--demo', 'also enqueue a generated six-month history (only into an empty store)')
  .action(async (role: string | undefined, opts: { demo?: boolean }) => {
    const cfg = config();
    const log = createLogger(cfg.logLevel);
    const r = role ?? 'all';
    if (!['all', 'api', 'worker'].includes(r)) program.error(`unknown role "${r}": use all, api or worker`);
    const starting = startService(cfg, { api: r !== 'worker', worker: r !== 'api', log });
    onSignals(starting, log);
    const service = await starting;
    if (opts.demo) {
      const queue = service.queue ?? checksQueue(service.redis, defaultRedisNames);
      await seedDemo({ store: service.store, locks: service.locks, queue, log });
      if (service.dbApiUrl) {
        log.info('demo ready: try these', {
          findings: `${service.dbApiUrl}/findings?status=OPEN`,
          size: `${service.dbApiUrl}/stats/size`,
          open: `${service.dbApiUrl}/stats/open`,
          mttr: `${service.dbApiUrl}/stats/mttr`,
        });
      }
    }
  });

program
  .command('migrate')
  .description('apply the SQL migrations of sql/ (also done at every start)')
  .action(async () => {
    const cfg = config();
    const log = createLogger(cfg.logLevel);
    const store = await openStore(cfg.store);
    const applied = await migrate(store, log);
    await store.close();
    process.stdout.write(applied.length ? `applied migrations ${applied.join(', ')}\n` : 'schema up to date\n');
  });

function printRejections(summary: { rejected: number; rejections: { origin: string; reason: string }[] }) {
  for (const r of summary.rejections) process.stdout.write(`  rejected ${r.origin}: ${r.reason}\n`);
  if (summary.rejected > summary.rejections.length) {
    process.stdout.write(`  … and ${summary.rejected - summary.rejections.length} more rejections\n`);
  }
}

/** Applies reports in this process (no queue): a backfill or replay into a store it can own. */
async function directImport(inputs: string[], json: boolean) {
  const cfg = config();
  const log = createLogger(cfg.logLevel === 'info' ? 'warn' : cfg.logLevel);
  const store = await openStore(cfg.store);
  await migrate(store, log);
  // An embedded data folder belongs to this process alone; a shared server needs the workers' locks.
  const redis = requestConnection(cfg.redisUrl);
  const redisUp = await whenReady(redis, 2000);
  if (store.mode === 'server' && !redisUp) {
    process.stderr.write(`--direct against a ClickHouse server needs Redis (target locks) at ${cfg.redisUrl}\n`);
    process.exit(1);
  }
  const concurrency = directBatchesInFlight(cfg.ingest.concurrency);
  const batcher = new ReportBatcher({
    store,
    locks: store.mode === 'embedded' ? new ProcessLocks() : new TargetLocks(redis, defaultRedisNames),
    batchSize: cfg.ingest.batchSize,
    waitMs: cfg.ingest.batchWaitMs,
    concurrency,
    maxEventAgeDays: cfg.ingest.maxEventAgeDays,
    log,
  });
  const progress = progressShower();
  const bytes = totalInputBytes(inputs);
  if (bytes !== undefined) progress.show(`importing ${(bytes / 1e6).toFixed(1)} MB directly into ${store.mode === 'embedded' ? cfg.store.embeddedPath : cfg.store.url}`, true);
  const started = performance.now();
  const line = (p: DirectProgress) =>
    `read ${p.read}  ingested ${p.ingested}  duplicates ${p.duplicates}  ignored ${p.ignored}  rejected ${p.rejected}  (${Math.round((p.ingested + p.duplicates) / ((performance.now() - started) / 1000))}/s)`;
  const summary = await importDirect({ inputs, batcher, maxInFlight: concurrency * cfg.ingest.batchSize, onProgress: (p) => progress.show(line(p)) });
  progress.show(line(summary), true);
  progress.end();
  // Answers cached before the import must not outlive it (src/cache/response-cache.ts).
  const bumped = redisUp && (await redis.incr(keys.dataVersion(defaultRedisNames)).then(() => true, () => false));
  if (!bumped && summary.ingested > 0) {
    process.stderr.write(
      `warning: Redis at ${cfg.redisUrl} did not answer, so the data version was not bumped: ` +
        'answers the API cached before this import can be served for up to 10 minutes after it restarts\n',
    );
  }
  // quit() waits for a connection that never comes when Redis is down, and keeps the process alive.
  if (redisUp) await redis.quit().catch(() => undefined);
  else redis.disconnect();
  await store.close();
  if (json) process.stdout.write(JSON.stringify(summary) + '\n');
  else {
    process.stdout.write(
      `ingested ${summary.ingested}, duplicates ${summary.duplicates}, ignored ${summary.ignored} (status not FINISHED), ` +
        `rejected ${summary.rejected} of ${summary.read} reports in ${summary.seconds.toFixed(1)} s\n`,
    );
    printRejections(summary);
  }
  process.exitCode = summary.rejected > 0 ? 1 : 0;
}

program
  .command('import')
  .description('validate and enqueue reports from JSON files, JSON arrays or JSON lines (files, directories, or - for stdin)')
  .argument('<inputs...>', 'files, directories or -')
  .option('--wait', 'wait until the worker has processed every queued report')
  .option('--direct', 'apply the reports in this process instead of queueing them (backfills; embedded mode needs the service stopped)')
  .addOption(new Option('--max-pending <n>', 'pause enqueueing while the queue holds more reports than this').default('50000'))
  .addOption(new Option('--bundle-size <n>', `reports per queued job (1-${BUNDLE_MAX_REPORTS})`).default(String(BUNDLE_SIZE)))
  .option('--json', 'print the summary as JSON')
  .action(async (inputs: string[], opts: { wait?: boolean; direct?: boolean; maxPending: string; bundleSize: string; json?: boolean }) => {
    if (opts.direct) return directImport(inputs, opts.json ?? false);
    const bundleSize = Number(opts.bundleSize);
    if (!Number.isInteger(bundleSize) || bundleSize < 1 || bundleSize > BUNDLE_MAX_REPORTS) {
      program.error(`--bundle-size must be an integer from 1 to ${BUNDLE_MAX_REPORTS}`);
    }
    const maxPending = Number(opts.maxPending);
    if (!Number.isInteger(maxPending) || maxPending < 1) program.error('--max-pending must be a positive integer');
    const cfg = config();
    const redis = requestConnection(cfg.redisUrl);
    if (!(await whenReady(redis))) {
      process.stderr.write(`cannot reach Redis at ${cfg.redisUrl}\n`);
      process.exit(1);
    }
    const queue = bundlesQueue(redis, defaultRedisNames);
    const progress = progressShower();
    const bytes = totalInputBytes(inputs);
    const started = performance.now();
    if (bytes !== undefined) progress.show(`importing ${(bytes / 1e6).toFixed(1)} MB from ${inputs.join(', ')}`, true);
    const summary = await importReports({
      inputs,
      queue,
      bundleSize,
      maxPending,
      onProgress: (p) => progress.show(progressLine(p, (performance.now() - started) / 1000)),
    });
    progress.show(progressLine(summary, summary.seconds), true);
    progress.end();
    if (opts.wait) {
      await waitForQueueDrain(queue, (remaining) => progress.show(`waiting for the worker: ${remaining} bundles left`));
      progress.end();
    }
    const seconds = (performance.now() - started) / 1000;
    if (opts.json) {
      process.stdout.write(JSON.stringify({ ...summary, seconds }) + '\n');
    } else {
      process.stdout.write(
        `accepted ${summary.accepted}, ignored ${summary.ignored} (status not FINISHED), rejected ${summary.rejected} ` +
          `of ${summary.read} reports in ${seconds.toFixed(1)} s${opts.wait ? ' (processed)' : ''}\n`,
      );
      printRejections(summary);
    }
    await queue.close();
    await redis.quit();
    process.exitCode = summary.rejected > 0 ? 1 : 0;
  });

program.addCommand(tokenCommand(config));
program.addCommand(jobsCommand(config));
program.addCommand(recomputeCommand(config));

program.parseAsync(process.argv).catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
