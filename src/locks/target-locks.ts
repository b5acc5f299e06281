import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { keys, type RedisNames } from '../queue/redis.js';

/**
 * Per-target locks in Redis, so that reports of one target are never derived concurrently from
 * stale state, whichever worker process (or concurrent batch) holds them. A lock expires on its
 * own if its holder dies; the holder keeps it alive while a batch runs.
 */

const RELEASE = `
for i, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[1] then redis.call('DEL', key) end
end
return 1`;

const EXTEND = `
for i, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[1] then redis.call('PEXPIRE', key, ARGV[2]) end
end
return 1`;

export interface HeldLocks {
  acquired: Set<string>;
  release(): Promise<void>;
}

export interface Locks {
  acquire(targetIds: string[]): Promise<HeldLocks>;
}

/**
 * For a process that owns the store alone (an embedded data folder is locked to one process): no
 * other process writes, but its own batches in flight must still not derive one target's reports
 * side by side from the same stale state.
 */
export class ProcessLocks implements Locks {
  private readonly held = new Set<string>();

  async acquire(targetIds: string[]): Promise<HeldLocks> {
    const acquired = new Set(targetIds.filter((id) => !this.held.has(id)));
    for (const id of acquired) this.held.add(id);
    return {
      acquired,
      release: async () => {
        for (const id of acquired) this.held.delete(id);
      },
    };
  }
}

export class TargetLocks implements Locks {
  constructor(
    private readonly redis: Redis,
    private readonly names: RedisNames,
    private readonly ttlMs = 30_000,
    /** The key of an id's lock: targets' by default; findingLocks() locks findings. */
    private readonly keyOf: (names: RedisNames, id: string) => string = keys.targetLock,
  ) {}

  /** Takes the free locks among `targetIds`; targets held elsewhere are left out of `acquired`. */
  async acquire(targetIds: string[]): Promise<HeldLocks> {
    const token = randomUUID();
    const pipeline = this.redis.pipeline();
    for (const id of targetIds) pipeline.set(this.keyOf(this.names, id), token, 'PX', this.ttlMs, 'NX');
    const acquired = new Set<string>();
    // Should a SET fail, the ones that succeeded (all of them, if the answers were lost) are
    // released at once rather than left locked until the TTL.
    const releaseAfter = async (err: unknown, ids: string[]): Promise<never> => {
      const taken = ids.map((id) => this.keyOf(this.names, id));
      if (taken.length > 0) await this.redis.eval(RELEASE, taken.length, ...taken, token).catch(() => {});
      throw err;
    };
    let results: [error: Error | null, result: unknown][];
    try {
      results = (await pipeline.exec()) ?? [];
    } catch (err) {
      return releaseAfter(err, targetIds);
    }
    const failure = results.find(([err]) => err)?.[0];
    for (const [i, [, reply]] of results.entries()) if (reply === 'OK') acquired.add(targetIds[i]!);
    if (failure) return releaseAfter(failure, [...acquired]);
    const lockKeys = [...acquired].map((id) => this.keyOf(this.names, id));
    const keepAlive = setInterval(() => {
      if (lockKeys.length > 0) void this.redis.eval(EXTEND, lockKeys.length, ...lockKeys, token, this.ttlMs).catch(() => {});
    }, this.ttlMs / 3);
    keepAlive.unref();
    return {
      acquired,
      release: async () => {
        clearInterval(keepAlive);
        if (lockKeys.length > 0) await this.redis.eval(RELEASE, lockKeys.length, ...lockKeys, token);
      },
    };
  }
}

/**
 * Per-finding locks in Redis: decisions on one finding are made and revoked one after another,
 * whichever API process receives them (SPEC §12.3). Apart from the target locks, so a decision
 * never waits for an ingest batch of its target.
 */
export const findingLocks = (redis: Redis, names: RedisNames, ttlMs?: number): Locks =>
  new TargetLocks(redis, names, ttlMs, keys.findingLock);

export class LockTimeout extends Error {
  constructor(targetIds: string[]) {
    super(`target locks still held elsewhere: ${targetIds.join(', ')}`);
    this.name = 'LockTimeout';
  }
}

/**
 * Waits until every lock of `targetIds` is held. An ingest batch holds its targets' locks for one
 * batch (a second or two), so a short poll is enough; a holder that died frees its lock at the TTL.
 */
export async function acquireAll(locks: Locks, targetIds: string[], timeoutMs = 30_000, pollMs = 25): Promise<HeldLocks> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const held = await locks.acquire(targetIds);
    const missing = targetIds.filter((id) => !held.acquired.has(id));
    if (missing.length === 0) return held;
    await held.release();
    if (Date.now() >= deadline) throw new LockTimeout(missing);
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}
