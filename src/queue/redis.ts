import { Redis, type RedisOptions } from 'ioredis';

/**
 * Redis connections and the names of every key the service owns. BullMQ keeps its default
 * "bull" prefix for the `checks` queue so scanners using BullMQ defaults reach the same queue;
 * the service's own keys (locks, data version, cache) live under their own namespace.
 */

export interface RedisNames {
  /** BullMQ key prefix of the checks queue. */
  queuePrefix: string;
  /** Namespace of the service's own keys. */
  keyPrefix: string;
}

export const defaultRedisNames: RedisNames = { queuePrefix: 'bull', keyPrefix: 'vulndb' };

export const keys = {
  targetLock: (n: RedisNames, targetId: string) => `${n.keyPrefix}:lock:target:${targetId}`,
  /** Held while a decision on the finding is made or revoked (SPEC §12.3). */
  findingLock: (n: RedisNames, findingId: string) => `${n.keyPrefix}:lock:finding:${findingId}`,
  /** Bumped by every change of the data (every committed batch too); cached answers about all targets are keyed by it. */
  dataVersion: (n: RedisNames) => `${n.keyPrefix}:data-version`,
  /**
   * Bumped by every change but a batch's precise bump (src/cache/data-version.ts): team
   * associations, decisions, imports, recomputes, a batch that changed shared data. Answers about
   * some teams' targets are keyed by it and by those teams' versions.
   */
  sharedVersion: (n: RedisNames) => `${n.keyPrefix}:data-version:shared`,
  /** Bumped by a batch that touched one of the team's targets. */
  teamVersion: (n: RedisNames, team: string) => `${n.keyPrefix}:data-version:team:${team}`,
  cache: (n: RedisNames, key: string) => `${n.keyPrefix}:cache:${key}`,
};

/** For BullMQ workers: blocking commands must wait for reconnection instead of failing. */
export function workerConnection(url: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: null, lazyConnect: false });
}

/**
 * For request paths (enqueueing, cache, locks): fail fast while Redis is unreachable, so an API
 * answers 503 or computes without the cache instead of hanging.
 */
export function requestConnection(url: string, extra: RedisOptions = {}): Redis {
  const redis = new Redis(url, {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    connectTimeout: 2000,
    commandTimeout: 2000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
    ...extra,
  });
  redis.on('error', () => {
    /* reported where a command fails; reconnection is automatic */
  });
  return redis;
}

/** Waits until a connection is ready (or `timeoutMs` passes; the caller keeps going either way). */
export async function whenReady(redis: Redis, timeoutMs = 5000): Promise<boolean> {
  if (redis.status === 'ready') return true;
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(timer);
      redis.off('ready', onReady);
      resolve(ok);
    };
    const onReady = () => done(true);
    const timer = setTimeout(() => done(false), timeoutMs);
    redis.on('ready', onReady);
  });
}
