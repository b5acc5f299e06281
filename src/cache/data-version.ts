import type { Redis } from 'ioredis';
import type { Logger } from '../log.js';
import { keys, type RedisNames } from '../queue/redis.js';

/**
 * The data version every cached answer is keyed by (src/cache/response-cache.ts), bumped after
 * each committed batch and each team association. A bump that cannot reach Redis is owed and is
 * made as soon as the connection is ready again: a Redis that kept its data through the outage
 * (persistence, a network cut) still holds the answers cached before the change, under the old
 * version, and would otherwise serve them as current.
 *
 * The retry goes out from the `ready` handler, before any later command on the same connection,
 * so the cache's first lookup after the outage already sees the new version.
 */
const changeListeners = new Set<() => void>();

/**
 * In-process answers derived from the store (e.g. when false positives lapse, src/decisions/lapses.ts)
 * register here: every bump — a change of the data in this process — forgets them, before Redis is told.
 */
export function onDataChange(listener: () => void): void {
  changeListeners.add(listener);
}

export class DataVersion {
  private started = 0;
  /** The first bump that failed and has not been made good since (Infinity: nothing owed). */
  private owedFrom = Infinity;

  constructor(
    private readonly redis: Redis,
    private readonly names: RedisNames,
    private readonly log: Logger,
  ) {
    redis.on('ready', () => {
      if (this.owed) void this.bump('Redis is back');
    });
  }

  get owed(): boolean {
    return this.owedFrom !== Infinity;
  }

  /** Never throws: a failure is logged and owed. */
  async bump(why: string): Promise<void> {
    for (const listener of changeListeners) listener();
    const seq = this.started++;
    try {
      await this.redis.incr(keys.dataVersion(this.names));
      // Only a bump that started after the failure covers the change that failed to bump.
      if (seq >= this.owedFrom) {
        this.owedFrom = Infinity;
        this.log.info('data version bumped after Redis was unavailable; answers cached before are stale', { why });
      }
    } catch (err) {
      if (!this.owed) this.log.warn('could not bump the data version; it is bumped when Redis is back', { why, err });
      this.owedFrom = Math.min(this.owedFrom, seq);
    }
  }
}
