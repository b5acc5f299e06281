import type { Logger } from '../log.js';
import type { Store } from '../storage/gateway.js';
import type { Suppression } from './suppression.js';

/**
 * Expiries take effect without anyone acting (SPEC §12.3): cached answers computed while a
 * decision was active must not outlive its `expires_at`. Every `intervalMs` this asks whether a
 * decision expired since the last look and, if one did, calls `expired` (the data version bump
 * that retires every cached answer). Nothing is read while the store holds no decision.
 * Webhook `finding.decision` expiry events are the notification worker's periodic check.
 */
export function watchExpiries(opts: {
  store: Store;
  suppression: Suppression;
  /** Epoch seconds (the APIs' clock). */
  now: () => number;
  expired: () => Promise<void>;
  log: Logger;
  intervalMs?: number;
}): { stop: () => void } {
  let since = opts.now();
  let running = false;
  const check = async () => {
    if (running) return;
    running = true;
    try {
      if (!(await opts.suppression.mayExist())) return;
      const until = opts.now();
      if (until <= since) return;
      const [row] = await opts.store.query<{ n: number }>(
        `SELECT count() AS n FROM finding_decisions
         WHERE expires_at > {since:DateTime('UTC')} AND expires_at <= {until:DateTime('UTC')}`,
        { since: sqlSeconds(since), until: sqlSeconds(until) },
      );
      since = until;
      if ((row?.n ?? 0) > 0) await opts.expired();
    } catch (err) {
      opts.log.warn('could not check decision expiries; retrying', { err });
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => void check(), opts.intervalMs ?? 2000);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

const sqlSeconds = (epoch: number) => new Date(epoch * 1000).toISOString().slice(0, 19).replace('T', ' ');
