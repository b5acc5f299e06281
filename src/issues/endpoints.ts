import { findingEndpoint, findingListEndpoint, mttrEndpoint, targetsOfIssueEndpoint } from '../answers.js';
import { listEndpoint, oneEndpoint } from '../http/endpoint.js';
import { issueListResponse, issueResponse } from './schema.js';

/** The issue endpoints (SPEC §6.4), declared once for the router (routes.ts) and the OpenAPI document. */
export const ISSUE_ENDPOINTS = {
  list: listEndpoint('/issues', 'issues', 'List issues', issueListResponse),
  one: oneEndpoint('/issues/{issue_id}', 'issues', 'One issue', issueResponse),
  findings: findingListEndpoint('/issues/{issue_id}/findings', 'issues', "The issue's findings"),
  targets: targetsOfIssueEndpoint('/issues/{issue_id}/targets', 'issues', 'Targets with a finding of the issue'),
  finding: findingEndpoint('/issues/{issue_id}/targets/{target_id}', 'issues', 'The finding of the issue on the target (latest detected)'),
  resourceFinding: findingEndpoint(
    '/issues/{issue_id}/targets/{target_id}/resources/{resource}',
    'issues',
    'The finding for one affected resource',
  ),
  mttr: mttrEndpoint('/issues/{issue_id}/mttr', 'issues', "MTTR in days over the issue's findings"),
} as const;
