import { nowSeconds } from '../domain/time.js';
import type { Logger } from '../log.js';
import { ingestBatch, type BatchResult } from './batch.js';
import { SimulatedCrash, type WriteStep } from './batch-writes.js';
import type { Store } from '../storage/gateway.js';
import { StoreError } from '../storage/store-errors.js';
import type { NormalizedReport } from './normalize.js';
import { Interned } from './interned.js';
import { prepareChecked, prepareReport, type Prepared, ReportRejected } from './prepare.js';
import type { FinishedReport } from '../queue/contract.js';
import type { CommitGate } from '../locks/commit-gate.js';
import type { HeldLocks, Locks } from '../locks/target-locks.js';
import type { ReportOutcome, ServiceMetrics } from '../observability/metrics.js';
import type { TotalsRewriter } from './totals.js';

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
  /** Times it ended failed before (BullMQ's attemptsMade): a re-driven job may be half applied. */
  attemptsMade?: number;
  /** When it entered the queue (BullMQ's timestamp, epoch ms), for the ingest lag. */
  enqueuedAt?: number;
}

export type JobOutcome = { outcome: 'ingested' | 'duplicate' } | { outcome: 'ignored'; reason: string };

export interface BatcherOptions {
  store: Store;
  locks: Locks;
  batchSize: number;
  waitMs: number;
  /**
   * Commit pacing (INGEST_COMMIT_INTERVAL_MS): a batch starts at least this long after the one
   * before started, unless a full batch is pending (a backed-up queue commits as fast as it can).
   * Under a steady trickle the reports gather into one batch per interval, so the fixed cost of a
   * batch and the cache invalidation of its commit are paid once per interval. 0: no pacing.
   */
  commitIntervalMs?: number;
  /** Batches in flight at once. */
  concurrency: number;
  maxEventAgeDays: number;
  log: Logger;
  /** The findings lists' totals, rewritten after a batch that changed a status (one rewriter per process). */
  totals: TotalsRewriter;
  /** A batch's writes pass it as one: a snapshot has all of them or none (src/backup). */
  gate?: CommitGate;
  /** Called after each committed batch (the data versions' bump, src/cache/batch-versions.ts). */
  onCommitted?: (result: BatchResult, batch: { recovery: boolean; reports: NormalizedReport[] }) => Promise<void>;
  /**
   * Called after each committed batch, before its jobs complete (so a crash before it ends, or its
   * failure, leaves them to a retry, in recovery mode): emits the batch's notifications
   * (src/notifications/batch-events.ts).
   */
  notify?: (result: BatchResult, batch: { recovery: boolean; reports: NormalizedReport[] }) => Promise<void>;
  /**
   * Test hooks: the next `times` batches crash after writing `step`; a batch holding a report
   * that `poison` picks fails before its first write, as a store refusing that report would; the
   * notifications of the next `unqueued` committed batches fail as a queue refusing them would.
   */
  faults?: { crashAfter: WriteStep; times: number; poison?: (report: NormalizedReport) => boolean; unqueued?: number };
  /** The process's collectors (the service's): reports by outcome, batch times, lag; none, not counted. */
  metrics?: Pick<ServiceMetrics, 'countReports' | 'ingestBatchDuration' | 'ingestLag'> | undefined;
}

interface Entry {
  jobId: string | undefined;
  enqueuedAt: number | undefined;
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
  private lastStarted = -Infinity; // performance.now() of the last batch's start (pacing)

  /** The texts and lists of the reports this batcher holds and the findings its batches load, one instance each. */
  private readonly interned = new Interned();

  constructor(private readonly opts: BatcherOptions) {}

  /** Counts reports by outcome, here or where the ingest workers decide it (src/ingest/jobs.ts, worker.ts). */
  readonly countReports = (outcome: ReportOutcome, n = 1): void => this.opts.metrics?.countReports(outcome, n);

  submit(job: JobLike): Promise<JobOutcome> {
    const prepared = this.prepare(job.data);
    if (prepared.kind === 'invalid') {
      this.countReports('rejected');
      this.opts.log.warn('report rejected', { jobId: job.id, reason: prepared.reason });
      return Promise.reject(new ReportRejected(prepared.reason));
    }
    return this.submitPrepared(prepared, job);
  }

