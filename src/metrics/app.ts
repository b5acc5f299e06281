import Router from '@koa/router';
import Koa from 'koa';
import { ApiError, errorMiddleware, type ErrorBody } from '../errors.js';
import { accessLog, ignoreTrailingSlash, mountRoutes } from '../http/middleware.js';
import type { Logger } from '../log.js';
import type { Store } from '../storage/gateway.js';

/** The security metrics API (SPEC §8) under /api/v1. */

const typeOf: Record<number, string> = {
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Record not found',
  405: 'Method Not Allowed',
  422: 'Validation',
  500: 'Internal',
  503: 'Unavailable',
};

/** SPEC §8.2 body: `{"code", "error", "type"}`. */
export const metricsBody: ErrorBody = (err) => ({
  code: err.status,
  error: err.message,
  type: err.type ?? typeOf[err.status] ?? 'Error',
});

export const metricsErrors = {
  notFound: () => new ApiError(404, 'Record not found', 'Record not found'),
  methodNotAllowed: () => new ApiError(405, 'Method Not Allowed', 'Method Not Allowed'),
};

export interface MetricsApiDeps {
  store: Store;
  log: Logger;
}

export function createMetricsApi(deps: MetricsApiDeps): Koa {
  const app = new Koa();
  app.use(errorMiddleware(metricsBody, deps.log));
  app.use(accessLog(deps.log));
  app.use(ignoreTrailingSlash);
  const health = new Router();
  health.get('/healthcheck', async (ctx) => {
    if (!(await deps.store.ping())) throw new ApiError(503, 'Unavailable', 'Unavailable');
    ctx.body = { status: 'OK' };
  });
  mountRoutes(app, [health], metricsErrors, '/api/v1');
  return app;
}
