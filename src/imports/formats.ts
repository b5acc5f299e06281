import { createHash } from 'node:crypto';
import { wellFormedJson } from '../domain/text.js';
import {
  describeIssues,
  type FinishedReport,
  finishedReportSchema,
  type ReportVulnerability,
  vulnerabilitySchema,
} from '../queue/contract.js';
import { Malformed } from './read.js';
import { type Conversion, type ConvertContext, type ReportDraft, Unconvertible } from './report.js';
import { sarifReports } from './sarif.js';
import { trivyReports } from './trivy.js';

/**
 * The scanner formats `POST /imports/{format}` and `vulndb import --format` accept (SPEC §13), and
 * the one path every document takes to reports a producer may enqueue: convert, validate each
 * report exactly as `POST /checks` validates one (SPEC §3.3), and bound what the document yields
 * (SPEC §5.6) while converting, so that a small document cannot become a huge job nor hold the
 * event loop.
 */

export interface ImportFormat {
  convert: (document: unknown, ctx: ConvertContext) => Conversion;
  /** What a document of the format is, for the reason given for one that is not. */
  kind: string;
  /** Media types a request body of the format may declare besides application/json. */
  mediaTypes: readonly string[];
}

export const IMPORT_FORMATS = {
  sarif: { convert: sarifReports, kind: 'a SARIF 2.1.0 document', mediaTypes: ['application/sarif+json'] },
  trivy: { convert: trivyReports, kind: 'a Trivy JSON document', mediaTypes: [] },
} as const satisfies Record<string, ImportFormat>;

export type ImportFormatName = keyof typeof IMPORT_FORMATS;
export const IMPORT_FORMAT_NAMES = Object.keys(IMPORT_FORMATS) as ImportFormatName[];

export const isImportFormat = (name: string): name is ImportFormatName => Object.hasOwn(IMPORT_FORMATS, name);

/** SHA-256 (hex) of a document's bytes as received: the seed of its check ids (SPEC §13). */
export const documentSha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** SPEC §5.6: the most reports one document may yield. */
export const IMPORT_MAX_REPORTS = 1000;

export interface ImportLimits {
  /** The most bytes the reports of one document may hold together, as the JSON queued (MAX_REPORT_BYTES). */
  maxBytes: number;
  maxReports?: number;
  /** Lets other work run between slices of a conversion (default: one turn of the event loop). */
  pause?: () => Promise<void>;
}

/**
 * The validated reports of a document and the bytes of their JSON; or why it yields none (a 400
 * reason: not of the format, no target, or a report that fails SPEC §3.3 refuses the document
 * whole); or why it yields too much (413), found as soon as a bound is passed.
 */
export type Imported = { reports: FinishedReport[]; bytes: number } | { reason: string } | { tooLarge: string };

/** Conversion work done between pauses: long enough to cost little, short enough for other requests to be answered quickly. */
const SLICE_MS = 5;
const CHECK_CLOCK_EVERY = 64;
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value));
/** JSON writes an unpaired surrogate as an escape such as `\ud83d` (and may match an escaped backslash before `ud83d`: then checked for nothing). */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

/** The value with its text made storable (SPEC §3.3 item 6) and the bytes of its JSON, serialized once when it already is. */
function storable<T>(value: T): [T, number] {
  const text = JSON.stringify(value);
  if (!SURROGATE_ESCAPE.test(text)) return [value, Buffer.byteLength(text)];
  const repaired = wellFormedJson(value);
  return [repaired, jsonBytes(repaired)];
}

/** Counts the JSON bytes of the reports converted so far against the bound, and paces the work. */
class Budget {
  bytes = 0;
  private steps = 0;
  private sliceStart = performance.now();

  constructor(private readonly limits: ImportLimits) {}

  /** Adds `bytes`; false once the reports hold more than the bound. */
  add(bytes: number): boolean {
    this.bytes += bytes;
    return this.bytes <= this.limits.maxBytes;
  }

  /** Whether the current slice of work is over (then `pause`). */
  due(): boolean {
    if (++this.steps % CHECK_CLOCK_EVERY !== 0) return false;
    return performance.now() - this.sliceStart >= SLICE_MS;
  }

  async pause(): Promise<void> {
    await (this.limits.pause ?? nextTurn)();
    this.sliceStart = performance.now();
  }
}

const tooManyBytes = (limits: ImportLimits) => ({ tooLarge: `its reports would hold more than ${limits.maxBytes} bytes` });

/** One draft as a validated report, its bytes added to the budget; or why the document is refused. */
async function reportOf(
  draft: ReportDraft,
  budget: Budget,
  limits: ImportLimits,
): Promise<FinishedReport | Exclude<Imported, { reports: unknown }>> {
  const where = draft.part === undefined ? 'converted report' : `report of ${draft.part}`;
  const head = finishedReportSchema.safeParse({ ...draft.fields, vulnerabilities: [] });
  if (!head.success) return { reason: `${where}: ${describeIssues(head.error)}` };
  const report = wellFormedJson(head.data);
  if (!budget.add(jsonBytes(report))) return tooManyBytes(limits);
  const vulnerabilities: ReportVulnerability[] = [];
  for (const v of draft.vulnerabilities) {
    if (budget.due()) await budget.pause();
    if (v === undefined) continue;
    const parsed = vulnerabilitySchema.safeParse(v);
    if (!parsed.success) return { reason: `${where}: ${describeIssues(parsed.error, 5, ['vulnerabilities', vulnerabilities.length])}` };
    const [vulnerability, bytes] = storable(parsed.data);
    // The report's JSON is its fields' with `[]`, plus each vulnerability's and the commas between them.
    if (!budget.add(bytes + (vulnerabilities.length > 0 ? 1 : 0))) return tooManyBytes(limits);
    vulnerabilities.push(vulnerability);
  }
  report.vulnerabilities = vulnerabilities;
  return report;
}

/**
 * SPEC §13 and §5.6: a document's reports, validated, within `limits`. Linear in the document's
 * size, and stopped as soon as a bound is passed; pauses every few milliseconds of work.
 */
export async function importDocument(
  format: ImportFormatName,
  document: unknown,
  ctx: ConvertContext,
  limits: ImportLimits,
): Promise<Imported> {
  const maxReports = limits.maxReports ?? IMPORT_MAX_REPORTS;
  const budget = new Budget(limits);
  const reports: FinishedReport[] = [];
  try {
    for (const draft of IMPORT_FORMATS[format].convert(document, ctx)) {
      if (reports.length === maxReports) return { tooLarge: `it yields more than ${maxReports} reports` };
      const report = await reportOf(draft, budget, limits);
      if ('reason' in report || 'tooLarge' in report) return report;
      reports.push(report);
      if (budget.due()) await budget.pause();
    }
  } catch (err) {
    if (err instanceof Malformed) return { reason: `not ${IMPORT_FORMATS[format].kind}: ${err.message}` };
    if (err instanceof Unconvertible) return { reason: err.message };
    throw err;
  }
  return { reports, bytes: budget.bytes };
}