  /** Validates and normalises a job's report (what `submit` starts with). */
  prepare(data: unknown): Prepared {
    return prepareReport(data, { maxEventAgeDays: this.opts.maxEventAgeDays, now: nowSeconds(), interned: this.interned });
  }

  /** `prepare` of a report the producer already validated (`checkReport`): a converted scanner document's. */
  prepareChecked(report: FinishedReport): Exclude<Prepared, { kind: 'invalid' }> {
    return prepareChecked(report, { maxEventAgeDays: this.opts.maxEventAgeDays, now: nowSeconds(), interned: this.interned });
  }

  /** Applies a report `prepare` found valid, with the next batch that can take it. */
  submitPrepared(prepared: Exclude<Prepared, { kind: 'invalid' }>, job: Omit<JobLike, 'data'>): Promise<JobOutcome> {
    if (prepared.kind === 'ignored') {
      this.countReports('ignored');
      this.opts.log.debug('report ignored', { jobId: job.id, reason: prepared.reason });
      return Promise.resolve({ outcome: 'ignored', reason: prepared.reason });
    }
    return new Promise<JobOutcome>((resolve, reject) => {
      const recovery = job.attemptsStarted > 1 || (job.attemptsMade ?? 0) > 0;
      this.pending.push({ jobId: job.id, enqueuedAt: job.enqueuedAt, report: prepared.report, recovery, resolve, reject });
      this.schedule(this.paceDelay(this.opts.waitMs));
    });
  }

  /** Resolves once nothing is pending or in flight. */
  drain(): Promise<void> {
    if (this.pending.length === 0 && this.running === 0) return Promise.resolve();
    this.schedule(0);
    return new Promise((resolve) => this.idle.push(resolve));
  }

