import Router from '@koa/router';
import { answerFindingList, answerMttr, issueTargetFinding, targetsOfIssueList } from '../answers.js';
import { issuesInScope, scopeOf } from '../auth/scope.js';
import { isUuid } from '../domain/uuid.js';
import { dbErrors } from '../errors.js';
import { findingListQuery, paging, parseQuery } from '../filters/params.js';
import type { ApiContext } from '../http/context.js';
import { routePath } from '../http/endpoint.js';
import { ISSUE_ENDPOINTS as E } from './endpoints.js';
import { issuePage, issuesByIds } from './queries.js';

export function issueRoutes(api: ApiContext): Router {
  const router = new Router();

  router.get(routePath(E.list), async (ctx) => {
    const page = paging(parseQuery(E.list.params, ctx.query, api), api);
    const result = await issuePage(api.store, page, issuesInScope(scopeOf(ctx)));
    ctx.body = { pagination: result.pagination, issues: result.rows };
  });

  router.get(routePath(E.one), async (ctx) => {
    const id = ctx.params.issue_id!;
    const issue = isUuid(id) ? (await issuesByIds(api.store, [id], issuesInScope(scopeOf(ctx)))).get(id) : undefined;
    if (!issue) throw dbErrors.notFound();
    ctx.body = { issue };
  });

  router.get(routePath(E.findings), async (ctx) => {
    const { filters, page } = findingListQuery(ctx.query, api);
    const id = ctx.params.issue_id!;
    await answerFindingList(ctx, api, isUuid(id) ? { issueId: id } : undefined, filters, page);
  });

  router.get(routePath(E.targets), async (ctx) => {
    const page = paging(parseQuery(E.targets.params, ctx.query, api), api);
    ctx.body = await targetsOfIssueList(api, scopeOf(ctx), ctx.params.issue_id!, page);
  });

  router.get(routePath(E.finding), async (ctx) => {
    ctx.body = await issueTargetFinding(api, scopeOf(ctx), ctx.params.issue_id!, ctx.params.target_id!);
  });

  router.get(routePath(E.resourceFinding), async (ctx) => {
    ctx.body = await issueTargetFinding(api, scopeOf(ctx), ctx.params.issue_id!, ctx.params.target_id!, ctx.params.resource!);
  });

  router.get(routePath(E.mttr), async (ctx) => {
    const id = ctx.params.issue_id!;
    ctx.body = await answerMttr(api, scopeOf(ctx), isUuid(id) ? { base: { issueId: id } } : undefined);
  });

  return router;
}
