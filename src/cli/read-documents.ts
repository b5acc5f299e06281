import fs from 'node:fs';
import type { Readable } from 'node:stream';
import { formatInstant, nowSeconds } from '../domain/time.js';
import { documentSha256, IMPORT_MAX_REPORTS, type ImportFormatName, importDocument } from '../imports/formats.js';
import { DOCUMENT_FILE, listInputFiles, type ReadPosition, type ReadRecord, WHOLE_DOCUMENT_BYTES } from './read-reports.js';

/**
 * Reads scanner documents for `vulndb import --format sarif|trivy` (SPEC §13): each input file
 * (directories: *.json, *.sarif) or standard input is one document, read whole, converted to
 * reports and validated like POST /imports validates a body.
 */

/** What `vulndb import --format sarif|trivy` converts its inputs with (SPEC §13). */
export interface DocumentImport {
  format: ImportFormatName;
  target?: string | undefined;
  time?: string | undefined;
  /** SPEC §5.6: the most bytes a document's reports may hold together (MAX_REPORT_BYTES); beyond, it is refused. */
  maxReportBytes: number;
}

/** How to read scanner documents, but for the bound the configuration gives. */
export type DocumentOptions = Omit<DocumentImport, 'maxReportBytes'>;

async function readWhole(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks);
}

/**
 * One record per report of one document's bytes, or one error record when the document yields none
 * (not JSON, not of the format, no target, a report §3.3 refuses, or more than §5.6 allows: the
 * document is refused whole).
 */
async function* documentReports(bytes: Buffer, origin: string, how: DocumentImport): AsyncGenerator<ReadRecord> {
  let document: unknown;
  try {
    document = JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    yield { origin, error: `not valid JSON: ${(err as Error).message}` };
    return;
  }
  const ctx = { sha256: documentSha256(bytes), target: how.target, time: how.time, now: formatInstant(nowSeconds()) };
  const imported = await importDocument(how.format, document, ctx, { maxBytes: how.maxReportBytes });
  if ('reason' in imported) {
    yield { origin, error: imported.reason };
    return;
  }
  if ('tooLarge' in imported) {
    yield {
      origin,
      error: `Import Too Large: ${imported.tooLarge} (MAX_REPORT_BYTES ${how.maxReportBytes}, at most ${IMPORT_MAX_REPORTS} reports)`,
    };
    return;
  }
  const many = imported.reports.length > 1;
  for (const [i, report] of imported.reports.entries())
    yield { origin: many ? `${origin}#runs[${i}]` : origin, data: report, checked: true };
}

/** The reports of scanner documents: each input file (or standard input) is one document, read whole. */
export async function* readDocuments(
  inputs: string[],
  how: DocumentImport,
  stdin: Readable = process.stdin,
  position?: ReadPosition,
): AsyncGenerator<ReadRecord> {
  for (const input of inputs) {
    if (input === '-') {
      yield* documentReports(await readWhole(stdin), 'stdin', how);
      continue;
    }
    for (const file of listInputFiles([input], DOCUMENT_FILE)) {
      const size = (await fs.promises.stat(file)).size;
      const bytes = size > WHOLE_DOCUMENT_BYTES ? undefined : await fs.promises.readFile(file);
      // Counted once read, before its reports go on: the progress of a one-document import is its share.
      if (position) position.bytes += size;
      if (bytes === undefined) yield { origin: file, error: `larger than ${WHOLE_DOCUMENT_BYTES / 1024 / 1024} MiB: not read` };
      else yield* documentReports(bytes, file, how);
    }
  }
}
