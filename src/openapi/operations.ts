import { z } from 'zod';
import { FINDING_LIST_PARAMS, type FieldName } from '../filters/params.js';
import { entityMttrResponse, findingEventListResponse, findingListResponse, findingResponse } from '../findings/schema.js';
import { issueListResponse, issueResponse } from '../issues/schema.js';
import { METRICS_PREFIX } from '../metrics/app.js';
import { METRICS } from '../metrics/routes.js';
import { webhookOperations } from '../notifications/schema.js';
import { finishedReportSchema } from '../queue/contract.js';
import { sourceListResponse, sourceResponse } from '../sources/schema.js';
import {
  assetStatsResponse,
  currentExposureStatsResponse,
  exposureStatsResponse,
  fixedStatsResponse,
  issueStatsResponse,
  mttrStatsResponse,
  openStatsResponse,
  sizeStatsResponse,
  slaStatsResponse,
} from '../stats/schema.js';
import { associateTeamsBody, targetListResponse, targetResponse } from '../targets/schema.js';

/**
 * The operations of both APIs as the OpenAPI document presents them: path, query parameters
 * (names of the validated fields of src/filters/params.ts) and the zod schemas of bodies and
 * responses. The database API's are listed here; the metrics API's are derived from the metric
 * table its routes are built from (src/metrics/routes.ts). test/openapi.test.ts checks that these
 * lists and the mounted routes of both apps are the same set.
 */

export interface Operation {
  method: 'get' | 'post' | 'put' | 'delete';
  /** OpenAPI form, e.g. /findings/{finding_id}. */
  path: string;
  tag: string;
  summary: string;
  params?: readonly FieldName[];
  body?: z.ZodType;
  /** Other accepted bodies (JSON Schema): the document offers `oneOf` the body and these. */
  otherBodies?: Record<string, unknown>[];
  /** Longer text than the summary (OpenAPI `description`). */
  description?: string;
  status?: number;
  response: z.ZodType;
  /** Error statuses besides 500. */
  errors: number[];
  /** Answered through the response cache (src/cache/response-cache.ts), which sets `X-Cache`. */
  cached?: boolean;
}

const PAGE = ['page', 'size'] as const;
export const STAT_COUNT_PARAMS = [
  'atDate',
  'minDate',
  'maxDate',
  'minScore',
  'maxScore',
  'team',
  'teams',
  'identifiers',
  'labels',
] as const;

export const health = z
  .object({ status: z.literal('OK') })
  .strict()
  .describe('The store answers');
const accepted = z
  .object({ job_id: z.string().describe('BullMQ job id') })
  .strict()
  .describe('The report is queued');

const list = (path: string, tag: string, summary: string, response: z.ZodType, params: readonly FieldName[] = PAGE): Operation => ({
  method: 'get',
  path,
  tag,
  summary,
  params,
  response,
  errors: [400, 404],
});
/** The findings lists (SPEC §6.2–§6.5), which all go through the response cache. */
const SLA_SUMMARY =
  'Remediation SLA by severity (SLA_DAYS): findings OPEN and breached at the reference instant, periods fixed (in the range) and fixed within their deadline, compliance';

const findingList = (path: string, tag: string, summary: string): Operation => ({
  ...list(path, tag, summary, findingListResponse, FINDING_LIST_PARAMS),
  cached: true,
});
const one = (path: string, tag: string, summary: string, response: z.ZodType): Operation => ({
  method: 'get',
  path,
  tag,
  summary,
  response,
  errors: [404],
});
const stat = (path: string, summary: string, response: z.ZodType, params: readonly FieldName[]): Operation => ({
  method: 'get',
  path,
  tag: 'statistics',
  summary,
  params,
  response,
  errors: [400],
});

