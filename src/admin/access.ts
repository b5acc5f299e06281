import { createHash, timingSafeEqual } from 'node:crypto';
import type { Middleware } from 'koa';

/**
 * Who may do what on the admin listener (SPEC §10.1), as two middlewares mounted before every
 * admin route, so that a route added later (a backup, say) is covered without doing anything:
 * - `requireAdminToken`: with ADMIN_TOKEN set, every route but the probes needs
 *   `Authorization: Bearer <ADMIN_TOKEN>`;
 * - `readOnlyQueueBoard`: without a token, the queue board only reads. bull-board's own
 *   `readOnlyMode` hides its buttons and refuses most actions, but it is one check inside a
 *   dependency: here only GET and HEAD of the board's known read routes pass, whatever bull-board
 *   does with the rest (its add, clean, pause, resume, retry, promote, empty, obliterate, update
 *   and rate-limit routes are all PUT, POST or PATCH; its GET routes only read — checked against
 *   @bull-board/api 9.10 dist/routes.js and dist/handlers).
 */

/** Probes answer without a token: orchestrators and health checks hold none. */
const OPEN_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz']);

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/** Compares digests, so that neither the content nor the length of the token leaks through timing. */
function sameToken(expected: Buffer, presented: string): boolean {
  return timingSafeEqual(expected, digest(presented));
}

export function requireAdminToken(token: string | undefined): Middleware {
  if (token === undefined) return (_ctx, next) => next();
  const expected = digest(token);
  return async (ctx, next) => {
    if (OPEN_PATHS.has(ctx.path)) return next();
    const match = /^Bearer +(\S+) *$/i.exec(ctx.get('Authorization'));
    if (match && sameToken(expected, match[1]!)) return next();
    ctx.status = 401;
    ctx.set('WWW-Authenticate', 'Bearer realm="vulndb admin"');
    ctx.body = { message: 'Unauthorized' };
  };
}

/** bull-board's read routes below its base path (UI pages, static assets, GET API routes). */
const BOARD_READS: RegExp[] = [
  /^\/?$/,
  /^\/(metrics-history|job-schedulers)$/,
  /^\/queue\/[^/]+(\/[^/]+)?$/,
  /^\/static\/[^?]*$/,
  /^\/api\/(redis\/stats|queues|job-schedulers)$/,
  /^\/api\/queues\/[^/]+\/(metrics|default-job-options|workers|rate-limit|job-data-schema)$/,
  /^\/api\/queues\/[^/]+\/[^/]+(\/(logs|flow))?$/,
];

/** Without a token, the queue board under `basePath` answers reads only; anything else is 403. */
export function readOnlyQueueBoard(basePath: string, token: string | undefined): Middleware {
  if (token !== undefined) return (_ctx, next) => next();
  return async (ctx, next) => {
    const { path } = ctx;
    if (path !== basePath && !path.startsWith(`${basePath}/`)) return next();
    const rest = path.slice(basePath.length);
    if ((ctx.method === 'GET' || ctx.method === 'HEAD') && BOARD_READS.some((r) => r.test(rest))) return next();
    ctx.status = 403;
    ctx.body = { message: 'Forbidden: the queue board is read-only without ADMIN_TOKEN' };
  };
}
