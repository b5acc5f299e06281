import type { Redis } from 'ioredis';
import type { DataVersion } from '../cache/data-version.js';
import type { Suppression } from '../decisions/suppression.js';
import type { Config } from '../config.js';
import type { BatcherOptions } from '../ingest/batcher.js';
import type { TotalsRewriter } from '../ingest/totals.js';
import type { CommitGate } from '../locks/commit-gate.js';
import type { Locks } from '../locks/target-locks.js';
import type { Logger } from '../log.js';
import type { NotificationsOptions } from '../notifications/worker.js';
import type { ServiceMetrics } from '../observability/metrics.js';
import type { RedisNames } from '../queue/redis.js';
import type { Store } from '../storage/gateway.js';
import type { StopDeadline } from './stop-deadline.js';

/** How a service is started (src/service.ts): its roles, and the knobs tests set. */
export interface ServiceOptions {
  api: boolean;
  worker: boolean;
  log: Logger;
  /** Tests use their own Redis key prefixes. */
  names?: RedisNames;
  faults?: BatcherOptions['faults'];
  /** "now" in epoch seconds for the APIs; tests fix it. */
  now?: () => number;
  /** Webhook delivery knobs (tests shorten the backoff and the periodic check's interval). */
  notifications?: NotificationsOptions;
}

/**
 * What every role of the service shares (src/service.ts): the store, Redis, the target locks, the
 * rewriter of the findings lists' totals (batches and POST /targets) and the data version of
 * cached answers.
 */
export interface RoleContext {
  config: Config;
  opts: ServiceOptions;
  log: Logger;
  store: Store;
  redis: Redis;
  names: RedisNames;
  locks: Locks;
  totals: TotalsRewriter;
  dataVersion: DataVersion;
  /** Findings suppressed by triage decisions (SPEC §12.3): what the process knows of decisions. */
  suppression: Suppression;
  /** Closed by a snapshot (src/backup): each batch passes it whole. */
  gate: CommitGate;
  /** The process's Prometheus registry and collectors, served by its admin listener. */
  metrics: ServiceMetrics;
}

/**
 * A started role: stopped in the service's shutdown order. `stop` stops its intake (requests,
 * jobs) before its first await, then finishes what it holds while `deadline` leaves time.
 */
export interface Stoppable {
  stop(deadline: StopDeadline): Promise<void>;
}
