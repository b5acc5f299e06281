import Router from '@koa/router';
import { answerFindingList, answerMttr, issueTargetFinding, targetsOfIssueList } from '../answers.js';
import { issuesInScope, scopeOf } from '../auth/scope.js';
import { isUuid } from '../domain/uuid.js';
import { dbErrors } from '../errors.js';
import { findingListQuery, pageQuery } from '../filters/params.js';
import type { ApiContext } from '../http/context.js';
import { issuePage, issuesByIds } from './queries.js';

export function issueRoutes(api: ApiContext): Router {
  const router = new Router();

  router.get('/issues', async (ctx) => {
    const result = await issuePage(api.store, pageQuery(ctx.query, api), issuesInScope(scopeOf(ctx)));
    ctx.body = { pagination: result.pagination, issues: result.rows };
  });

  router.get('/issues/:id', async (ctx) => {
    const id = ctx.params.id!;
    const issue = isUuid(id) ? (await issuesByIds(api.store, [id], issuesInScope(scopeOf(ctx)))).get(id) : undefined;
    if (!issue) throw dbErrors.notFound();
    ctx.body = { issue };
  });

  router.get('/issues/:id/findings', async (ctx) => {
    const { filters, page } = findingListQuery(ctx.query, api);
    const id = ctx.params.id!;
    await answerFindingList(ctx, api, isUuid(id) ? { issueId: id } : undefined, filters, page);
  });

  router.get('/issues/:id/targets', async (ctx) => {
    ctx.body = await targetsOfIssueList(api, scopeOf(ctx), ctx.params.id!, pageQuery(ctx.query, api));
  });

  router.get('/issues/:id/targets/:target', async (ctx) => {
    ctx.body = await issueTargetFinding(api, scopeOf(ctx), ctx.params.id!, ctx.params.target!);
  });

  router.get('/issues/:id/targets/:target/resources/:resource', async (ctx) => {
    ctx.body = await issueTargetFinding(api, scopeOf(ctx), ctx.params.id!, ctx.params.target!, ctx.params.resource!);
  });

  router.get('/issues/:id/mttr', async (ctx) => {
    const id = ctx.params.id!;
    ctx.body = await answerMttr(api, scopeOf(ctx), isUuid(id) ? { base: { issueId: id } } : undefined);
  });

  return router;
}
