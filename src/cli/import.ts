import type { Queue } from 'bullmq';
import type { ReportBatcher } from '../ingest/batcher.js';
import { ReportRejected } from '../ingest/prepare.js';
import { BUNDLE_SIZE, checkReport, type FinishedReport, type ReportVerdict, toBundles } from '../queue/contract.js';
import { enqueueBundles } from '../queue/producer.js';
import { type DocumentImport, readDocuments } from './read-documents.js';
import { type ReadPosition, type ReadRecord, readReports } from './read-reports.js';

/**
 * `vulndb import`: validates reports like the worker will and enqueues the valid ones in bundles
 * on the `checks-bulk` queue (src/queue/contract.ts), pausing while it holds more than
 * `maxPending` reports so a backfill of millions of reports never floods Redis. Invalid reports
 * are reported with their origin and reason.
 */

/** The records of the inputs: Vulcan reports, or the reports of scanner documents (`--format`). */
function recordsOf(inputs: string[], documents: DocumentImport | undefined, position: ReadPosition): AsyncGenerator<ReadRecord> {
  return documents ? readDocuments(inputs, documents, process.stdin, position) : readReports(inputs, process.stdin, position);
}

export interface ImportOptions {
  inputs: string[];
  /** Read the inputs as scanner documents of this format (SPEC §13); none: Vulcan reports. */
  documents?: DocumentImport | undefined;
  /** The bundles queue (`bundlesQueue`). */
  queue: Queue;
  /** Reports per bundle (job). */
  bundleSize?: number;
  /** Reports the queue may hold before enqueueing pauses. */
  maxPending?: number;
  /** How many rejection reasons to keep for the summary. */
  keepRejections?: number;
  /**
   * How long enqueueing may stay paused (the queue full, its jobs not moving: no worker) before
   * the import gives up with `ImportStalled`. Default: no limit.
   */
  stallTimeoutMs?: number;
  /** Called with the ids of the jobs added, as they are added. */
  onEnqueued?: (ids: string[]) => void;
  onProgress?: (p: ImportProgress) => void;
}

/** No job of the queue finished for `seconds` while the import waited on it. */
export class ImportStalled extends Error {
  constructor(
    readonly seconds: number,
    readonly remaining: number,
  ) {
    super(
      `no job of the queue finished in ${seconds} s (${remaining} bundles waiting): is a worker running (vulndb serve worker)? ` +
        'The enqueued reports stay queued; raise --wait-timeout to wait longer',
    );
    this.name = 'ImportStalled';
  }
}

export interface ImportProgress {
  read: number;
  /** Bytes of the input files read so far (stdin is not counted). */
  bytesRead: number;
  accepted: number;
  ignored: number;
  rejected: number;
}

export interface ImportSummary extends ImportProgress {
  rejections: { origin: string; reason: string }[];
  seconds: number;
}

const sum = (c: Record<string, number>) => Object.values(c).reduce((a, b) => a + b, 0);

async function _pendingJobs(queue: Queue): Promise<number> {
  return sum(await queue.getJobCounts('waiting', 'prioritized', 'delayed'));
}

/**
 * Tells whether a queue's jobs move: `progressed` is true when a job finished since the last
 * look (fewer jobs left than ever seen, or more completed or failed ones), and `stalledFor` how
 * long none did.
 */
function movement(stallTimeoutMs: number) {
  let fewest = Infinity;
  let finished = -1;
  let since = performance.now();
  return {
    look(left: number, finishedNow: number): void {
      if (left < fewest || (finished >= 0 && finishedNow !== finished)) since = performance.now();
      fewest = Math.min(fewest, left);
      finished = finishedNow;
    },
    stalled: () => performance.now() - since > stallTimeoutMs,
    reset() {
      fewest = Infinity;
      since = performance.now();
    },
  };
}

