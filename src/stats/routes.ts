import Router from '@koa/router';
import type { Store } from '../storage/gateway.js';
import { storeSize } from './size.js';

export function statsRoutes(deps: { store: Store }): Router {
  const router = new Router();
  router.get('/stats/size', async (ctx) => {
    ctx.body = { size: await storeSize(deps.store) };
  });
  return router;
}