  /** Until a batch starts: 0 when a full batch or a drain waits; else `gatherMs` at least, and the commit interval's rest. */
  private paceDelay(gatherMs: number): number {
    if (this.pending.length >= this.opts.batchSize || this.idle.length > 0) return 0;
    const interval = this.opts.commitIntervalMs ?? 0;
    return Math.max(gatherMs, Math.ceil(this.lastStarted + interval - performance.now()));
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
      this.lastStarted = performance.now();
      const batch = this.pending.splice(0, this.opts.batchSize);
      // flush handles its own failures; should it still throw, the slot is freed all the same.
      void this.flush(batch)
        .catch(() => true)
        .then((progressed) => {
          this.running -= 1;
          // Reports left pending only because other batches held their targets are retried later.
          if (this.pending.length > 0) this.schedule(progressed ? this.paceDelay(0) : LOCK_RETRY_MS);
          else if (this.running === 0) for (const done of this.idle.splice(0)) done();
        });
    }
  }

  /** Applies what it can of a batch; false when every report waited for a target lock. */
  private async flush(batch: Entry[]): Promise<boolean> {
    const { locks, log } = this.opts;
    let held: HeldLocks;
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
      await this.applyIsolating(
        ready,
        ready.some((e) => e.recovery),
        false,
      );
    } finally {
      await held.release().catch((err) => log.warn('releasing target locks failed', { err }));
    }
    return true;
  }

  /**
   * Applies reports as one batch. When the batch fails while the store still answers, the failure
   * belongs to some of its reports (SPEC §3.7, isolation): the batch is halved and each half
   * applied on its own, here and now, so the reports that fail by themselves are found and rejected
   * with their reason while the others are stored, and no retry can put them together again. A
   * report failing alone is tried once more before it is rejected. While the store does not answer
   * (an outage), every report is failed as transient and BullMQ retries it with backoff.
   */
  private async applyIsolating(entries: Entry[], recovery: boolean, retriedAlone: boolean): Promise<void> {
    try {
      await this.apply(entries, recovery);
    } catch (err) {
      const { log } = this.opts;
      // Its findings may be written: their totals must not wait for a retry that may never come.
      void this.opts.totals.request();
      const outage = err instanceof SimulatedCrash || !(await this.opts.store.ping());
      if (outage) {
        log.warn('batch failed; its jobs will be retried', { jobs: entries.length, err });
        for (const e of entries) e.reject(err);
        return;
      }
      if (entries.length === 1) {
        if (!retriedAlone) return this.applyIsolating(entries, true, true);
        const reason = `the store refused this report: ${err instanceof Error ? err.message : String(err)}`;
        log.warn('report rejected by the store', {
          jobId: entries[0]!.jobId,
          target: entries[0]!.report.identifier,
          checkId: entries[0]!.report.instance,
          reason,
        });
        this.countReports('failed');
        entries[0]!.reject(new ReportRejected(reason));
        return;
      }
      log.warn('batch failed while the store answers: applying it in halves to isolate the failing reports', { jobs: entries.length, err });
      const half = Math.ceil(entries.length / 2);
      // Recovery: the failed attempt may have written part of the batch.
      await this.applyIsolating(entries.slice(0, half), true, false);
      await this.applyIsolating(entries.slice(half), true, false);
    }
  }

  /** One ingestBatch and what follows a commit; throws what the batch threw. */
  private async apply(entries: Entry[], recovery: boolean): Promise<void> {
    const { store, log, metrics } = this.opts;
    const started = performance.now();
    const engineBefore = store.engineMs();
    const fault = this.opts.faults && this.opts.faults.times > 0 ? this.opts.faults : undefined;
    if (fault) fault.times -= 1;
    const poison = this.opts.faults?.poison;
    if (poison && entries.some((e) => poison(e.report)))
      throw new StoreError('insert into targets failed: injected failure of a poison report');
    // The totals stay outside: their rewrite may wait at the gate for a snapshot that waits for this
    // batch, and a restore rewrites them from the counters anyway.
    const commit = () =>
      ingestBatch(
        store,
        entries.map((e) => e.report),
        { recovery, interned: this.interned, ...(fault ? { crashAfter: fault.crashAfter } : {}) },
      );
    const result = this.opts.gate ? await this.opts.gate.pass(commit) : await commit();
    const committedAt = Date.now();
    metrics?.ingestBatchDuration.observe((performance.now() - started) / 1000);
    const duplicates = result.outcomes.filter((o) => o === 'duplicate').length;
    this.countReports('stored', entries.length - duplicates);
    this.countReports('duplicate', duplicates);
    for (const e of entries) if (e.enqueuedAt !== undefined) metrics?.ingestLag.observe(Math.max(0, committedAt - e.enqueuedAt) / 1000);
    log.info('batch committed', {
      jobs: entries.length,
      duplicates,
      ...result.counts,
      ms: Math.round(performance.now() - started),
      // What the batch's statements held the engine (the rest of `ms`: derivation, other lanes' turns).
      engineMs: Math.round(store.engineMs() - engineBefore),
    });
    // The lists' totals first: answers cached after the data version bump must see them. Only
    // a status change moves them (a severity change moves a finding within its status). A retry
    // may find its findings written by a failed attempt whose changes were never summed: one in
    // a process that died (a failure in this one rewrites them in applyIsolating).
    if (result.counts.statusChanges > 0 || recovery) await this.opts.totals.request();
    const reports = entries.map((e) => e.report);
    await this.opts.onCommitted?.(result, { recovery, reports }).catch((err) => log.warn('post-commit hook failed', { err }));
    try {
      if (this.opts.faults?.unqueued) {
        this.opts.faults.unqueued -= 1;
        throw new Error('injected failure: the notifications queue refused the batch');
      }
      await this.opts.notify?.(result, { recovery, reports });
    } catch (err) {
      // Stored, but its events are not queued: the jobs fail as transient, and their retry, in
      // recovery mode, finds the reports stored and describes their findings' current state again
      // (the same event ids), so no event is lost while Redis comes back within the jobs' attempts.
      log.warn('emitting the batch notifications failed; its jobs will be retried to emit them', { jobs: entries.length, err });
      for (const e of entries) e.reject(err);
      return;
    }
    for (const [i, e] of entries.entries()) e.resolve({ outcome: result.outcomes[i]! });
  }
}