export async function importReports(opts: ImportOptions): Promise<ImportSummary> {
  const bundleSize = opts.bundleSize ?? BUNDLE_SIZE;
  // Bundles are added twenty at a time: one round trip to Redis per 5,000 reports.
  const chunkSize = bundleSize * 20;
  const maxPendingJobs = Math.max(1, Math.ceil((opts.maxPending ?? 50_000) / bundleSize));
  const keep = opts.keepRejections ?? 100;
  const started = performance.now();
  const p: ImportProgress = { read: 0, bytesRead: 0, accepted: 0, ignored: 0, rejected: 0 };
  const rejections: ImportSummary['rejections'] = [];
  const position: ReadPosition = { bytes: 0 };
  const stallTimeoutMs = opts.stallTimeoutMs ?? Infinity;
  let chunk: unknown[] = [];

  const reject = (origin: string, reason: string) => {
    p.rejected += 1;
    if (rejections.length < keep) rejections.push({ origin, reason });
  };
  const flush = async () => {
    if (chunk.length === 0) return;
    const moving = movement(stallTimeoutMs);
    for (;;) {
      const c = await opts.queue.getJobCounts('waiting', 'prioritized', 'delayed', 'completed', 'failed');
      const pending = c.waiting! + c.prioritized! + c.delayed!;
      if (pending <= maxPendingJobs) break;
      moving.look(pending, c.completed! + c.failed!);
      if (moving.stalled()) throw new ImportStalled(Math.round(stallTimeoutMs / 1000), pending);
      await new Promise((r) => setTimeout(r, 200));
    }
    // Not `onEnqueued?.(await enqueueBundles(…))`: without a callback that would skip the enqueueing too.
    const ids = await enqueueBundles(opts.queue, toBundles(chunk, bundleSize));
    opts.onEnqueued?.(ids);
    p.accepted += chunk.length;
    chunk = [];
    opts.onProgress?.({ ...p });
  };

  for await (const record of recordsOf(opts.inputs, opts.documents, position)) {
    p.read += 1;
    p.bytesRead = position.bytes;
    if (record.error !== undefined) {
      reject(record.origin, record.error);
      continue;
    }
    const verdict: ReportVerdict = record.checked ? { kind: 'finished', report: record.data as FinishedReport } : checkReport(record.data);
    if (verdict.kind === 'invalid') reject(record.origin, verdict.reason);
    else if (verdict.kind === 'ignored')
      p.ignored += 1; // valid, but the worker would ignore it
    else chunk.push(verdict.report);
    if (chunk.length >= chunkSize) await flush();
    // A scanner document is one report of many bytes: each one moves the progress.
    else if (p.read % chunkSize === 0 || opts.documents) opts.onProgress?.({ ...p });
  }
  await flush();
  p.bytesRead = position.bytes;
  return { ...p, rejections, seconds: (performance.now() - started) / 1000 };
}

/**
 * Waits until the queue holds no waiting, delayed or active jobs; throws `ImportStalled` when no
 * job finished for `stallTimeoutMs` (no worker runs, or it is stuck).
 */
export async function waitForQueueDrain(queue: Queue, onTick?: (remaining: number) => void, stallTimeoutMs = Infinity): Promise<void> {
  const moving = movement(stallTimeoutMs);
  for (;;) {
    const c = await queue.getJobCounts('waiting', 'prioritized', 'delayed', 'active', 'completed', 'failed');
    const remaining = c.waiting! + c.prioritized! + c.delayed! + c.active!;
    onTick?.(remaining);
    if (remaining === 0) return;
    moving.look(remaining, c.completed! + c.failed!);
    if (moving.stalled()) throw new ImportStalled(Math.round(stallTimeoutMs / 1000), remaining);
    await new Promise((r) => setTimeout(r, 250));
  }
}

export interface FailedBundles {
  /** Jobs of this import that failed for good. */
  count: number;
  /** The first of them (newest failures first) with the worker's reason. */
  first: { id: string; reason: string }[];
}

/**
 * The failed jobs among `ids` (the bundles this import enqueued): failed jobs are listed newest
 * failure first, so the scan stops at the first one that failed before the import started.
 */
