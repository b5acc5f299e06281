import { listEndpoint, oneEndpoint } from '../http/endpoint.js';
import { issueListResponse, issueResponse } from './schema.js';

/**
 * The issue endpoints (SPEC §6.4), declared once for the router (routes.ts) and the OpenAPI
 * document; what an issue's findings answer is src/findings' (ISSUE_FINDING_ENDPOINTS).
 */
export const ISSUE_ENDPOINTS = {
  list: listEndpoint('/issues', 'issues', 'List issues', issueListResponse),
  one: oneEndpoint('/issues/{issue_id}', 'issues', 'One issue', issueResponse),
} as const;
