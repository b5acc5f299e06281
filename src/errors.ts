/**
 * The service's error type and the messages of both APIs. Each API chooses its body shape: the
 * database API answers `{"message"}` (SPEC §5.2), the metrics API `{"code", "error", "type"}`
 * (SPEC §8.2); src/http/error-middleware.ts renders them, and whatever else is thrown.
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
  importTooLarge: () => new ApiError(413, 'Import Too Large'),
  unsupportedMediaType: () => new ApiError(415, 'Unsupported Media Type'),
  unprocessable: (message: string) => new ApiError(422, message),
  queueUnavailable: () => new ApiError(503, 'Queue Unavailable'),
  unavailable: () => new ApiError(503, 'Unavailable'),
};

/** The metrics API's errors (SPEC §8.2), rendered as `{"code", "error", "type"}` (src/metrics/app.ts). */
export const metricsErrors = {
  unauthorized: (message: string) => new ApiError(401, message, 'Unauthorized', { 'WWW-Authenticate': 'Bearer' }),
  forbidden: (message: string) => new ApiError(403, message, 'Forbidden'),
  notFound: () => new ApiError(404, 'Record not found', 'Record not found'),
  methodNotAllowed: () => new ApiError(405, 'Method Not Allowed', 'Method Not Allowed'),
  malformedId: () => new ApiError(422, 'ID is malformed', 'Validation'),
  invalidQuery: () => new ApiError(422, 'Invalid query params', 'Validation'),
  unavailable: () => new ApiError(503, 'Unavailable', 'Unavailable'),
};

/** How an API renders an error as its response body. */
export type ErrorRenderer = (err: ApiError) => unknown;

/** SPEC §5.2: the database API's `{"message"}`. */
export const dbApiBody: ErrorRenderer = (err) => ({ message: err.message });
