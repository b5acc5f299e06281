import Router from '@koa/router';
import { issuesInScope, scopeOf } from '../auth/scope.js';
import { isUuid } from '../domain/uuid.js';
import { dbErrors } from '../errors.js';
import { paging, queryParser } from '../filters/params.js';
import type { ApiContext } from '../api-context.js';
import { routePath } from '../http/endpoint.js';
import { ISSUE_ENDPOINTS as E } from './endpoints.js';
import { issuePage, issuesByIds } from './queries.js';

export function issueRoutes(api: ApiContext): Router {
  const router = new Router();
  const listQuery = queryParser(E.list.params, api);

  router.get(routePath(E.list), async (ctx) => {
    const page = paging(listQuery(ctx.query), api);
    const result = await issuePage(api.store, page, issuesInScope(scopeOf(ctx)));
    ctx.body = { pagination: result.pagination, issues: result.rows };
  });

  router.get(routePath(E.one), async (ctx) => {
    const id = ctx.params.issue_id!;
    const issue = isUuid(id) ? (await issuesByIds(api.store, [id], issuesInScope(scopeOf(ctx)))).get(id) : undefined;
    if (!issue) throw dbErrors.notFound();
    ctx.body = { issue };
  });

  return router;
}
