import type { DataVersion } from '../cache/data-version.js';
import type { Logger } from '../log.js';
import { decisionEvent, type NotificationEvent } from '../notifications/emit.js';
import type { DecisionAction } from './routes.js';
import type { Decision } from './store.js';

/**
 * What follows a decision being made or revoked (SPEC §12.3, §9.1): every cached answer is
 * retired (the data version), then a `finding.decision` event is emitted. Both before the answer,
 * so a client that reads a metric right after its decision sees its effect. An emission that
 * fails is logged: the decision is stored and stays.
 */
export function decisionChanges(deps: {
  dataVersion: DataVersion;
  emit?: ((events: NotificationEvent[]) => Promise<void>) | undefined;
  log: Logger;
}) {
  return async (finding: { id: string; targetId: string }, decision: Decision, action: DecisionAction): Promise<void> => {
    await deps.dataVersion.bump(`decision ${action}`);
    if (!deps.emit) return;
    try {
      await deps.emit([decisionEvent(finding, { ...decision, action })]);
    } catch (err) {
      deps.log.warn('could not emit a decision event', { err, finding: finding.id, decision: decision.id, action });
    }
  };
}
