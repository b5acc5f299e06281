import Router from '@koa/router';
import type { Context } from 'koa';
import { scopeOf, targetsInScope } from '../auth/scope.js';
import { isUuid } from '../domain/uuid.js';
import { dbErrors } from '../errors.js';
import { paging, queryParser } from '../filters/params.js';
import type { ApiContext } from '../api-context.js';
import { routePath } from '../http/endpoint.js';
import { SOURCE_ENDPOINTS as E } from './endpoints.js';
import { sourceById, sourcePage } from './queries.js';

export function sourceRoutes(api: ApiContext): Router {
  const router = new Router();
  const listQuery = queryParser(E.list.params, api);
  // A source of a target outside the caller's scope is unknown to it.
  const lookup = async (ctx: Context, id: string) => (isUuid(id) ? sourceById(api.store, id, targetsInScope(scopeOf(ctx))) : undefined);

  router.get(routePath(E.list), async (ctx) => {
    const page = paging(listQuery(ctx.query), api);
    const result = await sourcePage(api.store, page, targetsInScope(scopeOf(ctx)));
    ctx.body = { pagination: result.pagination, sources: result.rows };
  });

  router.get(routePath(E.one), async (ctx) => {
    const found = await lookup(ctx, ctx.params.source_id!);
    if (!found) throw dbErrors.notFound();
    const { familyId: _family, ...source } = found;
    ctx.body = { source };
  });

  return router;
}
