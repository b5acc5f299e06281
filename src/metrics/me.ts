import Router from '@koa/router';
import type { Middleware } from 'koa';
import { z } from 'zod';
import { type Endpoint, routePath } from '../http/endpoint.js';
import { callerOf } from './auth.js';

/**
 * GET /api/v1/me: the caller as the service reads its token (claim names mapped, SPEC §8.1), so
 * that a page scopes what it shows exactly as the APIs do, without decoding tokens itself.
 */

export const meResponse = z
  .object({
    caller: z
      .object({
        sub: z.string().describe('The token subject'),
        teams: z.array(z.string()).describe('Teams whose findings the caller may see and decide on'),
        admin: z.boolean().describe('Sees and decides on everything'),
      })
      .strict(),
  })
  .strict()
  .describe('The authenticated caller');

export const ME_ENDPOINT = {
  method: 'get',
  path: '/me',
  tag: 'metrics: caller',
  summary: 'The authenticated caller: subject, teams and whether an admin',
  response: meResponse,
  errors: [401],
} satisfies Endpoint;

export function meRoutes(authenticate: Middleware): Router {
  const router = new Router();
  router.get(routePath(ME_ENDPOINT), authenticate, (ctx) => {
    const { sub, teams, admin } = callerOf(ctx);
    ctx.body = { caller: { sub, teams, admin } } satisfies z.infer<typeof meResponse>;
  });
  return router;
}
