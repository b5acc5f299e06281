import Router from '@koa/router';
import type Koa from 'koa';
import type { Middleware } from 'koa';
import { ApiError } from '../errors.js';
import type { Logger } from '../log.js';

/** A trailing slash is ignored (`/findings/` ≡ `/findings`, SPEC §5.1). */
export const ignoreTrailingSlash: Middleware = async (ctx, next) => {
  if (ctx.path.length > 1 && ctx.path.endsWith('/')) ctx.path = ctx.path.replace(/\/+$/, '') || '/';
  await next();
};

export function accessLog(log: Logger): Middleware {
  return async (ctx, next) => {
    const started = performance.now();
    await next();
    const fields = { method: ctx.method, path: ctx.path, status: ctx.status, ms: +(performance.now() - started).toFixed(1) };
    if (ctx.status >= 500) log.error('request failed', fields);
    else log.debug('request', fields);
  };
}

/**
 * Mounts the routers under one root so that "known path, other method" (405) is decided across
 * every resource, and anything unrouted is a 404 with the API's own error body.
 */
export function mountRoutes(
  app: Koa,
  routers: Router[],
  errors: { notFound: () => ApiError; methodNotAllowed: () => ApiError },
  prefix?: string,
): void {
  const root = new Router(prefix ? { prefix } : {});
  for (const r of routers) root.use(r.routes());
  // Decided after the routers ran: allowedMethods inspects the response on its way back.
  app.use(async (ctx, next) => {
    await next();
    if (ctx.status === 404 && ctx.body === undefined) throw errors.notFound();
  });
  app.use(root.routes());
  app.use(root.allowedMethods({ throw: true, methodNotAllowed: errors.methodNotAllowed, notImplemented: errors.methodNotAllowed }));
}
