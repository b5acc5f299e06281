import type { z } from 'zod';
import { uuidv5 } from '../domain/ids.js';
import type { finishedReportSchema } from '../queue/contract.js';

/**
 * What the format converters (SPEC §13) share: the report they produce, the context a document is
 * converted in, and the few rules both formats state the same way.
 */

/** A Vulcan report (SPEC §3.2) as a converter builds it, before `checkReport` validates it. */
export type VulcanReport = z.input<typeof finishedReportSchema> & { status: 'FINISHED' };
export type VulcanVulnerability = NonNullable<VulcanReport['vulnerabilities']>[number];

export interface ConvertContext {
  /** SHA-256 (hex) of the document's bytes as received: the seed of its check ids. */
  sha256: string;
  /** The `target` parameter: overrides the document's own target. */
  target?: string | undefined;
  /** The `time` parameter (RFC 3339): the report time when the document carries none. */
  time?: string | undefined;
  /** The request's (or the command's) time, RFC 3339: the last resort for the report time. */
  now: string;
}

/**
 * A report as a converter yields it: its fields, and its vulnerabilities read one at a time, so that
 * the bounds of a document's reports (SPEC §5.6) stop a conversion as soon as they are passed. The
 * vulnerabilities may include `undefined`: work done without a vulnerability (a rule read), where
 * the caller may pause to let other requests run.
 */
export interface ReportDraft {
  /** Which part of the document the report is of (`runs[1]`) when the document yields several. */
  part: string | undefined;
  fields: Omit<VulcanReport, 'vulnerabilities'>;
  vulnerabilities: Iterable<VulcanVulnerability | undefined>;
}

/**
 * A document's reports, read one at a time. Reading throws `Malformed` (the document is not of the
 * format) or `Unconvertible` (it is, but yields no report: a 400 reason).
 */
export type Conversion = Iterable<ReportDraft>;

export class Unconvertible extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'Unconvertible';
  }
}

/** A check id derived from the document's bytes (and the run index of a SARIF run): same document, same id. */
export const documentCheckId = (sha256: string, run?: number): string =>
  uuidv5(JSON.stringify(run === undefined ? ['import-document', sha256] : ['import-document', sha256, String(run)]));

/** The report time when the document has none of its own: the `time` parameter, else now. */
export const fallbackTime = (ctx: ConvertContext): string => ctx.time ?? ctx.now;

/** A non-empty string, or undefined (scanners write "" as often as they leave a field out). */
export const present = (s: string | null | undefined): string | undefined => (s === null || s === undefined || s === '' ? undefined : s);

/** The first present value of a list of candidates. */
export function firstPresent(...candidates: (string | null | undefined)[]): string | undefined {
  for (const c of candidates) {
    const p = present(c);
    if (p !== undefined) return p;
  }
  return undefined;
}

/** Why the document yields no target (SPEC §13: 400). */
export const noTarget = (where: string) => `${where} names no target: pass the target parameter`;
