import type { z } from 'zod';
import type { FieldName } from '../filters/params.js';
import { type EndpointWithParams, PAGE } from '../http/endpoint.js';
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
} from './schema.js';

/**
 * The statistics endpoints (SPEC §6.7, §6.9, §7, §12), declared once for the router (routes.ts)
 * and the OpenAPI document: each route parses exactly its `params` (atDate is validated
 * everywhere, ignored where it means nothing).
 */

const stat = (path: string, summary: string, response: z.ZodType, params: readonly FieldName[]): EndpointWithParams => ({
  method: 'get',
  path,
  tag: 'statistics',
  summary,
  params,
  response,
  errors: [400],
});

const COUNT_PARAMS = [
  'atDate',
  'minDate',
  'maxDate',
  'minScore',
  'maxScore',
  'team',
  'teams',
  'identifiers',
  'labels',
  'includeSuppressed',
] as const;

export const STAT_ENDPOINTS = {
  open: stat('/stats/open', 'OPEN findings by severity (now, at atDate, or opened in the range)', openStatsResponse, COUNT_PARAMS),
  fixed: stat(
    '/stats/fixed',
    'FIXED findings by severity (now, at atDate, or fixed in the range and still fixed)',
    fixedStatsResponse,
    COUNT_PARAMS,
  ),
  issues: stat('/stats/issues', 'OPEN and FIXED findings per issue', issueStatsResponse, [
    ...PAGE,
    'atDate',
    'minDate',
    'maxDate',
    'minScore',
    'maxScore',
    'includeSuppressed',
  ]),
  mttr: stat('/stats/mttr', 'Mean time to remediate by severity, in hours', mttrStatsResponse, [
    'atDate',
    'minDate',
    'maxDate',
    'minScore',
    'maxScore',
    'team',
    'teams',
    'labels',
    'includeSuppressed',
  ]),
  size: stat('/stats/size', 'Number of stored sources, targets, issues, findings and FOUND events', sizeStatsResponse, []),
  assets: stat('/stats/assets', 'Targets in scope and the vulnerable ones by highest open severity', assetStatsResponse, [
    'team',
    'teams',
    'identifiers',
    'labels',
    'includeSuppressed',
  ]),
  exposure: stat(
    '/stats/exposure',
    'Total exposure percentiles of the findings existing at the reference instant, in hours',
    exposureStatsResponse,
    ['atDate', 'minScore', 'maxScore', 'team', 'teams', 'includeSuppressed'],
  ),
  currentExposure: stat(
    '/stats/exposure/current',
    'Current exposure percentiles of the OPEN findings, in hours',
    currentExposureStatsResponse,
    ['atDate', 'minScore', 'maxScore', 'team', 'teams', 'labels', 'includeSuppressed'],
  ),
  sla: stat(
    '/stats/sla',
    'Remediation SLA by severity (SLA_DAYS): findings OPEN and breached at the reference instant, periods fixed (in the range) and fixed within their deadline, compliance',
    slaStatsResponse,
    COUNT_PARAMS,
  ),
} as const;
