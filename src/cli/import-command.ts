import type { Command } from 'commander';
import { cliConfig } from './config.js';
import { CliError, EXIT, usageError } from './exit.js';
import type { DirectProgress, FailedBundles, ImportProgress, ImportSummary } from './import.js';
import { duplicatesNote, type ProcessedReports, processedReports, processedText } from './import-outcome.js';
import { formatBytes, importRate, progressShower } from './progress.js';
import type { ImportFormatName } from '../imports/formats.js';
import type { DocumentImport } from './read-documents.js';
import { checkInputs, DOCUMENT_FILE, inputError } from './read-reports.js';

/**
 * The action of `vulndb import`: checks options and inputs (exit 2 before anything is enqueued),
 * then enqueues the reports in bundles (or applies them in this process with --direct), shows
 * progress on stderr and prints a summary. Exit 1 when reports were rejected or bundles failed.
 */

export interface ImportCommandOptions {
  wait?: boolean;
  waitTimeout: string;
  direct?: boolean;
  maxPending: string;
  bundleSize: string;
  json?: boolean;
  queuePrefix?: string;
  format: 'vulcan' | ImportFormatName;
  target?: string;
  time?: string;
}

/** How to read scanner documents, but for the bound the configuration gives. */
type DocumentOptions = Omit<DocumentImport, 'maxReportBytes'>;

/** The scanner documents to read (`--format sarif|trivy`), or undefined for Vulcan reports; exit 2 on a bad option. */
async function documentsOf(opts: ImportCommandOptions, command: Command): Promise<DocumentOptions | undefined> {
  if (opts.format === 'vulcan') {
    if (opts.target !== undefined || opts.time !== undefined) usageError(command, '--target and --time apply to --format sarif|trivy only');
    return undefined;
  }
  const { parseImportParams } = await import('../imports/params.js');
  const parsed = parseImportParams({ target: opts.target, time: opts.time });
  if ('malformed' in parsed) usageError(command, '--time must be an RFC 3339 timestamp such as 2024-01-05T10:00:00Z');
  return { format: opts.format, ...parsed.params };
}

type Rejections = { rejected: number; rejections: { origin: string; reason: string }[] };

function printRejections(summary: Rejections) {
  for (const r of summary.rejections) process.stdout.write(`  rejected ${r.origin}: ${r.reason}\n`);
  if (summary.rejected > summary.rejections.length) {
    process.stdout.write(`  … and ${summary.rejected - summary.rejections.length} more rejections\n`);
  }
}

function printFailed(failed: FailedBundles) {
  if (failed.count === 0) return;
  process.stdout.write(`  ${failed.count} bundles failed in the worker (vulndb jobs failed --queue checks-bulk lists them):\n`);
  for (const f of failed.first) process.stdout.write(`  failed bundle ${f.id}: ${f.reason}\n`);
  if (failed.count > failed.first.length) process.stdout.write(`  … and ${failed.count - failed.first.length} more failed bundles\n`);
}

const queuedLine = (p: ImportProgress, total: number | undefined, seconds: number) =>
  `${importRate(p, total, seconds)}  read ${p.read}  accepted ${p.accepted}  ignored ${p.ignored}  rejected ${p.rejected}`;

const directLine = (p: DirectProgress, total: number | undefined, seconds: number) =>
  `${importRate(p, total, seconds)}  read ${p.read}  ingested ${p.ingested}  duplicates ${p.duplicates}  ignored ${p.ignored}  rejected ${p.rejected}`;

/** Reading the inputs failed half way (a file removed or made unreadable meanwhile): one line, exit 2. */
async function readingInputs<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    throw inputError(err) ?? err;
  }
}

