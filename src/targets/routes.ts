import Router from '@koa/router';
import { dbErrors } from '../errors.js';
import { readJsonBody } from '../http/body.js';
import { describeIssues } from '../queue/contract.js';
import type { Store } from '../storage/gateway.js';
import { associateTeams } from './queries.js';
import { associateTeamsBody } from './schema.js';

export function targetRoutes(deps: { store: Store; maxBodyBytes: number; onTeamsChanged?: () => Promise<void> }): Router {
  const router = new Router();

  router.post('/targets', async (ctx) => {
    const parsed = associateTeamsBody.safeParse(await readJsonBody(ctx, deps.maxBodyBytes));
    if (!parsed.success) throw dbErrors.badBody(describeIssues(parsed.error));
    const { identifier, teams } = parsed.data;
    if (!identifier) throw dbErrors.unprocessable('identifier can not be void');
    if ((teams ?? []).some((t) => t === '')) throw dbErrors.unprocessable('team can not be void');
    const target = await associateTeams(deps.store, identifier, teams ?? []);
    await deps.onTeamsChanged?.();
    ctx.status = 201;
    ctx.body = { target };
  });

  return router;
}
