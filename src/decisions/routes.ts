import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import { isUuid } from '../domain/uuid.js';
import { ApiError } from '../errors.js';
import { readJsonBody } from '../http/body.js';
import { callerOf, type Caller } from '../metrics/auth.js';
import { metricsErrors } from '../metrics/errors.js';
import type { Store } from '../storage/gateway.js';
import { parseDecision } from './schema.js';
import { activeDecisionIds, type Decision, decisionTrail, findingOwner, makeDecision, revokeDecisions } from './store.js';

/**
 * Triage decisions through the metrics API (SPEC §12.3): make (PUT), revoke (DELETE) and the
 * audit trail (GET). Steps in the SPEC §8.2 order: authentication (route middleware), the finding
 * and the caller's right to it — an unknown or malformed id and a finding outside the caller's
 * teams are the same 404, so existence does not leak — then the body (422).
 */

export type DecisionAction = 'made' | 'revoked';

export interface DecisionRouteDeps {
  store: Store;
  /** Epoch milliseconds; tests fix it. */
  nowMs: () => number;
  authenticate: Middleware;
  /** After a decision is stored or revoked: refresh cached answers, notify. Awaited before answering. */
  onChange?: ((finding: { id: string; targetId: string }, decision: Decision, action: DecisionAction) => Promise<void>) | undefined;
}

const MAX_BODY_BYTES = 64 * 1024;

/** Decisions of one process are strictly ordered in time, also when the clock stands still (tests). */
function monotonic(nowMs: () => number): () => number {
  let last = 0;
  return () => (last = Math.max(Math.floor(nowMs()), last + 1));
}

async function findingOf(store: Store, ctx: Context, caller: Caller) {
  const id = ctx.params.finding_id!;
  if (!isUuid(id)) throw metricsErrors.notFound();
  const owner = await findingOwner(store, id.toLowerCase());
  if (!owner || !(caller.admin || owner.teams.some((t) => caller.teams.includes(t)))) throw metricsErrors.notFound();
  return { id: id.toLowerCase(), targetId: owner.targetId };
}

async function bodyOf(ctx: Context): Promise<unknown> {
  try {
    return await readJsonBody(ctx, MAX_BODY_BYTES);
  } catch (err) {
    // Not JSON (or none): a body that does not validate, as the metrics API reports it.
    if (err instanceof ApiError && err.status === 400) throw new ApiError(422, err.message, 'Validation');
    throw err;
  }
}

export function decisionRoutes(deps: DecisionRouteDeps): Router {
  const router = new Router();
  const clock = monotonic(deps.nowMs);
  const changed = deps.onChange ?? (async () => {});

  router.put('/findings/:finding_id/decision', deps.authenticate, async (ctx) => {
    const caller = callerOf(ctx);
    const finding = await findingOf(deps.store, ctx, caller);
    const body = await bodyOf(ctx);
    const at = clock();
    const parsed = parseDecision(body, Math.floor(at / 1000));
    if (!parsed.ok) throw new ApiError(422, parsed.message, 'Validation');
    const { decision, replaced } = await makeDecision(deps.store, finding, parsed.input, caller.sub, at);
    if (replaced.length > 0) {
      for (const old of (await decisionTrail(deps.store, finding.id)).filter((d) => replaced.includes(d.id))) {
        await changed(finding, old, 'revoked');
      }
    }
    await changed(finding, decision, 'made');
    ctx.body = { decision };
  });

  router.delete('/findings/:finding_id/decision', deps.authenticate, async (ctx) => {
    const caller = callerOf(ctx);
    const finding = await findingOf(deps.store, ctx, caller);
    const at = clock();
    const active = await activeDecisionIds(deps.store, finding.id, at);
    if (active.length === 0) throw metricsErrors.notFound();
    await revokeDecisions(deps.store, finding.id, active, caller.sub, at);
    const trail = await decisionTrail(deps.store, finding.id);
    for (const decision of trail.filter((d) => active.includes(d.id))) await changed(finding, decision, 'revoked');
    ctx.status = 204;
  });

  router.get('/findings/:finding_id/decisions', deps.authenticate, async (ctx) => {
    const finding = await findingOf(deps.store, ctx, callerOf(ctx));
    ctx.body = { decisions: await decisionTrail(deps.store, finding.id) };
  });

  return router;
}
