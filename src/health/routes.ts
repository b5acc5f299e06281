import Router from '@koa/router';
import { dbErrors } from '../errors.js';
import type { Store } from '../storage/gateway.js';

/** GET /healthcheck (SPEC §6.9): OK while the store answers. */
export function healthRoutes(deps: { store: Store }): Router {
  const router = new Router();
  router.get('/healthcheck', async (ctx) => {
    if (!(await deps.store.ping())) throw dbErrors.unavailable();
    ctx.body = { status: 'OK' };
  });
  return router;
}
