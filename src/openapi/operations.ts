import { z } from 'zod';
import { FINDING_ENDPOINTS } from '../findings/endpoints.js';
import type { Endpoint } from '../http/endpoint.js';
import { importOperations } from '../imports/schema.js';
import { ISSUE_ENDPOINTS } from '../issues/endpoints.js';
import { METRICS_PREFIX } from '../metrics/app.js';
import { METRICS } from '../metrics/routes.js';
import { webhookOperations } from '../notifications/schema.js';
import { decisionOperations } from '../decisions/operations.js';
import { meOperation } from '../metrics/me.js';
import { finishedReportSchema } from '../queue/contract.js';
import { SOURCE_ENDPOINTS } from '../sources/endpoints.js';
import {
  assetStatsResponse,
  currentExposureStatsResponse,
  exposureStatsResponse,
  fixedStatsResponse,
  mttrStatsResponse,
  openSeriesResponse,
  openStatsResponse,
  slaStatsResponse,
} from '../stats/schema.js';
import { STAT_ENDPOINTS } from '../stats/endpoints.js';
import { TARGET_ENDPOINTS } from '../targets/endpoints.js';

/**
 * The operations of both APIs as the OpenAPI document presents them: path, query parameters
 * (names of the validated fields of src/filters/params.ts) and the zod schemas of bodies and
 * responses. The resources' endpoint tables (src/<resource>/endpoints.ts), from which their routers
 * are built, give the database API's; the metrics API's are derived from the metric table its
 * routes are built from (src/metrics/routes.ts). test/openapi.test.ts checks that these and the
 * mounted routes of both apps are the same set, each with the parameters its route accepts.
 */

export type Operation = Endpoint;

export const health = z
  .object({ status: z.literal('OK') })
  .strict()
  .describe('The store answers');
const accepted = z
  .object({ job_id: z.string().describe('BullMQ job id') })
  .strict()
  .describe('The report is queued');

export const dbOperations: Operation[] = [
  ...Object.values(FINDING_ENDPOINTS),
  ...Object.values(SOURCE_ENDPOINTS),
  ...Object.values(ISSUE_ENDPOINTS),
  ...Object.values(TARGET_ENDPOINTS),

  ...Object.values(STAT_ENDPOINTS),

  {
    method: 'post',
    path: '/checks',
    tag: 'ingestion',
    summary: 'Queue a Vulcan check report (reports whose status is not FINISHED are accepted and ignored)',
    description:
      'SPEC §3.1/§3.3: the body is any JSON object with a string `status`. A FINISHED report is validated fully and queued as ' +
      'validated (400 with the reason otherwise; fields not listed are dropped); a report of any other status is answered 202 ' +
      'and ignored whatever else it holds.',
    body: finishedReportSchema.meta({
      title: 'FINISHED report',
      description: 'Validated fully (SPEC §3.3); fields not listed are ignored',
    }),
    otherBodies: [
      {
        title: 'Report of another status',
        description:
          'Any JSON object whose status is a string other than FINISHED (e.g. RUNNING, FAILED): answered 202 and ignored; no other field is read',
        type: 'object',
        properties: { status: { type: 'string', not: { const: 'FINISHED' } } },
        required: ['status'],
      },
    ],
    status: 202,
    response: accepted,
    errors: [400, 413, 415, 503],
  },
  ...importOperations,
  { method: 'get', path: '/healthcheck', tag: 'service', summary: 'Whether the store answers', response: health, errors: [503] },
];

/** The metrics API's team and global variants of each metric (SPEC §8.3), keyed by METRICS' names. */
const METRIC_DOCS: Record<string, { summary: string; response: z.ZodType }> = {
  open: { summary: 'OPEN findings by severity (now, at atDate, or opened in the range)', response: openStatsResponse },
  open_series: {
    summary: 'OPEN findings by severity at each of the atDates (one request for a chart; beyond SPEC §8.3)',
    response: openSeriesResponse,
  },
  fixed: { summary: 'FIXED findings by severity (now, at atDate, or fixed in the range and still fixed)', response: fixedStatsResponse },
  mttr: { summary: 'Mean time to remediate by severity, in hours', response: mttrStatsResponse },
  exposure: {
    summary: 'Total exposure percentiles of the findings existing at the reference instant, in hours',
    response: exposureStatsResponse,
  },
  current_exposure: { summary: 'Current exposure percentiles of the OPEN findings, in hours', response: currentExposureStatsResponse },
  assets: { summary: 'Targets in scope and the vulnerable ones by highest open severity', response: assetStatsResponse },
  sla: { summary: STAT_ENDPOINTS.sla.summary, response: slaStatsResponse },
};

const IGNORED = 'Parameters not listed are ignored without validation';

export const metricsOperations: Operation[] = [
  ...METRICS.flatMap((metric): Operation[] => {
    const doc = METRIC_DOCS[metric.name];
    if (!doc) throw new Error(`metric ${metric.name} has no OpenAPI description (src/openapi/operations.ts)`);
    const atDate = metric.rejectAtDate
      ? '; atDate is refused (422 Invalid query params)'
      : metric.requireAtDates
        ? '; atDates is required (422 Invalid query params without it)'
        : '';
    const common = { method: 'get' as const, response: doc.response, errors: [401, 403, 422, 503], cached: true };
    return [
      {
        ...common,
        path: `${METRICS_PREFIX}/teams/{team_id}/${metric.path}`,
        tag: 'metrics: teams',
        summary: `${doc.summary}, over the targets of the team`,
        description: `Scope: the targets currently associated with team_id (zero values for a team without targets). ${IGNORED}${atDate}.`,
        params: metric.params,
      },
      {
        ...common,
        path: `${METRICS_PREFIX}/${metric.path}`,
        tag: 'metrics: global',
        summary: `${doc.summary}, over every finding or the listed teams`,
        description:
          "Scope: every finding in the store (admin only), or with teams the union of the listed teams' targets, each finding counted once. " +
          `${IGNORED}${atDate}.`,
        params: [...metric.params, 'teams'],
      },
    ];
  }),
  {
    method: 'get',
    path: `${METRICS_PREFIX}/healthcheck`,
    tag: 'metrics: service',
    summary: 'Whether the store answers (no token needed)',
    response: health,
    errors: [503],
  },
  ...webhookOperations,
  ...decisionOperations,
  meOperation,
];
