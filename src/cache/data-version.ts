import type { Redis } from 'ioredis';
import type { Logger } from '../log.js';
import { keys, type RedisNames } from '../queue/redis.js';

/**
 * The data versions cached answers are keyed by (src/cache/response-cache.ts). Every change bumps
 * the data version, which keys the answers about all targets. The answers about some teams'
 * targets are keyed instead by the shared version and those teams' versions: a committed batch
 * that changed only its targets' data (`bumpBatch`) bumps the versions of their teams, so a team's
 * cached answers outlive batches on other teams' targets; any other change (`bump`: team
 * associations, decisions, a batch that changed shared data) bumps the shared version.
 *
 * A bump that cannot reach Redis is owed (as a bump of all data) and is
 * made as soon as the connection is ready again: a Redis that kept its data through the outage
 * (persistence, a network cut) still holds the answers cached before the change, under the old
 * version, and would otherwise serve them as current.
 *
 * The retry goes out from the `ready` handler, before any later command on the same connection,
 * so the cache's first lookup after the outage already sees the new version.
 */
const allDataKeys = (names: RedisNames) => [keys.dataVersion(names), keys.sharedVersion(names)];

/** A change of all data made outside the service (imports, recomputes); rejects as Redis does. */
export function bumpAllData(redis: Redis, names: RedisNames): Promise<void> {
  return incrAll(redis, allDataKeys(names));
}

/** In one transaction: a lookup never sees some of a change's versions bumped and not the others. */
async function incrAll(redis: Redis, versionKeys: string[]): Promise<void> {
  const multi = redis.multi();
  for (const key of versionKeys) multi.incr(key);
  const results = await multi.exec();
  const failed = results?.find(([err]) => err)?.[0];
  if (!results || failed) throw failed ?? new Error('the version bump was discarded');
}

export class DataVersion {
  private started = 0;
  /** The first bump that failed and has not been made good since (Infinity: nothing owed). */
  private owedFrom = Infinity;

  constructor(
    private readonly redis: Redis,
    private readonly names: RedisNames,
    private readonly log: Logger,
    /**
     * Every bump — a change of the data in this process — tells it first, before Redis is told:
     * what the process derived from the store (src/decisions/suppression.ts) is read again.
     */
    private readonly onChange: () => void = () => {},
  ) {
    redis.on('ready', () => {
      if (this.owed) void this.bump('Redis is back');
    });
  }

  get owed(): boolean {
    return this.owedFrom !== Infinity;
  }

  /** All data changed. Never throws: a failure is logged and owed. */
  bump(why: string): Promise<void> {
    return this.bumpKeys(why, allDataKeys(this.names), true);
  }

  /**
   * A batch committed that changed only its targets' findings and sources (not shared data) and
   * whose targets are associated with `teams`. Never throws: a failure is logged and owed.
   */
  bumpBatch(why: string, teams: Iterable<string>): Promise<void> {
    // What is owed is a bump of all data: only such a bump makes it good.
    if (this.owed) return this.bump(why);
    const teamKeys = [...new Set(teams)].map((t) => keys.teamVersion(this.names, t));
    return this.bumpKeys(why, [keys.dataVersion(this.names), ...teamKeys], false);
  }

  private async bumpKeys(why: string, versionKeys: string[], all: boolean): Promise<void> {
    this.onChange();
    const seq = this.started++;
    try {
      await incrAll(this.redis, versionKeys);
      // Only a bump that started after the failure covers the change that failed to bump.
      if (all && seq >= this.owedFrom) {
        this.owedFrom = Infinity;
        this.log.info('data version bumped after Redis was unavailable; answers cached before are stale', { why });
      }
    } catch (err) {
      if (!this.owed) this.log.warn('could not bump the data version; it is bumped when Redis is back', { why, err });
      this.owedFrom = Math.min(this.owedFrom, seq);
    }
  }
}