export const dbOperations: Operation[] = [
  findingList('/findings', 'findings', 'List findings (filters of SPEC §5.5)'),
  one('/findings/{finding_id}', 'findings', 'One finding, evaluated now', findingResponse),
  list('/findings/{finding_id}/events', 'findings', "A finding's FOUND events, latest first", findingEventListResponse),
  one('/findings/{finding_id}/mttr', 'findings', "Mean time to remediate of the finding's closed periods, in days", entityMttrResponse),

  list('/sources', 'sources', 'List sources (check executions) by time', sourceListResponse),
  one('/sources/{source_id}', 'sources', 'One source', sourceResponse),
  findingList('/sources/{source_id}/findings', 'sources', 'Findings the source reported'),
  one('/sources/{source_id}/mttr', 'sources', "MTTR in days of the source's whole family (name, component, options)", entityMttrResponse),

  list('/issues', 'issues', 'List issues', issueListResponse),
  one('/issues/{issue_id}', 'issues', 'One issue', issueResponse),
  findingList('/issues/{issue_id}/findings', 'issues', "The issue's findings"),
  list('/issues/{issue_id}/targets', 'issues', 'Targets with a finding of the issue', targetListResponse),
  one('/issues/{issue_id}/targets/{target_id}', 'issues', 'The finding of the issue on the target (latest detected)', findingResponse),
  one('/issues/{issue_id}/targets/{target_id}/resources/{resource}', 'issues', 'The finding for one affected resource', findingResponse),
  one('/issues/{issue_id}/mttr', 'issues', "MTTR in days over the issue's findings", entityMttrResponse),

  list('/targets', 'targets', 'List targets', targetListResponse, [
    ...PAGE,
    'identifiermatch',
    'team',
    'teams',
    'identifier',
    'identifiers',
  ]),
  {
    method: 'post',
    path: '/targets',
    tag: 'targets',
    summary: 'Create a target or associate teams with it (never removes an association)',
    body: associateTeamsBody,
    status: 201,
    response: targetResponse,
    errors: [400, 415, 422],
  },
  one('/targets/{target_id}', 'targets', 'One target', targetResponse),
  findingList('/targets/{target_id}/findings', 'targets', "The target's findings"),
  list('/targets/{target_id}/issues', 'targets', 'Issues found on the target', issueListResponse),
  one('/targets/{target_id}/issues/{issue_id}', 'targets', 'The finding of the issue on the target (latest detected)', findingResponse),
  one('/targets/{target_id}/issues/{issue_id}/resources/{resource}', 'targets', 'The finding for one affected resource', findingResponse),
  one('/targets/{target_id}/mttr', 'targets', "MTTR in days over the target's findings", entityMttrResponse),

  stat('/stats/open', 'OPEN findings by severity (now, at atDate, or opened in the range)', openStatsResponse, STAT_COUNT_PARAMS),
  stat(
    '/stats/fixed',
    'FIXED findings by severity (now, at atDate, or fixed in the range and still fixed)',
    fixedStatsResponse,
    STAT_COUNT_PARAMS,
  ),
  stat('/stats/issues', 'OPEN and FIXED findings per issue', issueStatsResponse, [
    ...PAGE,
    'atDate',
    'minDate',
    'maxDate',
    'minScore',
    'maxScore',
  ]),
  stat('/stats/mttr', 'Mean time to remediate by severity, in hours', mttrStatsResponse, [
    'atDate',
    'minDate',
    'maxDate',
    'minScore',
    'maxScore',
    'team',
    'teams',
    'labels',
  ]),
  stat('/stats/size', 'Number of stored sources, targets, issues, findings and FOUND events', sizeStatsResponse, []),
  stat('/stats/assets', 'Targets in scope and the vulnerable ones by highest open severity', assetStatsResponse, [
    'team',
    'teams',
    'identifiers',
    'labels',
  ]),
  stat('/stats/exposure', 'Total exposure percentiles of the findings existing at the reference instant, in hours', exposureStatsResponse, [
    'atDate',
    'minScore',
    'maxScore',
    'team',
    'teams',
  ]),
  stat('/stats/exposure/current', 'Current exposure percentiles of the OPEN findings, in hours', currentExposureStatsResponse, [
    'atDate',
    'minScore',
    'maxScore',
    'team',
    'teams',
    'labels',
  ]),
  stat('/stats/sla', SLA_SUMMARY, slaStatsResponse, STAT_COUNT_PARAMS),

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
  { method: 'get', path: '/healthcheck', tag: 'service', summary: 'Whether the store answers', response: health, errors: [503] },
];

/** The metrics API's team and global variants of each metric (SPEC §8.3), keyed by METRICS' names. */
const METRIC_DOCS: Record<string, { summary: string; response: z.ZodType }> = {
  open: { summary: 'OPEN findings by severity (now, at atDate, or opened in the range)', response: openStatsResponse },
  fixed: { summary: 'FIXED findings by severity (now, at atDate, or fixed in the range and still fixed)', response: fixedStatsResponse },
  mttr: { summary: 'Mean time to remediate by severity, in hours', response: mttrStatsResponse },
  exposure: {
    summary: 'Total exposure percentiles of the findings existing at the reference instant, in hours',
    response: exposureStatsResponse,
  },
  current_exposure: { summary: 'Current exposure percentiles of the OPEN findings, in hours', response: currentExposureStatsResponse },
  assets: { summary: 'Targets in scope and the vulnerable ones by highest open severity', response: assetStatsResponse },
  sla: { summary: SLA_SUMMARY, response: slaStatsResponse },
};

const IGNORED = 'Parameters not listed are ignored without validation';

export const metricsOperations: Operation[] = [
  ...METRICS.flatMap((metric): Operation[] => {
    const doc = METRIC_DOCS[metric.name];
    if (!doc) throw new Error(`metric ${metric.name} has no OpenAPI description (src/openapi/operations.ts)`);
    const atDate = metric.rejectAtDate ? '; atDate is refused (422 Invalid query params)' : '';
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
];
