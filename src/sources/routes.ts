import Router from '@koa/router';
import type { Context } from 'koa';
import { answerFindingList, answerMttr } from '../answers.js';
import { scopeOf, targetsInScope } from '../auth/scope.js';
import { isUuid } from '../domain/uuid.js';
import { dbErrors } from '../errors.js';
import { findingListQuery, paging, parseQuery } from '../filters/params.js';
import type { ApiContext } from '../http/context.js';
import { routePath } from '../http/endpoint.js';
import { SOURCE_ENDPOINTS as E } from './endpoints.js';
import { sourceById, sourcePage } from './queries.js';

export function sourceRoutes(api: ApiContext): Router {
  const router = new Router();
  // A source of a target outside the caller's scope is unknown to it.
  const lookup = async (ctx: Context, id: string) => (isUuid(id) ? sourceById(api.store, id, targetsInScope(scopeOf(ctx))) : undefined);

  router.get(routePath(E.list), async (ctx) => {
    const page = paging(parseQuery(E.list.params, ctx.query, api), api);
    const result = await sourcePage(api.store, page, targetsInScope(scopeOf(ctx)));
    ctx.body = { pagination: result.pagination, sources: result.rows };
  });

  router.get(routePath(E.one), async (ctx) => {
    const found = await lookup(ctx, ctx.params.source_id!);
    if (!found) throw dbErrors.notFound();
    const { familyId: _family, ...source } = found;
    ctx.body = { source };
  });

  router.get(routePath(E.findings), async (ctx) => {
    const { filters, page } = findingListQuery(ctx.query, api);
    const source = await lookup(ctx, ctx.params.source_id!);
    await answerFindingList(ctx, api, source && { sourceId: source.id, targetId: source.target_id }, filters, page);
  });

  // The MTTR of the source's whole family (name, component, options) on every target (SPEC §6.3)
  // in the caller's scope.
  router.get(routePath(E.mttr), async (ctx) => {
    const source = await lookup(ctx, ctx.params.source_id!);
    ctx.body = await answerMttr(api, scopeOf(ctx), source && { familyId: source.familyId });
  });

  return router;
}
