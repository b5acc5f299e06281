import type { Config } from '../config.js';
import { cliConfig } from './config.js';
import { CliError, EXIT } from './exit.js';
import type { DirectProgress, DirectSummary } from './import.js';
import { duplicatesNote, printRejections } from './import-outcome.js';
import { formatBytes, importRate, progressShower } from './progress.js';
import type { DocumentOptions } from './read-documents.js';
import { readingInputs } from './read-reports.js';

/**
 * `vulndb import --direct`: applies reports in this process (no queue), a backfill or replay into a
 * store it can own. Every module is loaded here, when the command runs.
 */

const directLine = (p: DirectProgress, total: number | undefined, seconds: number) =>
  `${importRate(p, total, seconds)}  read ${p.read}  ingested ${p.ingested}  duplicates ${p.duplicates}  ignored ${p.ignored}  rejected ${p.rejected}`;

/** The store, Redis and a batcher as the worker has them; an embedded data folder belongs to this process alone. */
async function openIngest(cfg: Config) {
  const [
    { createLogger },
    { openStore, ownsItsData },
    { migrate },
    { ReportBatcher },
    { ProcessLocks, TargetLocks },
    { TotalsRewriter },
    redisModule,
    { directBatchesInFlight },
  ] = await Promise.all([
    import('../log.js'),
    import('../storage/gateway.js'),
    import('../storage/migrate.js'),
    import('../ingest/batcher.js'),
    import('../locks/target-locks.js'),
    import('../ingest/totals.js'),
    import('../queue/redis.js'),
    import('./import.js'),
  ]);
  const { defaultRedisNames, requestConnection, whenReady } = redisModule;
  const log = createLogger(cfg.logLevel === 'info' ? 'warn' : cfg.logLevel);
  const store = await openStore(cfg.store);
  await migrate(store, log);
  // A shared server needs the workers' locks, in Redis.
  const redis = requestConnection(cfg.redisUrl);
  const redisUp = await whenReady(redis, 2000);
  if (!ownsItsData(store) && !redisUp) {
    redis.disconnect();
    await store.close();
    throw new CliError(`--direct against a ClickHouse server needs Redis (target locks) at ${cfg.redisUrl}`, EXIT.failed);
  }
  const concurrency = directBatchesInFlight(cfg.ingest.concurrency);
  const locks = ownsItsData(store) ? new ProcessLocks() : new TargetLocks(redis, defaultRedisNames);
  const batcher = new ReportBatcher({
    store,
    locks,
    totals: new TotalsRewriter(store, locks, log),
    batchSize: cfg.ingest.batchSize,
    waitMs: cfg.ingest.batchWaitMs,
    concurrency,
    maxEventAgeDays: cfg.ingest.maxEventAgeDays,
    log,
  });
  const into = ownsItsData(store) ? cfg.store.embeddedPath : cfg.store.url;
  return { store, redis, redisUp, batcher, maxInFlight: concurrency * cfg.ingest.batchSize, names: defaultRedisNames, into };
}

type Ingest = Awaited<ReturnType<typeof openIngest>>;

/** Answers cached before the import must not outlive it (src/cache/response-cache.ts); then Redis and the store close. */
async function finish(cfg: Config, ingest: Ingest, summary: DirectSummary): Promise<void> {
  const { bumpAllData } = await import('../cache/data-version.js');
  const bumped =
    ingest.redisUp &&
    (await bumpAllData(ingest.redis, ingest.names).then(
      () => true,
      () => false,
    ));
  if (!bumped && summary.ingested > 0) {
    process.stderr.write(
      `warning: Redis at ${cfg.redisUrl} did not answer, so the data version was not bumped: ` +
        'answers the API cached before this import can be served for up to 10 minutes after it restarts\n',
    );
  }
  // quit() waits for a connection that never comes when Redis is down, and keeps the process alive.
  if (ingest.redisUp) await ingest.redis.quit().catch(() => undefined);
  else ingest.redis.disconnect();
  await ingest.store.close();
}

function printSummary(summary: DirectSummary, json: boolean): void {
  if (json) {
    process.stdout.write(`${JSON.stringify(summary)}\n`);
    return;
  }
  process.stdout.write(
    `ingested ${summary.ingested}, duplicates ${summary.duplicates}, ignored ${summary.ignored} (status not FINISHED), ` +
      `rejected ${summary.rejected} of ${summary.read} reports in ${summary.seconds.toFixed(1)} s\n`,
  );
  process.stdout.write(duplicatesNote({ ...summary, unknownBundles: 0 }) ?? '');
  printRejections(summary);
}

export async function directImport(inputs: string[], options: DocumentOptions | undefined, total: number | undefined, json: boolean) {
  const cfg = await cliConfig();
  const documents = options && { ...options, maxReportBytes: cfg.maxReportBytes };
  const [ingest, { importDirect }] = await Promise.all([openIngest(cfg), import('./import.js')]);
  const progress = progressShower();
  if (total !== undefined) {
    progress.show(`importing ${formatBytes(total)} directly into ${ingest.into}`, true);
  }
  const started = performance.now();
  const elapsed = () => (performance.now() - started) / 1000;
  const summary = await readingInputs(
    importDirect({
      inputs,
      documents,
      batcher: ingest.batcher,
      maxInFlight: ingest.maxInFlight,
      onProgress: (p) => progress.show(directLine(p, total, elapsed())),
    }),
  );
  progress.show(directLine(summary, total, summary.seconds), true);
  progress.end();
  await finish(cfg, ingest, summary);
  printSummary(summary, json);
  process.exitCode = summary.rejected > 0 ? EXIT.failed : EXIT.ok;
}
