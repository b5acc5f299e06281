import { createHash } from 'node:crypto';
import { checkReport, type FinishedReport } from '../queue/contract.js';
import type { Conversion, ConvertContext } from './report.js';
import { sarifReports } from './sarif.js';
import { trivyReports } from './trivy.js';

/**
 * The scanner formats `POST /imports/{format}` and `vulndb import --format` accept (SPEC §13), and
 * the one path every document takes to reports a producer may enqueue: convert, then validate
 * each report exactly as `POST /checks` validates one (SPEC §3.3).
 */

export interface ImportFormat {
  convert: (document: unknown, ctx: ConvertContext) => Conversion;
  /** Media types a request body of the format may declare besides application/json. */
  mediaTypes: readonly string[];
}

export const IMPORT_FORMATS = {
  sarif: { convert: sarifReports, mediaTypes: ['application/sarif+json'] },
  trivy: { convert: trivyReports, mediaTypes: [] },
} as const satisfies Record<string, ImportFormat>;

export type ImportFormatName = keyof typeof IMPORT_FORMATS;
export const IMPORT_FORMAT_NAMES = Object.keys(IMPORT_FORMATS) as ImportFormatName[];

export const isImportFormat = (name: string): name is ImportFormatName => Object.hasOwn(IMPORT_FORMATS, name);

/** SHA-256 (hex) of a document's bytes as received: the seed of its check ids (SPEC §13). */
export const documentSha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/**
 * The validated reports of a document, or why it yields none: a document that is not of the format,
 * names no target, or converts to a report that fails SPEC §3.3 is refused whole, so a producer
 * enqueues all of a document's reports or none.
 */
export function importDocument(
  format: ImportFormatName,
  document: unknown,
  ctx: ConvertContext,
): { reports: FinishedReport[] } | { reason: string } {
  const converted = IMPORT_FORMATS[format].convert(document, ctx);
  if ('reason' in converted) return converted;
  const reports: FinishedReport[] = [];
  for (const [i, report] of converted.reports.entries()) {
    const verdict = checkReport(report);
    if (verdict.kind !== 'finished') {
      const where = converted.reports.length > 1 ? `report of runs[${i}]` : 'converted report';
      return { reason: `${where}: ${verdict.kind === 'invalid' ? verdict.reason : `status ${verdict.status}`}` };
    }
    reports.push(verdict.report);
  }
  return { reports };
}
