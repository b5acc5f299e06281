import Router from '@koa/router';
import type { Queue } from 'bullmq';
import { dbErrors } from '../errors.js';
import { readJsonBody } from '../http/body.js';
import { routePath } from '../http/endpoint.js';
import { checkReport, jobDataOf } from '../queue/contract.js';
import { enqueueReport } from '../queue/producer.js';
import type { Logger } from '../log.js';
import type { ServiceMetrics } from '../observability/metrics.js';
import { CHECK_ENDPOINTS as E } from './endpoints.js';

/** POST /checks (SPEC §3.1): validate a report like the worker will, then enqueue it. */
export interface CheckRouteDeps {
  queue: Queue;
  maxReportBytes: number;
  log: Logger;
  /** The process's collectors: a refused report is counted (none: not counted). */
  metrics?: Pick<ServiceMetrics, 'countReports'> | undefined;
}

export function checkRoutes(deps: CheckRouteDeps): Router {
  const router = new Router();

  router.post(routePath(E.submit), async (ctx) => {
    const report = await readJsonBody(ctx, deps.maxReportBytes);
    const verdict = checkReport(report);
    if (verdict.kind === 'invalid') {
      deps.metrics?.countReports('rejected');
      throw dbErrors.badBody(verdict.reason);
    }
    let jobId: string;
    try {
      jobId = await enqueueReport(deps.queue, jobDataOf(verdict));
    } catch (err) {
      deps.log.warn('enqueue failed', { err });
      throw dbErrors.queueUnavailable();
    }
    ctx.status = 202;
    ctx.body = { job_id: jobId };
  });

  return router;
}
