import Router from '@koa/router';
import type { Context } from 'koa';
import { scopeOf, targetsInScope } from '../auth/scope.js';
import { isUuid } from '../domain/uuid.js';
import { findingListParser, paging, queryParser } from '../filters/params.js';
import type { ApiContext } from '../api-context.js';
import { routePath } from '../http/endpoint.js';
import { sourceById } from '../sources/queries.js';
import { answerFindingList, answerMttr, issuesOfTargetList, issueTargetFinding, targetsOfIssueList } from './answers.js';
import { ISSUE_FINDING_ENDPOINTS as I, SOURCE_FINDING_ENDPOINTS as S, TARGET_FINDING_ENDPOINTS as T } from './endpoints.js';

/**
 * The findings under a source, an issue or a target (SPEC §6.3–§6.5, §6.8): lists, the finding of
 * an issue on a target, MTTR, and the targets of an issue and the issues of a target (those with a
 * finding). An unknown or malformed parent answers like one without findings, or 404 for one resource.
 */
export function parentFindingRoutes(api: ApiContext): Router {
  const router = new Router();
  const listQuery = findingListParser(api);
  const targetsQuery = queryParser(I.targets.params, api);
  const issuesQuery = queryParser(T.issues.params, api);
  sourceFindings(router, api, listQuery);

  router.get(routePath(I.findings), async (ctx) => {
    const { filters, page } = listQuery(ctx.query);
    const id = ctx.params.issue_id!;
    await answerFindingList(ctx, api, isUuid(id) ? { issueId: id } : undefined, filters, page);
  });
  router.get(routePath(I.targets), async (ctx) => {
    const page = paging(targetsQuery(ctx.query), api);
    ctx.body = await targetsOfIssueList(api, scopeOf(ctx), ctx.params.issue_id!, page);
  });
  router.get(routePath(T.findings), async (ctx) => {
    const { filters, page } = listQuery(ctx.query);
    const id = ctx.params.target_id!;
    await answerFindingList(ctx, api, isUuid(id) ? { targetId: id } : undefined, filters, page);
  });
  router.get(routePath(T.issues), async (ctx) => {
    const page = paging(issuesQuery(ctx.query), api);
    ctx.body = await issuesOfTargetList(api, scopeOf(ctx), ctx.params.target_id!, page);
  });

  // The finding of an issue on a target, reached from either side.
  for (const endpoint of [I.finding, I.resourceFinding, T.finding, T.resourceFinding]) {
    router.get(routePath(endpoint), async (ctx) => {
      const { issue_id, target_id, resource } = ctx.params;
      ctx.body = await issueTargetFinding(api, scopeOf(ctx), issue_id!, target_id!, resource);
    });
  }

  router.get(routePath(I.mttr), async (ctx) => {
    const id = ctx.params.issue_id!;
    ctx.body = await answerMttr(api, scopeOf(ctx), isUuid(id) ? { base: { issueId: id } } : undefined);
  });
  router.get(routePath(T.mttr), async (ctx) => {
    const id = ctx.params.target_id!;
    ctx.body = await answerMttr(api, scopeOf(ctx), isUuid(id) ? { base: { targetId: id } } : undefined);
  });
  return router;
}

function sourceFindings(router: Router, api: ApiContext, listQuery: ReturnType<typeof findingListParser>): void {
  // A source of a target outside the caller's scope is unknown to it.
  const lookup = async (ctx: Context, id: string) => (isUuid(id) ? sourceById(api.store, id, targetsInScope(scopeOf(ctx))) : undefined);

  router.get(routePath(S.findings), async (ctx) => {
    const { filters, page } = listQuery(ctx.query);
    const source = await lookup(ctx, ctx.params.source_id!);
    await answerFindingList(ctx, api, source && { sourceId: source.id, targetId: source.target_id }, filters, page);
  });
  // The MTTR of the source's whole family (name, component, options) on every target (SPEC §6.3)
  // in the caller's scope.
  router.get(routePath(S.mttr), async (ctx) => {
    const source = await lookup(ctx, ctx.params.source_id!);
    ctx.body = await answerMttr(api, scopeOf(ctx), source && { familyId: source.familyId });
  });
}
