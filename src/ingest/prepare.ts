import { checkReport, type FinishedReport } from '../queue/contract.js';
import { Interned } from './interned.js';
import { normalizeReport, type NormalizedReport } from './normalize.js';

/**
 * What the worker does with one job's data before batching (SPEC §3.3, §3.4 steps 1–2 up to the
 * duplicate check, which needs the store): validate, ignore what must be ignored, normalise.
 */

export type Prepared =
  | { kind: 'report'; report: NormalizedReport }
  | { kind: 'ignored'; reason: string }
  | { kind: 'invalid'; reason: string };

/** The job's report is invalid: it must fail without retry. */
export class ReportRejected extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'ReportRejected';
  }
}

export interface PrepareOptions {
  maxEventAgeDays: number;
  now: number;
  /** The texts and lists the process shares (the batcher's); none: the report's own. */
  interned?: Interned;
}

export function prepareReport(data: unknown, opts: PrepareOptions): Prepared {
  const verdict = checkReport(data);
  if (verdict.kind === 'invalid') return verdict;
  if (verdict.kind === 'ignored') return { kind: 'ignored', reason: `status ${JSON.stringify(verdict.status)} is not FINISHED` };
  return prepareChecked(verdict.report, opts);
}

/** `prepareReport` of a report `checkReport` already found FINISHED and valid (a converted scanner document's). */
export function prepareChecked(checked: FinishedReport, opts: PrepareOptions): Exclude<Prepared, { kind: 'invalid' }> {
  const report = normalizeReport(checked, opts.interned ?? new Interned());
  if (opts.maxEventAgeDays > 0 && report.time < opts.now - opts.maxEventAgeDays * 86_400) {
    return { kind: 'ignored', reason: `older than MAX_EVENT_AGE_DAYS (${opts.maxEventAgeDays})` };
  }
  return { kind: 'report', report };
}