export async function importCommand(inputs: string[], opts: ImportCommandOptions, command: Command): Promise<void> {
  const waitTimeout = Number(opts.waitTimeout);
  if (!Number.isFinite(waitTimeout) || waitTimeout < 0) usageError(command, '--wait-timeout must be a number of seconds (0: no limit)');
  const stallTimeoutMs = waitTimeout === 0 ? Infinity : waitTimeout * 1000;
  const documents = await documentsOf(opts, command);
  const files = documents ? DOCUMENT_FILE : undefined;
  if (opts.direct) {
    const total = checkInputs(inputs, files);
    return directImport(inputs, documents, total, opts.json ?? false);
  }
  const { BUNDLE_MAX_REPORTS } = await import('../queue/contract.js');
  const bundleSize = Number(opts.bundleSize);
  if (!Number.isInteger(bundleSize) || bundleSize < 1 || bundleSize > BUNDLE_MAX_REPORTS) {
    usageError(command, `--bundle-size must be an integer from 1 to ${BUNDLE_MAX_REPORTS}`);
  }
  const maxPending = Number(opts.maxPending);
  if (!Number.isInteger(maxPending) || maxPending < 1) usageError(command, '--max-pending must be a positive integer');
  const total = checkInputs(inputs, files);
  const cfg = await cliConfig();
  const bounded = documents && { ...documents, maxReportBytes: cfg.maxReportBytes };

  const [
    { bundlesQueue },
    { defaultRedisNames, requestConnection, whenReady },
    { importReports, waitForQueueDrain, failedBundles, ImportStalled },
  ] = await Promise.all([import('../queue/producer.js'), import('../queue/redis.js'), import('./import.js')]);
  const redis = requestConnection(cfg.redisUrl);
  if (!(await whenReady(redis))) {
    redis.disconnect();
    throw new CliError(`cannot reach Redis at ${cfg.redisUrl}`, EXIT.failed);
  }
  const queue = bundlesQueue(redis, { ...defaultRedisNames, queuePrefix: opts.queuePrefix ?? defaultRedisNames.queuePrefix });
  const progress = progressShower();
  const startedAt = Date.now();
  const started = performance.now();
  const elapsed = () => (performance.now() - started) / 1000;
  const jobIds = new Set<string>();
  try {
    if (total !== undefined) progress.show(`importing ${formatBytes(total)} from ${inputs.join(', ')}`, true);
    let summary: ImportSummary;
    try {
      summary = await readingInputs(
        importReports({
          inputs,
          documents: bounded,
          queue,
          bundleSize,
          maxPending,
          stallTimeoutMs,
          onEnqueued: (ids) => {
            for (const id of ids) jobIds.add(id);
          },
          onProgress: (p) => progress.show(queuedLine(p, total, elapsed())),
        }),
      );
    } catch (err) {
      progress.end();
      if (err instanceof ImportStalled) throw new CliError(`import stopped: ${err.message}`, EXIT.failed);
      throw err;
    }
    progress.show(queuedLine(summary, total, summary.seconds), true);
    progress.end();
    let failed: FailedBundles | undefined;
    let processed: ProcessedReports | undefined;
    if (opts.wait) {
      try {
        await waitForQueueDrain(queue, (remaining) => progress.show(`waiting for the worker: ${remaining} bundles left`), stallTimeoutMs);
      } catch (err) {
        progress.end();
        if (err instanceof ImportStalled) {
          throw new CliError(`gave up waiting after enqueueing ${summary.accepted} reports: ${err.message}`, EXIT.failed);
        }
        throw err;
      }
      progress.end();
      failed = await failedBundles(queue, jobIds, startedAt);
      processed = await processedReports(queue, jobIds);
    }
    const seconds = elapsed();
    if (opts.json) {
      const waited = failed ? { failedBundles: failed, processed } : {};
      process.stdout.write(`${JSON.stringify({ ...summary, seconds, ...waited })}\n`);
    } else {
      process.stdout.write(
        `accepted ${summary.accepted}, ignored ${summary.ignored} (status not FINISHED), rejected ${summary.rejected} ` +
          `of ${summary.read} reports in ${seconds.toFixed(1)} s` +
          (failed ? ` (${processedText(processed!)}${failed.count > 0 ? `; ${failed.count} of ${jobIds.size} bundles failed` : ''})` : '') +
          '\n',
      );
      if (processed) process.stdout.write(duplicatesNote(processed) ?? '');
      printRejections(summary);
      if (failed) printFailed(failed);
    }
    process.exitCode = summary.rejected > 0 || (failed?.count ?? 0) > 0 ? EXIT.failed : EXIT.ok;
  } finally {
    await queue.close().catch(() => undefined);
    await redis.quit().catch(() => undefined);
  }
}

