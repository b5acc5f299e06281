import { nowSeconds } from '../domain/time.js';
import type { Logger } from '../log.js';
import type { Store } from '../storage/gateway.js';
import { ingestBatch, type BatchResult, type WriteStep } from './batch.js';
import type { NormalizedReport } from './normalize.js';
import { prepareReport, type Prepared } from './prepare.js';
import type { Locks } from './target-locks.js';
import { TotalsRewriter } from '../findings/totals.js';

/**
 * Gathers queue jobs into batches: each job waits here until its report has been applied with a
 * whole batch (one set of reads and one insert per table for up to `batchSize` reports). A batch
 * only takes reports whose target locks it holds; the others wait for the next batch.
 */

export interface JobLike {
  id?: string | undefined;
  data: unknown;
  /** Times the job has been started, this run included (BullMQ's attemptsStarted). */
  attemptsStarted: number;
}

export type JobOutcome =
  | { outcome: 'ingested' | 'duplicate' }
  | { outcome: 'ignored'; reason: string };

/** The job's report is invalid: it must fail without retry. */
export class ReportRejected extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'ReportRejected';
  }
}

export interface BatcherOptions {
  store: Store;
  locks: Locks;
  batchSize: number;
  waitMs: number;
  /** Batches in flight at once. */
  concurrency: number;
  maxEventAgeDays: number;
  log: Logger;
  /** Called after each committed batch (the data version bump). */
  onCommitted?: (result: BatchResult) => Promise<void>;
  /** Test hook: the next `times` batches crash after writing `step`. */
  faults?: { crashAfter: WriteStep; times: number };
}

interface Entry {
  jobId: string | undefined;
  report: NormalizedReport;
  recovery: boolean;
  resolve: (o: JobOutcome) => void;
  reject: (e: unknown) => void;
}

const LOCK_RETRY_MS = 50;

export class ReportBatcher {
  private pending: Entry[] = [];
  private timer: NodeJS.Timeout | undefined;
  private running = 0;
  private idle: (() => void)[] = [];
  private readonly totals: TotalsRewriter;

  constructor(private readonly opts: BatcherOptions) {
    this.totals = new TotalsRewriter(opts.store, opts.locks, opts.log);
  }

  submit(job: JobLike): Promise<JobOutcome> {
    const prepared = this.prepare(job.data);
    if (prepared.kind === 'invalid') {
      this.opts.log.warn('report rejected', { jobId: job.id, reason: prepared.reason });
      return Promise.reject(new ReportRejected(prepared.reason));
    }
    return this.submitPrepared(prepared, job);
  }

  /** Validates and normalises a job's report (what `submit` starts with). */
  prepare(data: unknown): Prepared {
    return prepareReport(data, { maxEventAgeDays: this.opts.maxEventAgeDays, now: nowSeconds() });
  }

  /** Applies a report `prepare` found valid, with the next batch that can take it. */
  submitPrepared(prepared: Exclude<Prepared, { kind: 'invalid' }>, job: Omit<JobLike, 'data'>): Promise<JobOutcome> {
    if (prepared.kind === 'ignored') {
      this.opts.log.debug('report ignored', { jobId: job.id, reason: prepared.reason });
      return Promise.resolve({ outcome: 'ignored', reason: prepared.reason });
    }
    return new Promise<JobOutcome>((resolve, reject) => {
      this.pending.push({ jobId: job.id, report: prepared.report, recovery: job.attemptsStarted > 1, resolve, reject });
      this.schedule(this.pending.length >= this.opts.batchSize ? 0 : this.opts.waitMs);
    });
  }

  /** Rewrites the findings lists' totals (at start: a process that died between a batch and its rewrite). */
  rewriteTotals(): Promise<void> {
    return this.totals.request();
  }

  /** Stops retrying a failed rewrite of the totals (the process is shutting down). */
  close(): void {
    this.totals.close();
  }

  /** Resolves once nothing is pending or in flight. */
  drain(): Promise<void> {
    if (this.pending.length === 0 && this.running === 0) return Promise.resolve();
    this.schedule(0);
    return new Promise((resolve) => this.idle.push(resolve));
  }

  private schedule(delayMs: number): void {
    if (this.timer && delayMs > 0) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.kick();
    }, delayMs);
  }

  private kick(): void {
    while (this.running < this.opts.concurrency && this.pending.length > 0) {
      // While a batch runs, the next one starts only once full: under load that keeps batches at
      // their size (each costs the engine a fixed set of statements and new parts to merge),
      // and a partial batch still goes as soon as the store is free.
      if (this.running > 0 && this.pending.length < this.opts.batchSize) break;
      this.running += 1;
      const batch = this.pending.splice(0, this.opts.batchSize);
      // flush handles its own failures; should it still throw, the slot is freed all the same.
      void this.flush(batch).catch(() => true).then((progressed) => {
        this.running -= 1;
        // Reports left pending only because other batches held their targets are retried later.
        if (this.pending.length > 0) this.schedule(progressed ? 0 : LOCK_RETRY_MS);
        else if (this.running === 0) for (const done of this.idle.splice(0)) done();
      });
    }
  }

  /** Applies what it can of a batch; false when every report waited for a target lock. */
  private async flush(batch: Entry[]): Promise<boolean> {
    const { store, locks, log } = this.opts;
    let held;
    try {
      held = await locks.acquire([...new Set(batch.map((e) => e.report.targetId))]);
    } catch (err) {
      for (const e of batch) e.reject(err);
      return true;
    }
    const ready = batch.filter((e) => held.acquired.has(e.report.targetId));
    this.pending.unshift(...batch.filter((e) => !held.acquired.has(e.report.targetId)));
    try {
      if (ready.length === 0) return false;
      const started = performance.now();
      const fault = this.opts.faults && this.opts.faults.times > 0 ? this.opts.faults : undefined;
      if (fault) fault.times -= 1;
      const recovery = ready.some((e) => e.recovery);
      const result = await ingestBatch(store, ready.map((e) => e.report), { recovery, ...(fault ? { crashAfter: fault.crashAfter } : {}) });
      log.info('batch committed', {
        jobs: ready.length,
        duplicates: result.outcomes.filter((o) => o === 'duplicate').length,
        ...result.counts,
        ms: Math.round(performance.now() - started),
      });
      // The lists' totals first: answers cached after the data version bump must see them. Only
      // a status change moves them (a severity change moves a finding within its status). A retry
      // may find its findings written by a failed attempt whose changes were never summed: one in
      // a process that died (a failure in this one rewrites them below).
      if (result.counts.statusChanges > 0 || recovery) await this.totals.request();
      await this.opts.onCommitted?.(result).catch((err) => log.warn('post-commit hook failed', { err }));
      ready.forEach((e, i) => e.resolve({ outcome: result.outcomes[i]! }));
    } catch (err) {
      log.warn('batch failed; its jobs will be retried', { jobs: ready.length, err });
      // Its findings may be written: their totals must not wait for a retry that may never come.
      void this.totals.request();
      for (const e of ready) e.reject(err);
    } finally {
      await held.release().catch((err) => log.warn('releasing target locks failed', { err }));
    }
    return true;
  }
}
