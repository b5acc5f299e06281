import type { Queue } from 'bullmq';
import { ReportRejected, type ReportBatcher } from '../ingest/batcher.js';
import { BUNDLE_SIZE, checkReport, toBundles } from '../queue/contract.js';
import { enqueueBundles } from '../queue/producer.js';
import { readReports } from './read-reports.js';

/**
 * `vulndb import`: validates reports like the worker will and enqueues the valid ones in bundles
 * on the `checks-bulk` queue (src/queue/contract.ts), pausing while it holds more than
 * `maxPending` reports so a backfill of millions of reports never floods Redis. Invalid reports
 * are reported with their origin and reason.
 */

export interface ImportOptions {
  inputs: string[];
  /** The bundles queue (`bundlesQueue`). */
  queue: Queue;
  /** Reports per bundle (job). */
  bundleSize?: number;
  /** Reports the queue may hold before enqueueing pauses. */
  maxPending?: number;
  /** How many rejection reasons to keep for the summary. */
  keepRejections?: number;
  onProgress?: (p: ImportProgress) => void;
}

export interface ImportProgress {
  read: number;
  accepted: number;
  ignored: number;
  rejected: number;
}

export interface ImportSummary extends ImportProgress {
  rejections: { origin: string; reason: string }[];
  seconds: number;
}

async function pendingJobs(queue: Queue): Promise<number> {
  const c = await queue.getJobCounts('waiting', 'prioritized', 'delayed');
  return Object.values(c).reduce((a, b) => a + b, 0);
}

export async function importReports(opts: ImportOptions): Promise<ImportSummary> {
  const bundleSize = opts.bundleSize ?? BUNDLE_SIZE;
  // Bundles are added twenty at a time: one round trip to Redis per 5,000 reports.
  const chunkSize = bundleSize * 20;
  const maxPendingJobs = Math.max(1, Math.ceil((opts.maxPending ?? 50_000) / bundleSize));
  const keep = opts.keepRejections ?? 100;
  const started = performance.now();
  const p: ImportProgress = { read: 0, accepted: 0, ignored: 0, rejected: 0 };
  const rejections: ImportSummary['rejections'] = [];
  let chunk: unknown[] = [];

  const reject = (origin: string, reason: string) => {
    p.rejected += 1;
    if (rejections.length < keep) rejections.push({ origin, reason });
  };
  const flush = async () => {
    if (chunk.length === 0) return;
    while ((await pendingJobs(opts.queue)) > maxPendingJobs) await new Promise((r) => setTimeout(r, 200));
    await enqueueBundles(opts.queue, toBundles(chunk, bundleSize));
    p.accepted += chunk.length;
    chunk = [];
    opts.onProgress?.({ ...p });
  };

  for await (const record of readReports(opts.inputs)) {
    p.read += 1;
    if (record.error !== undefined) {
      reject(record.origin, record.error);
      continue;
    }
    const verdict = checkReport(record.data);
    if (verdict.kind === 'invalid') reject(record.origin, verdict.reason);
    else if (verdict.kind === 'ignored') p.ignored += 1; // valid, but the worker would ignore it
    else chunk.push(verdict.report);
    if (chunk.length >= chunkSize) await flush();
    else if (p.read % chunkSize === 0) opts.onProgress?.({ ...p });
  }
  await flush();
  return { ...p, rejections, seconds: (performance.now() - started) / 1000 };
}

/** Waits until the queue holds no waiting, delayed or active jobs. */
export async function waitForQueueDrain(queue: Queue, onTick?: (remaining: number) => void): Promise<void> {
  for (;;) {
    const c = await queue.getJobCounts('waiting', 'prioritized', 'delayed', 'active');
    const remaining = Object.values(c).reduce((a, b) => a + b, 0);
    onTick?.(remaining);
    if (remaining === 0) return;
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * Batches a direct import keeps in flight: at least four, or WORKER_CONCURRENCY if higher. The
 * engine runs one statement at a time and each batch alternates between its statements and its
 * work on the main thread, so more batches keep both busy (target locks keep batches apart). On
 * the 2-core host a replay of 200,000 reports ran at 1,641–1,792/s with four batches of 4,000 in
 * flight, 1,510–1,672/s with two; extra scans onto the 1M history ran alike with either (README).
 */
export const directBatchesInFlight = (configured: number): number => Math.max(4, configured);

export interface DirectImportOptions {
  inputs: string[];
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
  const p: DirectProgress = { read: 0, accepted: 0, ignored: 0, rejected: 0, ingested: 0, duplicates: 0 };
  const rejections: DirectSummary['rejections'] = [];
  const inFlight = new Set<Promise<void>>();
  let failure: unknown;

  const reject = (origin: string, reason: string) => {
    p.rejected += 1;
    if (rejections.length < keep) rejections.push({ origin, reason });
  };

  for await (const record of readReports(opts.inputs)) {
    if (failure) break;
    p.read += 1;
    if (record.error !== undefined) {
      reject(record.origin, record.error);
      continue;
    }
    const done: Promise<void> = opts.batcher.submit({ id: record.origin, data: record.data, attemptsStarted: 1 }).then(
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
    ).finally(() => {
      inFlight.delete(done);
      if ((p.ingested + p.duplicates) % 1000 === 0) opts.onProgress?.({ ...p });
    });
    inFlight.add(done);
    if (inFlight.size >= opts.maxInFlight) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  if (failure) throw failure;
  return { ...p, rejections, seconds: (performance.now() - started) / 1000 };
}