/** Applies reports in this process (no queue): a backfill or replay into a store it can own. */
async function directImport(inputs: string[], options: DocumentOptions | undefined, total: number | undefined, json: boolean) {
  const cfg = await cliConfig();
  const documents = options && { ...options, maxReportBytes: cfg.maxReportBytes };
  const [
    { createLogger },
    { openStore },
    { migrate },
    { ReportBatcher },
    { ProcessLocks, TargetLocks },
    { TotalsRewriter },
    redisModule,
    { directBatchesInFlight, importDirect },
    { bumpAllData },
  ] = await Promise.all([
    import('../log.js'),
    import('../storage/gateway.js'),
    import('../storage/migrate.js'),
    import('../ingest/batcher.js'),
    import('../locks/target-locks.js'),
    import('../ingest/totals.js'),
    import('../queue/redis.js'),
    import('./import.js'),
    import('../cache/data-version.js'),
  ]);
  const { defaultRedisNames, requestConnection, whenReady } = redisModule;
  const log = createLogger(cfg.logLevel === 'info' ? 'warn' : cfg.logLevel);
  const store = await openStore(cfg.store);
  await migrate(store, log);
  // An embedded data folder belongs to this process alone; a shared server needs the workers' locks.
  const redis = requestConnection(cfg.redisUrl);
  const redisUp = await whenReady(redis, 2000);
  if (store.mode === 'server' && !redisUp) {
    redis.disconnect();
    await store.close();
    throw new CliError(`--direct against a ClickHouse server needs Redis (target locks) at ${cfg.redisUrl}`, EXIT.failed);
  }
  const concurrency = directBatchesInFlight(cfg.ingest.concurrency);
  const locks = store.mode === 'embedded' ? new ProcessLocks() : new TargetLocks(redis, defaultRedisNames);
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
  const progress = progressShower();
  if (total !== undefined) {
    progress.show(
      `importing ${formatBytes(total)} directly into ${store.mode === 'embedded' ? cfg.store.embeddedPath : cfg.store.url}`,
      true,
    );
  }
  const started = performance.now();
  const elapsed = () => (performance.now() - started) / 1000;
  const summary = await readingInputs(
    importDirect({
      inputs,
      documents,
      batcher,
      maxInFlight: concurrency * cfg.ingest.batchSize,
      onProgress: (p) => progress.show(directLine(p, total, elapsed())),
    }),
  );
  progress.show(directLine(summary, total, summary.seconds), true);
  progress.end();
  // Answers cached before the import must not outlive it (src/cache/response-cache.ts).
  const bumped =
    redisUp &&
    (await bumpAllData(redis, defaultRedisNames).then(
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
  if (redisUp) await redis.quit().catch(() => undefined);
  else redis.disconnect();
  await store.close();
  if (json) process.stdout.write(`${JSON.stringify(summary)}\n`);
  else {
    process.stdout.write(
      `ingested ${summary.ingested}, duplicates ${summary.duplicates}, ignored ${summary.ignored} (status not FINISHED), ` +
        `rejected ${summary.rejected} of ${summary.read} reports in ${summary.seconds.toFixed(1)} s\n`,
    );
    process.stdout.write(duplicatesNote({ ...summary, unknownBundles: 0 }) ?? '');
    printRejections(summary);
  }
  process.exitCode = summary.rejected > 0 ? EXIT.failed : EXIT.ok;
}
