import Router from '@koa/router';
import type Koa from 'koa';
import type { Middleware } from 'koa';
import { ApiError } from '../errors.js';
import { tooManyParams } from './query.js';

/**
 * A trailing slash is ignored (`/findings/` ≡ `/findings`, SPEC §5.1). The slashes are counted
 * backwards by char code: `/\/+$/` retries from every slash of a run and is quadratic in V8, and
 * a request may cost at most linear time in its size (SPEC §5.6).
 */
export const ignoreTrailingSlash: Middleware = async (ctx, next) => {
  const path = ctx.path;
  const end = withoutTrailingSlashes(path);
  if (end < path.length) ctx.path = path.slice(0, end);
  await next();
};

/** The length of `path` without its trailing slashes, keeping a lone leading `/`. */
export function withoutTrailingSlashes(path: string): number {
  let end = path.length;
  while (end > 1 && path.charCodeAt(end - 1) === 0x2f /* / */) end--;
  return end;
}

/**
 * SPEC §5.6: more than MAX_QUERY_PARAMS query parameters is refused with `error()`, before
 * anything else reads the request (see src/http/query.ts, which counts them while parsing).
 */
export function limitQueryParams(error: () => Error): Middleware {
  return async (ctx, next) => {
    if (tooManyParams(ctx.query)) throw error();
    await next();
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
  // koa-router answers a method that no route implements (TRACE, PROPFIND…) as not implemented on
  // any path: only a path some route has goes on to it ("known path, other method", 405), others stay 404.
  const allowedMethods = root.allowedMethods({
    throw: true,
    methodNotAllowed: errors.methodNotAllowed,
    notImplemented: errors.methodNotAllowed,
  });
  app.use(async (ctx, next) => {
    const routes = root.match(ctx.path, ctx.method).path.filter((layer) => layer.methods.length > 0);
    if (routes.length === 0) return;
    try {
      await allowedMethods(ctx as Parameters<typeof allowedMethods>[0], next);
    } catch (err) {
      // RFC 9110 §15.5.6: a 405 lists the path's methods in Allow, as koa-router's own 405 and
      // OPTIONS answers do (the thrown error skips its header; the error middleware sets ours).
      if (!(err instanceof ApiError) || err.status !== 405) throw err;
      const allow = [...new Set(routes.flatMap((layer) => layer.methods))].join(', ');
      throw new ApiError(err.status, err.message, err.type, { ...err.headers, Allow: allow });
    }
  });
}
