import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Logger } from '../log.js';
import type { ServiceMetrics } from './metrics.js';

/**
 * The outermost middleware of both APIs: gives each request an id (the caller's `X-Request-Id`
 * when it is a short token, a new UUID otherwise), echoes it in the answer, hands the rest of the
 * request a logger that carries it (`ctx.state.log`), and records the request once it is answered:
 * the duration histogram by route pattern (of the process's `metrics`, when given) and the access log, one line per request at info (error
 * for 5xx) with the method, route pattern, path, status, duration in ms, request id and API (the
 * last two are fields of the request's logger).
 */

const CALLER_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function observeRequests(
  log: Logger,
  api: 'database' | 'metrics',
  metrics: Pick<ServiceMetrics, 'httpRequestDuration'> | undefined,
): Middleware {
  return async (ctx, next) => {
    const started = performance.now();
    const given = ctx.get('X-Request-Id');
    const requestId = CALLER_ID.test(given) ? given : randomUUID();
    ctx.set('X-Request-Id', requestId);
    ctx.state.requestId = requestId;
    ctx.state.log = log.child({ requestId });
    try {
      await next();
    } finally {
      const seconds = (performance.now() - started) / 1000;
      // The route's pattern (bounded label values), never the raw path.
      const matched = (ctx as { _matchedRoute?: string | RegExp })._matchedRoute;
      const route = typeof matched === 'string' ? matched : 'unmatched';
      metrics?.httpRequestDuration.observe({ api, route, method: ctx.method, status: String(ctx.status) }, seconds);
      const fields = {
        method: ctx.method,
        route,
        path: ctx.path.length > 200 ? `${ctx.path.slice(0, 200)}…` : ctx.path,
        status: ctx.status,
        ms: +(seconds * 1000).toFixed(1),
      };
      if (ctx.status >= 500) (ctx.state.log as Logger).error('request failed', fields);
      else (ctx.state.log as Logger).info('request', fields);
    }
  };
}
