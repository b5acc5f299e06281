import Router from '@koa/router';
import { issuesInScope, scopeOf, targetsInScope, type CallerScope } from '../auth/scope.js';
import { findingId } from '../domain/ids.js';
import { isUuid } from '../domain/uuid.js';
import { dbErrors } from '../errors.js';
import { findingListQuery, pageQuery } from '../filters/params.js';
import { findingOfIssueOnTarget } from '../findings/queries.js';
import { answerFindingList, mttrResponse, oneFinding } from '../findings/routes.js';
import { mttrScope } from '../findings/queries.js';
import type { ApiContext } from '../http/context.js';
import { emptyPage } from '../storage/paged.js';
import { targetsOfIssue } from '../targets/queries.js';
import { issuePage, issuesByIds } from './queries.js';

/**
 * The finding for an issue and a target (SPEC §6.4/§6.5), optionally for one affected resource;
 * 404 outside the caller's scope.
 */
export async function issueTargetFinding(api: ApiContext, scope: CallerScope, issueId: string, targetIdValue: string, resource?: string) {
  if (!isUuid(issueId) || !isUuid(targetIdValue)) throw dbErrors.notFound();
  const id =
    resource !== undefined ? findingId(targetIdValue, issueId, resource) : await findingOfIssueOnTarget(api.store, issueId, targetIdValue);
  return oneFinding(api, scope, id);
}

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
    const page = pageQuery(ctx.query, api);
    const id = ctx.params.id!;
    if (!isUuid(id)) {
      ctx.body = { pagination: emptyPage(page), targets: [] };
      return;
    }
    const result = await targetsOfIssue(api.store, id, page, targetsInScope(scopeOf(ctx), 'id'));
    ctx.body = { pagination: result.pagination, targets: result.rows };
  });

  router.get('/issues/:id/targets/:target', async (ctx) => {
    ctx.body = await issueTargetFinding(api, scopeOf(ctx), ctx.params.id!, ctx.params.target!);
  });

  router.get('/issues/:id/targets/:target/resources/:resource', async (ctx) => {
    ctx.body = await issueTargetFinding(api, scopeOf(ctx), ctx.params.id!, ctx.params.target!, ctx.params.resource!);
  });

  router.get('/issues/:id/mttr', async (ctx) => {
    const id = ctx.params.id!;
    ctx.body = await mttrResponse(api, scopeOf(ctx), isUuid(id) ? mttrScope.base({ issueId: id }) : undefined);
  });

  return router;
}
