import type { Command } from 'commander';
import type { Queue } from 'bullmq';
import type { Config } from '../config.js';
import { cliConfig } from './config.js';
import { CliError, EXIT, usageError } from './exit.js';
import type { FailedBundles, ImportProgress, ImportSummary } from './import.js';
import { directImport } from './import-direct.js';
import { duplicatesNote, printRejections, type ProcessedReports, processedReports, processedText } from './import-outcome.js';
import { formatBytes, importRate, progressShower } from './progress.js';
import type { ImportFormatName } from '../imports/formats.js';
import type { DocumentOptions } from './read-documents.js';
import { checkInputs, DOCUMENT_FILE, readingInputs } from './read-reports.js';

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

function printFailed(failed: FailedBundles) {
  if (failed.count === 0) return;
  process.stdout.write(`  ${failed.count} bundles failed in the worker (vulndb jobs failed --queue checks-bulk lists them):\n`);
  for (const f of failed.first) process.stdout.write(`  failed bundle ${f.id}: ${f.reason}\n`);
  if (failed.count > failed.first.length) process.stdout.write(`  … and ${failed.count - failed.first.length} more failed bundles\n`);
}

const queuedLine = (p: ImportProgress, total: number | undefined, seconds: number) =>
  `${importRate(p, total, seconds)}  read ${p.read}  accepted ${p.accepted}  ignored ${p.ignored}  rejected ${p.rejected}`;

/** --bundle-size and --max-pending, checked (exit 2). */
async function queueOptions(opts: ImportCommandOptions, command: Command) {
  const { BUNDLE_MAX_REPORTS } = await import('../queue/contract.js');
  const bundleSize = Number(opts.bundleSize);
  if (!Number.isInteger(bundleSize) || bundleSize < 1 || bundleSize > BUNDLE_MAX_REPORTS) {
    usageError(command, `--bundle-size must be an integer from 1 to ${BUNDLE_MAX_REPORTS}`);
  }
  const maxPending = Number(opts.maxPending);
  if (!Number.isInteger(maxPending) || maxPending < 1) usageError(command, '--max-pending must be a positive integer');
  return { bundleSize, maxPending };
}

/** The bundles queue, on a Redis that answers (exit 1 otherwise). */
async function openQueue(cfg: Config, queuePrefix: string | undefined) {
  const [{ bundlesQueue }, { defaultRedisNames, requestConnection, whenReady }] = await Promise.all([
    import('../queue/producer.js'),
    import('../queue/redis.js'),
  ]);
  const redis = requestConnection(cfg.redisUrl);
  if (!(await whenReady(redis))) {
    redis.disconnect();
    throw new CliError(`cannot reach Redis at ${cfg.redisUrl}`, EXIT.failed);
  }
  const queue = bundlesQueue(redis, { ...defaultRedisNames, queuePrefix: queuePrefix ?? defaultRedisNames.queuePrefix });
  const close = async () => {
    await queue.close().catch(() => undefined);
    await redis.quit().catch(() => undefined);
  };
  return { queue, close };
}

/** Turns the import's own "no progress for too long" into the command's one-line failure. */
async function stallsAre<T>(work: Promise<T>, progress: { end(): void }, message: (reason: string) => string): Promise<T> {
  const { ImportStalled } = await import('./import.js');
  try {
    return await work;
  } catch (err) {
    progress.end();
    if (err instanceof ImportStalled) throw new CliError(message(err.message), EXIT.failed);
    throw err;
  }
}

type Progress = ReturnType<typeof progressShower>;

interface Waited {
  failed: FailedBundles;
  processed: ProcessedReports;
}

/** --wait: until the worker has taken every bundle, then what became of the import's. */
async function waitForWorker(
  queue: Queue,
  jobIds: Set<string>,
  startedAt: number,
  stallTimeoutMs: number,
  summary: ImportSummary,
  progress: Progress,
) {
  const { waitForQueueDrain, failedBundles } = await import('./import.js');
  await stallsAre(
    waitForQueueDrain(queue, (remaining) => progress.show(`waiting for the worker: ${remaining} bundles left`), stallTimeoutMs),
    progress,
    (reason) => `gave up waiting after enqueueing ${summary.accepted} reports: ${reason}`,
  );
  progress.end();
  return { failed: await failedBundles(queue, jobIds, startedAt), processed: await processedReports(queue, jobIds) };
}

function printQueued(summary: ImportSummary, seconds: number, jobs: number, waited: Waited | undefined, json: boolean): void {
  if (json) {
    const outcome = waited ? { failedBundles: waited.failed, processed: waited.processed } : {};
    process.stdout.write(`${JSON.stringify({ ...summary, seconds, ...outcome })}\n`);
    return;
  }
  const failures = waited && waited.failed.count > 0 ? `; ${waited.failed.count} of ${jobs} bundles failed` : '';
  process.stdout.write(
    `accepted ${summary.accepted}, ignored ${summary.ignored} (status not FINISHED), rejected ${summary.rejected} ` +
      `of ${summary.read} reports in ${seconds.toFixed(1)} s` +
      (waited ? ` (${processedText(waited.processed)}${failures})` : '') +
      '\n',
  );
  if (waited) process.stdout.write(duplicatesNote(waited.processed) ?? '');
  printRejections(summary);
  if (waited) printFailed(waited.failed);
}

export async function importCommand(inputs: string[], opts: ImportCommandOptions, command: Command): Promise<void> {
  const waitTimeout = Number(opts.waitTimeout);
  if (!Number.isFinite(waitTimeout) || waitTimeout < 0) usageError(command, '--wait-timeout must be a number of seconds (0: no limit)');
  const stallTimeoutMs = waitTimeout === 0 ? Infinity : waitTimeout * 1000;
  const documents = await documentsOf(opts, command);
  const files = documents ? DOCUMENT_FILE : undefined;
  if (opts.direct) return directImport(inputs, documents, checkInputs(inputs, files), opts.json ?? false);
  const { bundleSize, maxPending } = await queueOptions(opts, command);
  const total = checkInputs(inputs, files);
  const cfg = await cliConfig();
  const [{ queue, close }, { importReports }] = await Promise.all([openQueue(cfg, opts.queuePrefix), import('./import.js')]);
  const progress = progressShower();
  const startedAt = Date.now();
  const started = performance.now();
  const elapsed = () => (performance.now() - started) / 1000;
  const jobIds = new Set<string>();
  try {
    if (total !== undefined) progress.show(`importing ${formatBytes(total)} from ${inputs.join(', ')}`, true);
    const run = importReports({
      inputs,
      documents: documents && { ...documents, maxReportBytes: cfg.maxReportBytes },
      queue,
      bundleSize,
      maxPending,
      stallTimeoutMs,
      onEnqueued: (ids) => {
        for (const id of ids) jobIds.add(id);
      },
      onProgress: (p) => progress.show(queuedLine(p, total, elapsed())),
    });
    const summary = await stallsAre(readingInputs(run), progress, (reason) => `import stopped: ${reason}`);
    progress.show(queuedLine(summary, total, summary.seconds), true);
    progress.end();
    const waited = opts.wait ? await waitForWorker(queue, jobIds, startedAt, stallTimeoutMs, summary, progress) : undefined;
    printQueued(summary, elapsed(), jobIds.size, waited, opts.json ?? false);
    process.exitCode = summary.rejected > 0 || (waited?.failed.count ?? 0) > 0 ? EXIT.failed : EXIT.ok;
  } finally {
    await close();
  }
}
