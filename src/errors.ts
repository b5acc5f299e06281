import type { Middleware } from 'koa';
import type { Logger } from './log.js';
import { QueryTimeout, StoreError } from './storage/gateway.js';

/**
 * The service's error types and the one middleware that renders them. Each API chooses its body
 * shape: the database API answers `{"message"}` (SPEC §5.2), the metrics API
 * `{"code", "error", "type"}` (SPEC §8.2). Anything unexpected becomes a plain 500 without
 * internals (and is logged).
 */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** Metrics API error kind (SPEC §8.2); derived from the status when absent. */
    readonly type?: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** SPEC §5.2 messages of the database API, in one place. */
export const dbErrors = {
  malformedDate: () => new ApiError(400, 'Malformed Date'),
  malformedPage: () => new ApiError(400, 'Malformed Page Number'),
  malformedSize: () => new ApiError(400, 'Malformed Size Number'),
  sizeTooLarge: () => new ApiError(400, 'Size Number Too Large'),
  malformedScore: () => new ApiError(400, 'Malformed Score'),
  malformedBoolean: () => new ApiError(400, 'Malformed Boolean'),
  invalidStatus: () => new ApiError(400, 'Invalid Status'),
  invalidCombination: () => new ApiError(400, 'Filter parameters combination is invalid'),
  badBody: (reason: string) => new ApiError(400, reason),
  tooManyParams: () => new ApiError(400, 'Too Many Parameters'),
  unauthorized: () => new ApiError(401, 'Unauthorized', undefined, { 'WWW-Authenticate': 'Bearer' }),
  forbidden: () => new ApiError(403, 'Forbidden'),
  notFound: () => new ApiError(404, 'Not Found'),
  pageNotFound: () => new ApiError(404, 'Page Not Found'),
  methodNotAllowed: () => new ApiError(405, 'Method Not Allowed'),
  tooLarge: () => new ApiError(413, 'Request Entity Too Large'),
  unsupportedMediaType: () => new ApiError(415, 'Unsupported Media Type'),
  unprocessable: (message: string) => new ApiError(422, message),
  queueUnavailable: () => new ApiError(503, 'Queue Unavailable'),
  unavailable: () => new ApiError(503, 'Unavailable'),
};

export type ErrorBody = (err: ApiError) => unknown;

export const dbApiBody: ErrorBody = (err) => ({ message: err.message });

const INTERNAL = 'Internal Server Error';

export function errorMiddleware(render: ErrorBody, baseLog: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      // The request's own logger (with its request id) when observeRequests gave it one.
      const log = (ctx.state.log as Logger | undefined) ?? baseLog;
      let apiError: ApiError;
      if (err instanceof ApiError) {
        apiError = err;
      } else if (err instanceof QueryTimeout) {
        // SPEC §5.6: a statement past QUERY_TIMEOUT_MS was cancelled (metrics API type `Unavailable`).
        log.warn('statement time limit reached', { err: err.message, method: ctx.method, path: ctx.path });
        apiError = new ApiError(503, 'Query Timeout', 'Unavailable');
      } else {
        // Store failures and bugs alike: log the detail, answer without it.
        log.error(err instanceof StoreError ? 'store failure' : 'unexpected failure', {
          err,
          method: ctx.method,
          path: ctx.path,
        });
        apiError = new ApiError(500, INTERNAL, 'Internal');
      }
      ctx.status = apiError.status;
      ctx.set(apiError.headers);
      ctx.body = render(apiError);
    }
  };
}
