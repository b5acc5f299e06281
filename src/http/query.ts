import type Koa from 'koa';

/**
 * The query string parser of both APIs (SPEC §5.6: a request costs at most linear time in its
 * size). Koa 3.3 parses `ctx.query` with URLSearchParams and then calls `getAll(key)` once per
 * key occurrence, which is quadratic in a repeated key. Here the same
 * URLSearchParams decoding (`+`, percent escapes, lenient about malformed ones) is walked once.
 *
 * The shape is Koa's: a key given once is a string, a repeated key an array of its values in
 * order (callers count a repeated parameter by its first value).
 *
 * Parsing stops after the first MAX_QUERY_PARAMS + 1 parameters: a query with more is refused by
 * both APIs whatever follows, so its cost is bounded by the limit, not by the URL. The metrics API
 * refuses it only at its query validation step (SPEC §8.2), so its authorization sees the teams
 * among those parameters: that only decides whether the request ends in 403 or 422.
 */

/** SPEC §5.6: more query parameters than this is an error (database API 400, metrics API 422). */
export const MAX_QUERY_PARAMS = 256;

export type Query = Record<string, string | string[]>;

/** How many parameters the query string held, counted up to MAX_QUERY_PARAMS + 1. */
const PARAM_COUNT = Symbol('query parameter count');

export function parseQueryString(querystring: string): Query {
  // The end of the last parameter parsed: empty pieces (`a=1&&b=2`) are no parameters.
  let count = 0;
  let cut = 0;
  for (let start = 0; start < querystring.length && count <= MAX_QUERY_PARAMS; ) {
    let end = querystring.indexOf('&', start);
    if (end < 0) end = querystring.length;
    if (end > start) {
      count++;
      cut = end;
    }
    start = end + 1;
  }
  const values = new Map<string, string | string[]>();
  for (const [key, value] of new URLSearchParams(querystring.slice(0, cut))) {
    const seen = values.get(key);
    if (seen === undefined) values.set(key, value);
    else if (typeof seen === 'string') values.set(key, [seen, value]);
    else seen.push(value);
  }
  const query: Query = {};
  // Defined rather than assigned, as Koa does: a key named `__proto__` stays an ordinary field.
  for (const [key, value] of values) Object.defineProperty(query, key, { value, writable: true, enumerable: true, configurable: true });
  Object.defineProperty(query, PARAM_COUNT, { value: count });
  return query;
}

/**
 * Whether a parsed query holds more than MAX_QUERY_PARAMS parameters. Queries that did not come
 * from parseQueryString (e.g. built by a test) are not counted.
 */
export function tooManyParams(query: object): boolean {
  const count = (query as { [PARAM_COUNT]?: number })[PARAM_COUNT];
  return count !== undefined && count > MAX_QUERY_PARAMS;
}

const CACHE = Symbol('parsed query');

/**
 * Makes `ctx.query` of every request of `app` use parseQueryString (Koa lets an app extend its
 * request prototype), parsed once per query string and request. Setting `ctx.query` keeps Koa's
 * behaviour.
 */
export function useLinearQuery(app: Koa): void {
  const koaQuery = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(app.request), 'query');
  Object.defineProperty(app.request, 'query', {
    configurable: true,
    enumerable: true,
    get(this: Koa.Request & { [CACHE]?: { from: string; query: Query } }) {
      const from = this.querystring;
      const cached = this[CACHE];
      if (cached?.from === from) return cached.query;
      const query = parseQueryString(from);
      this[CACHE] = { from, query };
      return query;
    },
    set(this: Koa.Request, value: unknown) {
      koaQuery?.set?.call(this, value);
    },
  });
}