export async function failedBundles(queue: Queue, ids: Set<string>, startedAtMs: number, keep = 5): Promise<FailedBundles> {
  const out: FailedBundles = { count: 0, first: [] };
  if (ids.size === 0) return out;
  const page = 500;
  for (let start = 0; ; start += page) {
    const jobs = await queue.getFailed(start, start + page - 1);
    for (const job of jobs) {
      if (!job || !ids.has(String(job.id))) continue;
      out.count += 1;
      if (out.first.length < keep) out.first.push({ id: String(job.id), reason: job.failedReason || 'no reason given' });
    }
    const last = jobs[jobs.length - 1];
    if (jobs.length < page || (last?.finishedOn !== undefined && last.finishedOn < startedAtMs)) return out;
  }
}

/**
 * Batches a direct import keeps in flight: at least four, or WORKER_CONCURRENCY if higher. The
 * engine runs one statement at a time and each batch alternates between its statements and its
 * work on the main thread, so more batches keep both busy (target locks keep batches apart); on
 * two cores four are enough to do so, and more only hold more reports in memory.
 */
export const directBatchesInFlight = (configured: number): number => Math.max(4, configured);

export interface DirectImportOptions {
  inputs: string[];
  documents?: DocumentImport | undefined;
  batcher: ReportBatcher;
  /** Reports handed to the batcher and not yet committed. */
  maxInFlight: number;
  keepRejections?: number;
  onProgress?: (p: DirectProgress) => void;
}

export interface DirectProgress extends ImportProgress {
  ingested: number;
  duplicates: number;
}

export interface DirectSummary extends DirectProgress {
  rejections: { origin: string; reason: string }[];
  seconds: number;
}

/**
 * `vulndb import --direct`: applies reports straight through the ingest batcher, without the
 * queue — for backfills and replays into a store this process can own. Store failures stop the
 * import (there is no queue to retry from); what was committed stays committed, and importing
 * the same files again skips it as duplicates.
 */
export async function importDirect(opts: DirectImportOptions): Promise<DirectSummary> {
  const keep = opts.keepRejections ?? 100;
  const started = performance.now();
  const p: DirectProgress = { read: 0, bytesRead: 0, accepted: 0, ignored: 0, rejected: 0, ingested: 0, duplicates: 0 };
  const position: ReadPosition = { bytes: 0 };
  const rejections: DirectSummary['rejections'] = [];
  const inFlight = new Set<Promise<void>>();
  let failure: unknown;

  const reject = (origin: string, reason: string) => {
    p.rejected += 1;
    if (rejections.length < keep) rejections.push({ origin, reason });
  };

  for await (const record of recordsOf(opts.inputs, opts.documents, position)) {
    if (failure) break;
    p.read += 1;
    p.bytesRead = position.bytes;
    if (record.error !== undefined) {
      reject(record.origin, record.error);
      continue;
    }
    const job = { id: record.origin, attemptsStarted: 1 };
    const done: Promise<void> = (
      record.checked
        ? opts.batcher.submitPrepared(opts.batcher.prepareChecked(record.data as FinishedReport), job)
        : opts.batcher.submit({ ...job, data: record.data })
    )
      .then(
        (o) => {
          if (o.outcome === 'ignored') p.ignored += 1;
          else {
            p.accepted += 1;
            if (o.outcome === 'ingested') p.ingested += 1;
            else p.duplicates += 1;
          }
        },
        (err) => {
          if (err instanceof ReportRejected) reject(record.origin, err.message);
          else failure ??= err;
        },
      )
      .finally(() => {
        inFlight.delete(done);
        if ((p.ingested + p.duplicates) % 1000 === 0 || opts.documents) opts.onProgress?.({ ...p });
      });
    inFlight.add(done);
    if (inFlight.size >= opts.maxInFlight) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  if (failure) throw failure;
  p.bytesRead = position.bytes;
  return { ...p, rejections, seconds: (performance.now() - started) / 1000 };
}
