import Router from '@koa/router';
import type { ApiError } from '../errors.js';
import { type Endpoint, routePath } from '../http/endpoint.js';
import type { Store } from '../storage/gateway.js';

/** GET /healthcheck (SPEC §6.9; HEALTH_ENDPOINTS): OK while the store answers, `unavailable()` otherwise. */
export function healthRoutes(deps: { store: Store; endpoint: Endpoint; unavailable: () => ApiError }): Router {
  const router = new Router();
  router.get(routePath(deps.endpoint), async (ctx) => {
    if (!(await deps.store.ping())) throw deps.unavailable();
    ctx.body = { status: 'OK' };
  });
  return router;
}
