import type { Middleware } from 'koa';
import { ApiError, dbErrors, type ErrorRenderer } from '../errors.js';
import type { Logger } from '../log.js';
import { QueryTimeout, StoreError } from '../storage/store-errors.js';
import { PageNotFound } from '../storage/paged.js';

/**
 * The one middleware that turns what a request threw into its response: an ApiError as it is, the
 * store's own failures as their API errors, anything unexpected as a plain 500 without internals
 * (and logged). `render` is the API's body shape.
 */

const INTERNAL = 'Internal Server Error';

function asApiError(err: unknown, log: Logger, ctx: { method: string; path: string }): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof PageNotFound) return dbErrors.pageNotFound();
  if (err instanceof QueryTimeout) {
    // SPEC §5.6: a statement past QUERY_TIMEOUT_MS was cancelled (metrics API type `Unavailable`).
    log.warn('statement time limit reached', { err: err.message, method: ctx.method, path: ctx.path });
    return new ApiError(503, 'Query Timeout', 'Unavailable');
  }
  // Store failures and bugs alike: log the detail, answer without it.
  log.error(err instanceof StoreError ? 'store failure' : 'unexpected failure', { err, method: ctx.method, path: ctx.path });
  return new ApiError(500, INTERNAL, 'Internal');
}

export function errorMiddleware(render: ErrorRenderer, baseLog: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      // The request's own logger (with its request id) when observeRequests gave it one.
      const log = (ctx.state.log as Logger | undefined) ?? baseLog;
      const apiError = asApiError(err, log, ctx);
      ctx.status = apiError.status;
      ctx.set(apiError.headers);
      ctx.body = render(apiError);
    }
  };
}
