import { z } from 'zod';
import { FINDING_LIST_PARAMS, type FieldName } from '../filters/params.js';
import {
  entityMttrResponse,
  findingEventListResponse,
  findingListResponse,
  findingResponse,
} from '../findings/schema.js';
import { issueListResponse, issueResponse } from '../issues/schema.js';
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
} from '../stats/schema.js';
import { associateTeamsBody, targetListResponse, targetResponse } from '../targets/schema.js';

/**
 * The database API's operations as the OpenAPI document presents them: path, query parameters
 * (names of the validated fields of src/filters/params.ts) and the zod schemas of bodies and
 * responses. test/openapi.test.ts checks that this list and the mounted routes are the same set.
 */

export interface Operation {
  method: 'get' | 'post';
  /** OpenAPI form, e.g. /findings/{finding_id}. */
  path: string;
  tag: string;
  summary: string;
  params?: readonly FieldName[];
  body?: z.ZodType;
  status?: number;
  response: z.ZodType;
  /** Error statuses besides 500. */
  errors: number[];
  /** Answered through the response cache (src/cache/response-cache.ts), which sets `X-Cache`. */
  cached?: boolean;
}

const PAGE = ['page', 'size'] as const;
export const STAT_COUNT_PARAMS = ['atDate', 'minDate', 'maxDate', 'minScore', 'maxScore', 'team', 'teams', 'identifiers', 'labels'] as const;

const health = z.object({ status: z.literal('OK') }).strict().describe('The store answers');
const accepted = z.object({ job_id: z.string().describe('BullMQ job id') }).strict().describe('The report is queued');

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
const findingList = (path: string, tag: string, summary: string): Operation => ({
  ...list(path, tag, summary, findingListResponse, FINDING_LIST_PARAMS),
  cached: true,
});
const one = (path: string, tag: string, summary: string, response: z.ZodType): Operation => ({ method: 'get', path, tag, summary, response, errors: [404] });
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

  list('/targets', 'targets', 'List targets', targetListResponse, [...PAGE, 'identifiermatch', 'team', 'teams', 'identifier', 'identifiers']),
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
  stat('/stats/fixed', 'FIXED findings by severity (now, at atDate, or fixed in the range and still fixed)', fixedStatsResponse, STAT_COUNT_PARAMS),
  stat('/stats/issues', 'OPEN and FIXED findings per issue', issueStatsResponse, [...PAGE, 'atDate', 'minDate', 'maxDate', 'minScore', 'maxScore']),
  stat('/stats/mttr', 'Mean time to remediate by severity, in hours', mttrStatsResponse, ['atDate', 'minDate', 'maxDate', 'minScore', 'maxScore', 'team', 'teams', 'labels']),
  stat('/stats/size', 'Number of stored sources, targets, issues, findings and FOUND events', sizeStatsResponse, []),
  stat('/stats/assets', 'Targets in scope and the vulnerable ones by highest open severity', assetStatsResponse, ['team', 'teams', 'identifiers', 'labels']),
  stat('/stats/exposure', 'Total exposure percentiles of the findings existing at the reference instant, in hours', exposureStatsResponse, ['atDate', 'minScore', 'maxScore', 'team', 'teams']),
  stat('/stats/exposure/current', 'Current exposure percentiles of the OPEN findings, in hours', currentExposureStatsResponse, ['atDate', 'minScore', 'maxScore', 'team', 'teams', 'labels']),

  {
    method: 'post',
    path: '/checks',
    tag: 'ingestion',
    summary: 'Queue a Vulcan check report (reports whose status is not FINISHED are accepted and ignored)',
    body: finishedReportSchema,
    status: 202,
    response: accepted,
    errors: [400, 413, 415, 503],
  },
  { method: 'get', path: '/healthcheck', tag: 'service', summary: 'Whether the store answers', response: health, errors: [503] },
];
