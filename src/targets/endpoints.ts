import { type Endpoint, listEndpoint, oneEndpoint, PAGE } from '../http/endpoint.js';
import { associateTeamsBody, targetListResponse, targetResponse } from './schema.js';

/**
 * The target endpoints (SPEC §6.5, §6.6), declared once for the router (routes.ts) and the OpenAPI
 * document; what a target's findings answer is src/findings' (TARGET_FINDING_ENDPOINTS).
 */
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
} as const;
