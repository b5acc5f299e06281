import { findingEndpoint, findingListEndpoint, issuesOfTargetEndpoint, mttrEndpoint } from '../answers.js';
import { type Endpoint, listEndpoint, oneEndpoint, PAGE } from '../http/endpoint.js';
import { associateTeamsBody, targetListResponse, targetResponse } from './schema.js';

/** The target endpoints (SPEC §6.5, §6.6), declared once for the router (routes.ts) and the OpenAPI document. */
export const TARGET_ENDPOINTS = {
  list: listEndpoint('/targets', 'targets', 'List targets', targetListResponse, [
    ...PAGE,
    'identifiermatch',
    'team',
    'teams',
    'identifier',
    'identifiers',
  ]),
  associate: {
    method: 'post',
    path: '/targets',
    tag: 'targets',
    summary: 'Create a target or associate teams with it (never removes an association)',
    body: associateTeamsBody,
    status: 201,
    response: targetResponse,
    errors: [400, 415, 422],
  } satisfies Endpoint,
  one: oneEndpoint('/targets/{target_id}', 'targets', 'One target', targetResponse),
  findings: findingListEndpoint('/targets/{target_id}/findings', 'targets', "The target's findings"),
  issues: issuesOfTargetEndpoint('/targets/{target_id}/issues', 'targets', 'Issues found on the target'),
  finding: findingEndpoint('/targets/{target_id}/issues/{issue_id}', 'targets', 'The finding of the issue on the target (latest detected)'),
  resourceFinding: findingEndpoint(
    '/targets/{target_id}/issues/{issue_id}/resources/{resource}',
    'targets',
    'The finding for one affected resource',
  ),
  mttr: mttrEndpoint('/targets/{target_id}/mttr', 'targets', "MTTR in days over the target's findings"),
} as const;
