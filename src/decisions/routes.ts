import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import { isUuid } from '../domain/uuid.js';
import { acquireAll, LockTimeout, ProcessLocks, type Locks } from '../locks/target-locks.js';
import { ApiError, metricsErrors } from '../errors.js';
import { callerOf, type Caller } from '../auth/tokens.js';
import { readJsonBody } from '../http/body.js';
import { routePath } from '../http/endpoint.js';
import type { Store } from '../storage/gateway.js';
import { DECISION_ENDPOINTS as E } from './endpoints.js';
import { parseDecision } from './schema.js';
import { activeDecisionIds, type Decision, decisionTrail, findingOwner, makeDecision, revokeDecisions, writeInstant } from './store.js';

/**
 * Triage decisions through the metrics API (SPEC §12.3): make (PUT), revoke (DELETE) and the
 * audit trail (GET). Steps in the SPEC §8.2 order: authentication (route middleware), the finding
 * and the caller's right to it — an unknown or malformed id and a finding outside the caller's
 * teams are the same 404, so existence does not leak — then the body (422). Writes hold the
 * finding's lock (SPEC §12.3 "serialized"): each reads the decisions it replaces or revokes after
 * the previous write on the finding was stored.
 */

export type DecisionAction = 'made' | 'revoked';

export interface DecisionRouteDeps {
  store: Store;
  /** Epoch milliseconds; tests fix it. */
  nowMs: () => number;
  authenticate: Middleware;
  /** Per-finding locks shared by every API process (findingLocks); none: this process's own. */
  locks?: Locks | undefined;
  /** After a decision is stored or revoked: refresh cached answers, notify. Awaited before answering. */
  onChange?: ((finding: { id: string; targetId: string }, decision: Decision, action: DecisionAction) => Promise<void>) | undefined;
}

const MAX_BODY_BYTES = 64 * 1024;
/**
 * A write waits this long for the finding's lock, then 503. Each write holds it for a few
 * statements; the bound is that of one statement (QUERY_TIMEOUT_MS' default), so that dozens of
 * writes queued on one finding of a loaded store are all served.
 */
const LOCK_WAIT_MS = 30_000;
/** Looked up for a malformed id, so that it costs what an unknown one does. */
const NIL_UUID = '00000000-0000-0000-0000-000000000000';

/** Decisions of one process are strictly ordered in time, also when the clock stands still (tests). */
function monotonic(nowMs: () => number): () => number {
  let last = 0;
  return () => (last = Math.max(Math.floor(nowMs()), last + 1));
}

async function findingOf(store: Store, ctx: Context, caller: Caller) {
  const given = ctx.params.finding_id!;
  const id = isUuid(given) ? given.toLowerCase() : NIL_UUID;
  // The same statement for every id; whether the finding exists is decided only afterwards.
  const owner = await findingOwner(store, id);
  if (id === NIL_UUID || !owner || !(caller.admin || owner.teams.some((t) => caller.teams.includes(t)))) throw metricsErrors.notFound();
  return { id, targetId: owner.targetId };
}

/** Runs `write` holding the finding's lock; a lock held elsewhere past LOCK_WAIT_MS is a 503 the client may retry. */
async function serialized<T>(locks: Locks, findingId: string, write: () => Promise<T>): Promise<T> {
  const held = await acquireAll(locks, [findingId], LOCK_WAIT_MS).catch((err: unknown) => {
    throw err instanceof LockTimeout ? metricsErrors.unavailable() : err;
  });
  try {
    return await write();
  } finally {
    // The write is done (or failed) either way; a lock that cannot be released lapses at its TTL.
    await held.release().catch(() => {});
  }
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
  const locks = deps.locks ?? new ProcessLocks();

  router.put(routePath(E.make), deps.authenticate, async (ctx) => {
    const caller = callerOf(ctx);
    const finding = await findingOf(deps.store, ctx, caller);
    const body = await bodyOf(ctx);
    const parsed = parseDecision(body, Math.floor(clock() / 1000));
    if (!parsed.ok) throw new ApiError(422, parsed.message, 'Validation');
    const { decision, replaced } = await serialized(locks, finding.id, async () =>
      makeDecision(deps.store, finding, parsed.input, caller.sub, await writeInstant(deps.store, finding.id, clock())),
    );
    if (replaced.length > 0) {
      for (const old of (await decisionTrail(deps.store, finding.id)).filter((d) => replaced.includes(d.id))) {
        await changed(finding, old, 'revoked');
      }
    }
    await changed(finding, decision, 'made');
    ctx.body = { decision };
  });

  router.delete(routePath(E.revoke), deps.authenticate, async (ctx) => {
    const caller = callerOf(ctx);
    const finding = await findingOf(deps.store, ctx, caller);
    const revoked = await serialized(locks, finding.id, async () => {
      const at = await writeInstant(deps.store, finding.id, clock());
      const active = await activeDecisionIds(deps.store, finding.id, at);
      await revokeDecisions(deps.store, finding.id, active, caller.sub, at);
      return active;
    });
    if (revoked.length === 0) throw metricsErrors.notFound();
    const trail = await decisionTrail(deps.store, finding.id);
    for (const decision of trail.filter((d) => revoked.includes(d.id))) await changed(finding, decision, 'revoked');
    ctx.status = 204;
  });

  router.get(routePath(E.trail), deps.authenticate, async (ctx) => {
    const finding = await findingOf(deps.store, ctx, callerOf(ctx));
    ctx.body = { decisions: await decisionTrail(deps.store, finding.id) };
  });

  return router;
}
