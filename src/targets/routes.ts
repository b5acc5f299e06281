import Router from '@koa/router';
import { canSee, scopeOf, withinScope } from '../auth/scope.js';
import { isUuid } from '../domain/uuid.js';
import { dbErrors } from '../errors.js';
import { paging, queryParser, toFilters } from '../filters/params.js';
import { readJsonBody } from '../http/body.js';
import type { ApiContext } from '../api-context.js';
import { routePath } from '../http/endpoint.js';
import { describeIssues } from '../queue/contract.js';
import { LockTimeout, type Locks } from '../locks/target-locks.js';
import type { Logger } from '../log.js';
import { associateTeams, TooManyTeams } from '../teams/associations.js';
import { targetPage, targetsByIds } from './queries.js';
import type { TotalsRewriter } from '../ingest/totals.js';
import { TARGET_ENDPOINTS as E } from './endpoints.js';
import { associateTeamsBody, associationProblem } from './schema.js';

export function targetRoutes(
  api: ApiContext & { maxBodyBytes: number; locks: Locks; log: Logger; totals: TotalsRewriter; onTeamsChanged?: () => Promise<void> },
): Router {
  const router = new Router();
  const listQuery = queryParser(E.list.params, api);

  router.get(routePath(E.list), async (ctx) => {
    const q = listQuery(ctx.query);
    const result = await targetPage(api.store, withinScope(scopeOf(ctx), toFilters(q)), paging(q, api));
    ctx.body = { pagination: result.pagination, targets: result.rows };
  });

  router.get(routePath(E.one), async (ctx) => {
    const id = ctx.params.target_id!;
    const target = isUuid(id) ? (await targetsByIds(api.store, [id])).get(id) : undefined;
    if (!target || !canSee(scopeOf(ctx), target.teams)) throw dbErrors.notFound();
    ctx.body = { target };
  });

  router.post(routePath(E.associate), async (ctx) => {
    const parsed = associateTeamsBody.safeParse(await readJsonBody(ctx, api.maxBodyBytes));
    if (!parsed.success) throw dbErrors.badBody(describeIssues(parsed.error));
    const { identifier, teams } = parsed.data;
    const problem = associationProblem(identifier, teams ?? []);
    if (problem || !identifier) throw dbErrors.unprocessable(problem ?? 'identifier can not be void');
    const target = await associateTeams(api.store, api.locks, identifier, teams ?? [], api.log).catch((err: unknown) => {
      // Ingest held the target for longer than a POST should wait: the client may retry.
      if (err instanceof LockTimeout) throw dbErrors.unavailable();
      throw err instanceof TooManyTeams ? dbErrors.unprocessable('too many teams') : err;
    });
    // A team's lists gained the target's findings: their totals first, then the cache's version.
    await api.totals.request();
    await api.onTeamsChanged?.();
    ctx.status = 201;
    ctx.body = { target };
  });

  return router;
}
