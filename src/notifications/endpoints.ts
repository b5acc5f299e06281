import { z } from 'zod';
import type { Endpoint } from '../http/endpoint.js';
import { subscriptionBody, webhookView } from './schema.js';

/**
 * The webhook endpoints of the metrics API (SPEC §9.1, admins only), declared once for the router
 * (routes.ts) and the OpenAPI document; paths are under the metrics API's prefix.
 */

const DELIVERY =
  'Deliveries: POST of {"id", "type", "time", "finding"} (decision events also carry "decision") with headers X-Vulndb-Event, ' +
  'X-Vulndb-Delivery (the event id, the same on every retry) and, with a secret, X-Vulndb-Signature: sha256=<hex HMAC-SHA256 of the ' +
  'raw body>. A non-2xx answer or none within 10 s is retried with exponential backoff for more than 24 h, then kept as failed ' +
  '(vulndb jobs failed --queue notifications).';

export const WEBHOOK_ENDPOINTS = {
  subscribe: {
    method: 'post',
    path: '/webhooks',
    tag: 'metrics: webhooks',
    summary: 'Subscribe a URL to finding events (admin only)',
    description:
      'http(s) URLs without user-info, at most 2,048 characters, reaching public addresses only unless WEBHOOK_ALLOW_PRIVATE=true ' +
      `(422 otherwise); at most MAX_WEBHOOKS subscriptions (422 "too many webhooks"). Redirects are not followed. ${DELIVERY}`,
    body: subscriptionBody,
    status: 201,
    response: z.object({ webhook: webhookView }).strict().describe('The subscription made'),
    errors: [401, 403, 413, 415, 422, 503],
  } satisfies Endpoint,
  list: {
    method: 'get',
    path: '/webhooks',
    tag: 'metrics: webhooks',
    summary: 'Every subscription (admin only)',
    response: z
      .object({ webhooks: z.array(webhookView) })
      .strict()
      .describe('The subscriptions, by creation time (whole seconds), then id'),
    errors: [401, 403, 503],
  } satisfies Endpoint,
  remove: {
    method: 'delete',
    path: '/webhooks/{id}',
    tag: 'metrics: webhooks',
    summary: 'Delete a subscription (admin only); events not yet delivered to it are dropped',
    status: 204,
    response: z.null().describe('Deleted'),
    errors: [401, 403, 404, 503],
  } satisfies Endpoint,
} as const;
