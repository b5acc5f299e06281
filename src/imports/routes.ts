import Router from '@koa/router';
import type { Queue } from 'bullmq';
import { formatInstant } from '../domain/time.js';
import { ApiError, dbErrors } from '../errors.js';
import { parseJsonBody, readBodyBytes } from '../http/body.js';
import type { Logger } from '../log.js';
import { countReports } from '../observability/metrics.js';
import { jobDataOf } from '../queue/contract.js';
import { enqueueReport } from '../queue/producer.js';
import { documentSha256, IMPORT_FORMATS, importDocument, isImportFormat } from './formats.js';
import { parseImportParams } from './params.js';

/**
 * POST /imports/{format} (SPEC §13): a scanner's document converted to Vulcan reports, each
 * validated like a POST /checks body and queued as its own job on `checks`, so the worker applies
 * them exactly as reports sent directly. The body limits and error rules are those of POST /checks.
 */

export interface ImportRouteDeps {
  queue: Queue;
  maxReportBytes: number;
  log: Logger;
  /** "now" in epoch seconds: the report time of a document without one and no `time` parameter. */
  now: () => number;
}

const MALFORMED: Record<string, string> = { time: 'Malformed Time', target: 'Malformed Target' };

export function importRoutes(deps: ImportRouteDeps): Router {
  const router = new Router();

  router.post('/imports/:format', async (ctx) => {
    const format = ctx.params.format ?? '';
    // An unknown format is an unknown resource (SPEC §5.2: 404), like an unknown route.
    if (!isImportFormat(format)) throw dbErrors.notFound();
    const parsed = parseImportParams(ctx.query);
    if ('malformed' in parsed) throw new ApiError(400, MALFORMED[parsed.malformed] ?? 'Malformed Parameter');
    const bytes = await readBodyBytes(ctx, deps.maxReportBytes, IMPORT_FORMATS[format].mediaTypes);
    const document = parseJsonBody(bytes);
    const imported = importDocument(format, document, {
      sha256: documentSha256(bytes),
      target: parsed.params.target,
      time: parsed.params.time,
      now: formatInstant(deps.now()),
    });
    if ('reason' in imported) {
      countReports('rejected');
      throw dbErrors.badBody(imported.reason);
    }
    const jobIds: string[] = [];
    try {
      for (const report of imported.reports) jobIds.push(await enqueueReport(deps.queue, jobDataOf({ kind: 'finished', report })));
    } catch (err) {
      deps.log.warn('enqueue failed', { err, enqueued: jobIds.length, of: imported.reports.length });
      throw dbErrors.queueUnavailable();
    }
    ctx.status = 202;
    ctx.body = { job_ids: jobIds, reports: imported.reports.length };
  });

  return router;
}
