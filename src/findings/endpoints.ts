import { FINDING_LIST_PARAMS } from '../filters/params.js';
import { type EndpointWithParams, listEndpoint, oneEndpoint } from '../http/endpoint.js';
import { issueListResponse } from '../issues/schema.js';
import { targetListResponse } from '../targets/schema.js';
import { entityMttrResponse, findingEventListResponse, findingListResponse, findingPeriodsResponse, findingResponse } from './schema.js';

/**
 * The endpoints that read findings (SPEC §6.2–§6.5, §6.8), declared once for the routers
 * (routes.ts, parent-routes.ts) and the OpenAPI document: the findings' own, and those under an
 * issue, a target or a source, which are tagged with their parent.
 */

/** The findings lists, which all go through the response cache. */
const findingList = (path: string, tag: string, summary: string): EndpointWithParams => ({
  ...listEndpoint(path, tag, summary, findingListResponse, FINDING_LIST_PARAMS),
  cached: true,
});
const oneFinding = (path: string, tag: string, summary: string) => oneEndpoint(path, tag, summary, findingResponse);
const mttr = (path: string, tag: string, summary: string) => oneEndpoint(path, tag, summary, entityMttrResponse);

export const FINDING_ENDPOINTS = {
  list: findingList('/findings', 'findings', 'List findings (filters of SPEC §5.5)'),
  one: oneFinding('/findings/{finding_id}', 'findings', 'One finding, evaluated now'),
  events: listEndpoint('/findings/{finding_id}/events', 'findings', "A finding's FOUND events, latest first", findingEventListResponse),
  periods: oneEndpoint('/findings/{finding_id}/periods', 'findings', "A finding's OPEN periods, oldest first", findingPeriodsResponse),
  mttr: mttr('/findings/{finding_id}/mttr', 'findings', "Mean time to remediate of the finding's closed periods, in days"),
} as const;

export const SOURCE_FINDING_ENDPOINTS = {
  findings: findingList('/sources/{source_id}/findings', 'sources', 'Findings the source reported'),
  mttr: mttr('/sources/{source_id}/mttr', 'sources', "MTTR in days of the source's whole family (name, component, options)"),
} as const;

export const ISSUE_FINDING_ENDPOINTS = {
  findings: findingList('/issues/{issue_id}/findings', 'issues', "The issue's findings"),
  targets: listEndpoint('/issues/{issue_id}/targets', 'issues', 'Targets with a finding of the issue', targetListResponse),
  finding: oneFinding('/issues/{issue_id}/targets/{target_id}', 'issues', 'The finding of the issue on the target (latest detected)'),
  resourceFinding: oneFinding(
    '/issues/{issue_id}/targets/{target_id}/resources/{resource}',
    'issues',
    'The finding for one affected resource',
  ),
  mttr: mttr('/issues/{issue_id}/mttr', 'issues', "MTTR in days over the issue's findings"),
} as const;

export const TARGET_FINDING_ENDPOINTS = {
  findings: findingList('/targets/{target_id}/findings', 'targets', "The target's findings"),
  issues: listEndpoint('/targets/{target_id}/issues', 'targets', 'Issues found on the target', issueListResponse),
  finding: oneFinding('/targets/{target_id}/issues/{issue_id}', 'targets', 'The finding of the issue on the target (latest detected)'),
  resourceFinding: oneFinding(
    '/targets/{target_id}/issues/{issue_id}/resources/{resource}',
    'targets',
    'The finding for one affected resource',
  ),
  mttr: mttr('/targets/{target_id}/mttr', 'targets', "MTTR in days over the target's findings"),
} as const;
