import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import { callerOf } from '../auth/tokens.js';
import { isUuid } from '../domain/uuid.js';
import { ApiError, metricsErrors } from '../errors.js';
import { readJsonBody } from '../http/body.js';
import { routePath } from '../http/endpoint.js';
import type { Store } from '../storage/gateway.js';
import { WEBHOOK_ENDPOINTS as E } from './endpoints.js';
import { subscriptionBody } from './schema.js';
import { boundedCreator, deleteSubscription, listSubscriptions, viewOf } from './subscriptions.js';
import { destinationProblem, type DestinationPolicy } from './url-policy.js';

/**
 * Webhook subscriptions in the metrics API (SPEC §9.1), for admins only, in the SPEC §8.2 order:
 * authentication (401), authorization (403), then the body (422 `Validation`).
 */

const MAX_BODY_BYTES = 64 * 1024;

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
  router.post(routePath(E.subscribe), deps.authenticate, adminOnly, async (ctx) => {
    const input = await readSubscription(ctx);
    const refused = await destinationProblem(input.url, deps.destinations);
    if (refused !== undefined) throw validation(`url: ${refused}`);
    const created = await create(input);
    if (!created) throw validation('too many webhooks');
    ctx.status = 201;
    ctx.body = { webhook: viewOf(created) };
  });
  router.get(routePath(E.list), deps.authenticate, adminOnly, async (ctx) => {
    ctx.body = { webhooks: (await listSubscriptions(deps.store)).map(viewOf) };
  });
  router.delete(routePath(E.remove), deps.authenticate, adminOnly, async (ctx) => {
    const id = ctx.params.id!;
    // An id that is not a UUID names no subscription.
    if (!isUuid(id) || !(await deleteSubscription(deps.store, id))) throw metricsErrors.notFound();
    ctx.status = 204;
  });
  return router;
}
