import Router from '@koa/router';
import type { Queue } from 'bullmq';
import { formatInstant } from '../domain/time.js';
import { ApiError, dbErrors } from '../errors.js';
import { parseJsonBody, readBodyBytes } from '../http/body.js';
import { routePath } from '../http/endpoint.js';
import type { Logger } from '../log.js';
import type { ServiceMetrics } from '../observability/metrics.js';
import { enqueueReportsAtomically } from '../queue/producer.js';
import { IMPORT_ENDPOINTS as E } from './endpoints.js';
import { documentSha256, IMPORT_FORMATS, importDocument, isImportFormat } from './formats.js';
import { parseImportParams } from './params.js';

/**
 * POST /imports/{format} (SPEC §13): a scanner's document converted to Vulcan reports, each
 * validated like a POST /checks body and queued as its own job on `checks`, so the worker applies
 * them exactly as reports sent directly. The body limits and error rules are those of POST /checks;
 * what the document yields is bounded too (SPEC §5.6: 413 Import Too Large) and queued all at once.
 */

export interface ImportRouteDeps {
  queue: Queue;
  maxReportBytes: number;
  log: Logger;
  /** "now" in epoch seconds: the report time of a document without one and no `time` parameter. */
  now: () => number;
  /** The process's collectors: a refused document is counted (none: not counted). */
  metrics?: Pick<ServiceMetrics, 'countReports'> | undefined;
}

const MALFORMED: Record<string, string> = { time: 'Malformed Time', target: 'Malformed Target' };

export function importRoutes(deps: ImportRouteDeps): Router {
  const router = new Router();

  router.post(routePath(E.document), async (ctx) => {
    const format = ctx.params.format ?? '';
    // An unknown format is an unknown resource (SPEC §5.2: 404), like an unknown route.
    if (!isImportFormat(format)) throw dbErrors.notFound();
    const parsed = parseImportParams(ctx.query);
    if ('malformed' in parsed) throw new ApiError(400, MALFORMED[parsed.malformed] ?? 'Malformed Parameter');
    const bytes = await readBodyBytes(ctx, deps.maxReportBytes, IMPORT_FORMATS[format].mediaTypes);
    const document = parseJsonBody(bytes);
    const convertContext = {
      sha256: documentSha256(bytes),
      target: parsed.params.target,
      time: parsed.params.time,
      now: formatInstant(deps.now()),
    };
    const imported = await importDocument(format, document, convertContext, { maxBytes: deps.maxReportBytes });
    if ('reason' in imported) {
      deps.metrics?.countReports('rejected');
      throw dbErrors.badBody(imported.reason);
    }
    if ('tooLarge' in imported) {
      deps.log.info('import refused', { format, why: imported.tooLarge });
      throw dbErrors.importTooLarge();
    }
    let jobIds: string[];
    try {
      // A validated report is its job's data (jobDataOf), all of the document's in one transaction.
      jobIds = await enqueueReportsAtomically(deps.queue, imported.reports);
    } catch (err) {
      deps.log.warn('enqueue failed: nothing of the document queued', { err, reports: imported.reports.length });
      throw dbErrors.queueUnavailable();
    }
    ctx.status = 202;
    ctx.body = { job_ids: jobIds, reports: imported.reports.length };
  });

  return router;
}
