import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from '../log.js';
import { keys, type RedisNames } from '../queue/redis.js';

/**
 * Read-through Redis cache of metric responses. An entry is keyed by the data version (bumped by
 * the ingest worker after every committed batch and by team re-association), the endpoint, the
 * scope and the normalised parameters, so a cached answer is never older than the data it was
 * computed from; answers that depend on the clock (exposures "now") also expire after a short TTL.
 *
 * The version and the entry are read in one round trip (a Lua script). Any failure — Redis down,
 * not yet connected, slow — is a BYPASS: the answer is computed and nothing is cached.
 */

export type CacheStatus = 'HIT' | 'MISS' | 'BYPASS';

export interface CacheSettings {
  redis: Redis;
  names: RedisNames;
  /** Lifetime of entries that depend only on the data (bounded so old versions are evicted). */
  ttlSeconds?: number;
  /** Lifetime of entries that depend on the clock. */
  clockTtlSeconds?: number;
  /** Longest wait for Redis before computing without it. */
  timeoutMs?: number;
}

/** Returns [data version, cached body or null]; the entry key is ARGV[1] .. version .. ARGV[2]. */
const LOOKUP = `
local version = redis.call('GET', KEYS[1]) or '0'
return {version, redis.call('GET', ARGV[1] .. version .. ARGV[2])}
`;

interface LookupRedis {
  metricsCacheLookup(versionKey: string, before: string, after: string): Promise<[string, string | null]>;
}

export interface CacheRequest {
  /** Endpoint name, e.g. `open`. */
  endpoint: string;
  /** `team:<id>`, `teams:<id>,<id>` (sorted) or `global`. */
  scope: string;
  /** Normalised parameters (see normalisedFilters). */
  params: string;
  clockDependent: boolean;
}

export class MetricsCache {
  private readonly redis: Redis & LookupRedis;
  private readonly ttl: number;
  private readonly clockTtl: number;
  private readonly timeoutMs: number;
  private failing = false;
  private readonly inFlight = new Map<string, Promise<string>>();

  constructor(
    private readonly settings: CacheSettings,
    private readonly log: Logger,
  ) {
    settings.redis.defineCommand('metricsCacheLookup', { numberOfKeys: 1, lua: LOOKUP });
    this.redis = settings.redis as Redis & LookupRedis;
    this.ttl = settings.ttlSeconds ?? 600;
    this.clockTtl = settings.clockTtlSeconds ?? 60;
    this.timeoutMs = settings.timeoutMs ?? 250;
  }

  /**
   * The cached body of the request, or the computed one (stored for the next caller). Identical
   * requests arriving while one is being computed share that computation (a burst after a data
   * version bump runs the query once per process, not once per request).
   */
  async through(req: CacheRequest, compute: () => Promise<unknown>): Promise<{ body: string; status: CacheStatus }> {
    const found = await this.lookup(req);
    if (found?.body != null) return { body: found.body, status: 'HIT' };
    const flightKey = found?.key ?? `bypass${this.keyParts(req).join('')}`;
    let flight = this.inFlight.get(flightKey);
    if (!flight) {
      flight = compute()
        .then((value) => JSON.stringify(value))
        .finally(() => this.inFlight.delete(flightKey));
      this.inFlight.set(flightKey, flight);
      if (found) {
        const ttl = req.clockDependent ? this.clockTtl : this.ttl;
        // Not awaited by the answer; commands on one connection stay ordered, so the next lookup sees it.
        flight.then(
          (body) => this.redis.set(found.key, body, 'EX', ttl).catch((err) => this.failed(err)),
          () => undefined, // the computation's failure is the caller's answer
        );
      }
    }
    return { body: await flight, status: found ? 'MISS' : 'BYPASS' };
  }

  private keyParts(req: CacheRequest): [string, string] {
    const digest = createHash('sha1').update(req.scope).update('\n').update(req.params).digest('base64url');
    return [keys.cache(this.settings.names, 'metrics:v'), `:${req.endpoint}:${digest}`];
  }

  private async lookup(req: CacheRequest): Promise<{ key: string; body: string | null } | undefined> {
    if (this.redis.status !== 'ready') return undefined;
    const [before, after] = this.keyParts(req);
    let timer: NodeJS.Timeout | undefined;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`cache lookup took longer than ${this.timeoutMs} ms`)), this.timeoutMs);
      });
      const command = this.redis.metricsCacheLookup(keys.dataVersion(this.settings.names), before, after);
      command.catch(() => undefined); // a late failure after the timeout is already handled
      const [version, body] = await Promise.race([command, timeout]);
      if (this.failing) {
        this.failing = false;
        this.log.info('metrics cache available again');
      }
      return { key: `${before}${version}${after}`, body };
    } catch (err) {
      this.failed(err);
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  }

  private failed(err: unknown): void {
    if (this.failing) return;
    this.failing = true;
    this.log.warn('metrics cache unavailable; answering without it', { err });
  }
}

/** Makes the cached answers of every metric stale (after team re-association, for instance). */
export async function bumpDataVersion(redis: Redis, names: RedisNames): Promise<void> {
  await redis.incr(keys.dataVersion(names));
}
