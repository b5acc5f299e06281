import type { Middleware } from 'koa';
import type { Config } from '../config.js';
import { dbErrors } from '../errors.js';
import type { TokenKeys } from './keys.js';
import { EVERYTHING, mayWrite, scopeOfCaller } from './scope.js';
import { authenticate, callerOf } from './tokens.js';

/**
 * Access to the database API (SPEC §5.1). Open by default; with DB_API_AUTH=jwt every route but the
 * open ones takes the metrics API's bearer tokens (the same verifier, src/auth/tokens.ts): a refused
 * token is 401 `{"message":"Unauthorized"}` with `WWW-Authenticate: Bearer`, a write (any method
 * but GET, HEAD and OPTIONS) without admin or the `ingest` scope is 403, and the caller's scope
 * (src/auth/scope.ts) goes on `ctx.state.scope` for the routes. Runs before routing, so an unknown
 * path is 401 too without a token.
 */

/**
 * Open without a token: the health check (SPEC §5.1) and the API's description (which holds no
 * data, and which the /docs page and its files under /docs/ fetch from a browser that has no token to send).
 */
const OPEN_PATHS: ReadonlySet<string> = new Set(['/healthcheck', '/openapi.json', '/docs']);
const isOpen = (path: string) => OPEN_PATHS.has(path) || path.startsWith('/docs/');
const READS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

/** `keys`: verify tokens with them (DB_API_AUTH=jwt); none: every request sees everything. */
export function dbApiAccess(keys: TokenKeys | undefined): Middleware {
  if (keys === undefined) {
    return async (ctx, next) => {
      ctx.state.scope = EVERYTHING;
      await next();
    };
  }
  const verify = authenticate(keys, () => dbErrors.unauthorized());
  return async (ctx, next) => {
    if (isOpen(ctx.path)) return next();
    await verify(ctx, async () => {
      const caller = callerOf(ctx);
      if (!READS.has(ctx.method) && !mayWrite(caller)) throw dbErrors.forbidden();
      ctx.state.scope = scopeOfCaller(caller);
      await next();
    });
  };
}

const LOOPBACK_NAMES: ReadonlySet<string> = new Set(['localhost', '::1', '[::1]', '::ffff:127.0.0.1']);
const isLoopback = (host: string) => LOOPBACK_NAMES.has(host.toLowerCase()) || /^127(\.\d{1,3}){3}$/.test(host);

/** The warning to log at start when the database API is open beyond loopback (SPEC §5.1), if any. */
export function openDbApiWarning(config: Pick<Config, 'host' | 'dbApiAuth'>): string | undefined {
  if (config.dbApiAuth !== undefined || isLoopback(config.host)) return undefined;
  return `the database API listens on ${config.host} without authentication: anyone who reaches it reads every finding and may ingest reports (set DB_API_AUTH=jwt, or HOST=127.0.0.1)`;
}
