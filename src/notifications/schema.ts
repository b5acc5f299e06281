import { z } from 'zod';
import { METRICS_PREFIX } from '../metrics/app.js';
import type { Endpoint as Operation } from '../http/endpoint.js';
import { EVENT_TYPES } from './events.js';
import { subscriptionBody } from './routes.js';

/** The webhook routes as the OpenAPI document presents them (SPEC §9.1). */

const webhook = z
  .object({
    id: z.string().describe('Subscription UUID'),
    url: z.string().describe('http or https URL the events are POSTed to'),
    teams: z.array(z.string()).describe('Team UUIDs whose targets’ events are sent; empty = every team'),
    events: z.array(z.enum(EVENT_TYPES)).describe('Event types sent; empty = every type'),
    created_at: z.string().describe('RFC 3339'),
  })
  .strict()
  .describe('A subscription (its secret is never returned)');

const DELIVERY =
  'Deliveries: POST of {"id", "type", "time", "finding"} (decision events also carry "decision") with headers X-Vulndb-Event, ' +
  'X-Vulndb-Delivery (the event id, the same on every retry) and, with a secret, X-Vulndb-Signature: sha256=<hex HMAC-SHA256 of the ' +
  'raw body>. A non-2xx answer or none within 10 s is retried with exponential backoff for more than 24 h, then kept as failed ' +
  '(vulndb jobs failed --queue notifications).';

export const webhookOperations: Operation[] = [
  {
    method: 'post',
    path: `${METRICS_PREFIX}/webhooks`,
    tag: 'metrics: webhooks',
    summary: 'Subscribe a URL to finding events (admin only)',
    description:
      'http(s) URLs without user-info, at most 2,048 characters, reaching public addresses only unless WEBHOOK_ALLOW_PRIVATE=true ' +
      `(422 otherwise); at most MAX_WEBHOOKS subscriptions (422 "too many webhooks"). Redirects are not followed. ${DELIVERY}`,
    body: subscriptionBody,
    status: 201,
    response: z.object({ webhook }).strict().describe('The subscription made'),
    errors: [401, 403, 413, 415, 422, 503],
  },
  {
    method: 'get',
    path: `${METRICS_PREFIX}/webhooks`,
    tag: 'metrics: webhooks',
    summary: 'Every subscription (admin only)',
    response: z
      .object({ webhooks: z.array(webhook) })
      .strict()
      .describe('The subscriptions, by creation time (whole seconds), then id'),
    errors: [401, 403, 503],
  },
  {
    method: 'delete',
    path: `${METRICS_PREFIX}/webhooks/{id}`,
    tag: 'metrics: webhooks',
    summary: 'Delete a subscription (admin only); events not yet delivered to it are dropped',
    status: 204,
    response: z.null().describe('Deleted'),
    errors: [401, 403, 404, 503],
  },
];
