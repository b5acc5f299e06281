import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import { z } from 'zod';
import { callerOf } from '../auth/tokens.js';
import { safeText } from '../domain/text.js';
import { isUuid } from '../domain/uuid.js';
import { ApiError } from '../errors.js';
import { readJsonBody } from '../http/body.js';
import { metricsErrors } from '../metrics/errors.js';
import type { Store } from '../storage/gateway.js';
import { EVENT_TYPES } from './events.js';
import { boundedCreator, deleteSubscription, listSubscriptions, viewOf } from './subscriptions.js';
import { destinationProblem, type DestinationPolicy } from './url-policy.js';

/**
 * Webhook subscriptions in the metrics API (SPEC §9.1), for admins only, in the SPEC §8.2 order:
 * authentication (401), authorization (403), then the body (422 `Validation`).
 */

const MAX_BODY_BYTES = 64 * 1024;

const httpUrl = safeText({ error: 'url: must be a string' })
  .max(2048, { error: 'url: at most 2048 characters' })
  .refine(
    (text) => {
      try {
        const url = new URL(text);
        return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
      } catch {
        return false;
      }
    },
    { error: 'url: must be an http or https URL' },
  );

/** SPEC §9.1: the body of POST /webhooks. */
export const subscriptionBody = z.object(
  {
    url: httpUrl,
    secret: safeText({ error: 'secret: must be a string' }).max(1024, { error: 'secret: at most 1024 characters' }).nullish(),
    teams: z
      .array(safeText().refine(isUuid, { error: 'teams: each must be a team id (UUID)' }), { error: 'teams: must be an array of team ids' })
      .max(1000, { error: 'teams: at most 1000' })
      .nullish(),
    events: z.array(z.enum(EVENT_TYPES, { error: `events: each must be one of ${EVENT_TYPES.join(', ')}` })).nullish(),
  },
  { error: 'the body must be a JSON object' },
);

const validation = (message: string) => new ApiError(422, message, 'Validation');

async function readSubscription(ctx: Context) {
  let body: unknown;
  try {
    body = await readJsonBody(ctx, MAX_BODY_BYTES);
  } catch (err) {
    // Too large (413) and a wrong media type (415) stay what they are; unreadable JSON is invalid.
    if (err instanceof ApiError && err.status === 400) throw validation(err.message);
    throw err;
  }
  const parsed = subscriptionBody.safeParse(body);
  if (!parsed.success) throw validation(parsed.error.issues[0]?.message ?? 'Invalid body');
  const { url, secret, teams, events } = parsed.data;
  return { url, secret: secret ?? '', teams: [...new Set(teams ?? [])], events: [...new Set(events ?? [])] };
}

const adminOnly: Middleware = async (ctx, next) => {
  if (!callerOf(ctx).admin) throw metricsErrors.forbidden('Webhooks are for administrators only');
  await next();
};

export interface WebhookRouteDeps {
  store: Store;
  authenticate: Middleware;
  /** Where deliveries may go (SPEC §9.1, WEBHOOK_ALLOW_PRIVATE). */
  destinations: DestinationPolicy;
  /** MAX_WEBHOOKS. */
  maxSubscriptions: number;
}

export function webhookRoutes(deps: WebhookRouteDeps): Router {
  const router = new Router();
  const create = boundedCreator(deps.store, deps.maxSubscriptions);
  router.post('/webhooks', deps.authenticate, adminOnly, async (ctx) => {
    const input = await readSubscription(ctx);
    const refused = await destinationProblem(input.url, deps.destinations);
    if (refused !== undefined) throw validation(`url: ${refused}`);
    const created = await create(input);
    if (!created) throw validation('too many webhooks');
    ctx.status = 201;
    ctx.body = { webhook: viewOf(created) };
  });
  router.get('/webhooks', deps.authenticate, adminOnly, async (ctx) => {
    ctx.body = { webhooks: (await listSubscriptions(deps.store)).map(viewOf) };
  });
  router.delete('/webhooks/:id', deps.authenticate, adminOnly, async (ctx) => {
    const id = ctx.params.id!;
    // An id that is not a UUID names no subscription.
    if (!isUuid(id) || !(await deleteSubscription(deps.store, id))) throw metricsErrors.notFound();
    ctx.status = 204;
  });
  return router;
}
