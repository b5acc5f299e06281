import { z } from 'zod';
import type { Endpoint } from '../http/endpoint.js';
import { decisionBody, decisionResponse, decisionsResponse } from './schema.js';

/**
 * The triage decision endpoints of the metrics API (SPEC §12.3), declared once for the router
 * (routes.ts) and the OpenAPI document; paths are under the metrics API's prefix.
 */

const WHO =
  'Admins, or members of a team of the finding\'s target; an unknown or malformed finding id and a finding outside the caller\'s teams are both 404 "Record not found".';

export const DECISION_ENDPOINTS = {
  make: {
    method: 'put',
    path: '/findings/{finding_id}/decision',
    tag: 'metrics: decisions',
    summary: 'Mark a finding as a false positive or an accepted risk; replaces (revokes) the active decision',
    description:
      `${WHO} expires_at (RFC 3339, in the future) is required for accepted_risk, at most 365 days ahead, and optional for ` +
      'false_positive. A false positive also lapses at a later detection carrying another fingerprint. Suppressed findings are left ' +
      'out of every statistic at its reference instant unless includeSuppressed=true.',
    body: decisionBody,
    response: decisionResponse.describe('The decision made'),
    errors: [401, 404, 413, 415, 422, 503],
  } satisfies Endpoint,
  revoke: {
    method: 'delete',
    path: '/findings/{finding_id}/decision',
    tag: 'metrics: decisions',
    summary: 'Revoke the active decision (404 when none is active)',
    description: WHO,
    status: 204,
    response: z.null().describe('Revoked'),
    errors: [401, 404, 503],
  } satisfies Endpoint,
  trail: {
    method: 'get',
    path: '/findings/{finding_id}/decisions',
    tag: 'metrics: decisions',
    summary: 'Every decision made on the finding, newest first (the audit trail)',
    description: WHO,
    response: decisionsResponse.describe('The decisions with their revocations'),
    errors: [401, 404, 503],
  } satisfies Endpoint,
} as const;
