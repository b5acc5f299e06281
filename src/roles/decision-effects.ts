import type { Redis } from 'ioredis';
import type { DataVersion } from '../cache/data-version.js';
import type { Logger } from '../log.js';
import { decisionEvent, enqueueEvents, notificationsQueue } from '../notifications/emit.js';
import type { RedisNames } from '../queue/redis.js';
import type { Store } from '../storage/gateway.js';
import { teamsOf } from '../teams/associations.js';
import { watchExpiries } from '../decisions/expiry.js';
import type { DecisionAction } from '../decisions/routes.js';
import type { Decision } from '../decisions/store.js';
import type { Suppression } from '../decisions/suppression.js';

/**
 * What follows a decision (SPEC §12.3, §9.1), started with the APIs:
 * - made or revoked: the cached answers about its finding's target are retired (the data version
 *   and the versions of the target's teams), then a `finding.decision` event is emitted — both
 *   before the answer, so a client that reads a metric right after its decision sees its effect.
 *   An emission that fails is logged: the decision is stored and stays.
 * - expired: nobody acts, so a periodic look retires cached answers (src/decisions/expiry.ts); the
 *   `expired` events are the notification worker's periodic check.
 */
export function startDecisionEffects(deps: {
  store: Store;
  suppression: Suppression;
  redis: Redis;
  names: RedisNames;
  dataVersion: DataVersion;
  /** The APIs' clock, epoch seconds. */
  now: () => number;
  log: Logger;
}) {
  const queue = notificationsQueue(deps.redis, deps.names);
  // A decision changes the answers about its finding's target: those of all targets and of the
  // target's teams (the data version and their versions); other teams' stay cached.
  const retireAnswers = async (targetId: string, why: string) => {
    const teams = await teamsOf(deps.store, [targetId]).catch(() => undefined);
    await (teams ? deps.dataVersion.bumpBatch(why, teams.get(targetId) ?? []) : deps.dataVersion.bump(why));
  };
  const expiries = watchExpiries({
    store: deps.store,
    suppression: deps.suppression,
    now: deps.now,
    expired: () => deps.dataVersion.bump('decision expired'),
    log: deps.log,
  });
  const onChange = async (finding: { id: string; targetId: string }, decision: Decision, action: DecisionAction): Promise<void> => {
    await retireAnswers(finding.targetId, `decision ${action}`);
    try {
      await enqueueEvents(queue, [decisionEvent(finding, { ...decision, action })]);
    } catch (err) {
      deps.log.warn('could not emit a decision event', { err, finding: finding.id, decision: decision.id, action });
    }
  };
  const close = async () => {
    expiries.stop();
    await queue.close();
  };
  return { onChange, close };
}

export type DecisionEffects = ReturnType<typeof startDecisionEffects>;
