import { z } from 'zod';
import type { Endpoint } from '../http/endpoint.js';

const health = z
  .object({ status: z.literal('OK') })
  .strict()
  .describe('The store answers');

/**
 * GET /healthcheck of each API (SPEC §6.9; the metrics API's under its prefix), declared once for
 * the router (routes.ts) and the OpenAPI document. Neither asks for a token.
 */
export const HEALTH_ENDPOINTS = {
  database: {
    method: 'get',
    path: '/healthcheck',
    tag: 'service',
    summary: 'Whether the store answers',
    response: health,
    errors: [503],
  } satisfies Endpoint,
  metrics: {
    method: 'get',
    path: '/healthcheck',
    tag: 'metrics: service',
    summary: 'Whether the store answers (no token needed)',
    response: health,
    errors: [503],
  } satisfies Endpoint,
} as const;
