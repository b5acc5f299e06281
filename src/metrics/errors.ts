import { ApiError } from '../errors.js';

/** The metrics API's errors (SPEC §8.2), rendered as `{"code", "error", "type"}` by app.ts. */
export const metricsErrors = {
  unauthorized: (message: string) => new ApiError(401, message, 'Unauthorized', { 'WWW-Authenticate': 'Bearer' }),
  forbidden: (message: string) => new ApiError(403, message, 'Forbidden'),
  notFound: () => new ApiError(404, 'Record not found', 'Record not found'),
  methodNotAllowed: () => new ApiError(405, 'Method Not Allowed', 'Method Not Allowed'),
  malformedId: () => new ApiError(422, 'ID is malformed', 'Validation'),
  invalidQuery: () => new ApiError(422, 'Invalid query params', 'Validation'),
};
