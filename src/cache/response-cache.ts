import { createHash } from 'node:crypto';
import type { Context } from 'koa';
import type { Redis } from 'ioredis';
import type { Logger } from '../log.js';
import { keys, type RedisNames } from '../queue/redis.js';
import type { ServiceMetrics } from '../observability/metrics.js';

/**
 * Read-through Redis cache of JSON responses (the metrics API's answers and the database API's
 * findings lists). An entry is keyed by the data versions it depends on (src/cache/data-version.ts:
 * the data version, or for an answer that reads only some teams' targets the shared version and
 * those teams' versions), the endpoint, the scope and the normalised parameters, so a
 * cached answer is never older than the data it was computed from, while a batch on one team's
 * targets leaves other teams' answers cached; answers that depend on the clock (exposures "now")
 * also expire after a short TTL.
 *
 * The version and the entry are read in one round trip (a Lua script). Any failure — Redis down,
 * not yet connected, slow — is a BYPASS: the answer is computed and nothing is cached.
 */

export const CACHE_STATUSES = ['HIT', 'MISS', 'BYPASS'] as const;
export type CacheStatus = (typeof CACHE_STATUSES)[number];

export interface CacheSettings {
  redis: Redis;
  names: RedisNames;
  /** Lifetime of entries that depend only on the data (bounded so old versions are evicted). */
  ttlSeconds?: number;
  /** Lifetime of entries that depend on the clock. */
  clockTtlSeconds?: number;
  /** Longest wait for Redis before computing without it. */
  timeoutMs?: number;
  /**
   * The configuration the answers depend on besides the request (the SLA policy of SLA_DAYS):
   * part of every key, so a restart with another configuration never serves answers of the old one.
   */
  variant?: string;
  /** The process's collectors (the service's): lookups counted by result; none, not counted. */
  metrics?: Pick<ServiceMetrics, 'cacheRequests'> | undefined;
}

/**
 * Returns [the versions of KEYS joined, cached body or null]; the entry key is ARGV[1] .. versions
 * .. ARGV[2]. The versions and the entry are read at one instant.
 */
const LOOKUP = `
local versions = {}
for i, key in ipairs(KEYS) do versions[i] = redis.call('GET', key) or '0' end
local version = table.concat(versions, '.')
return {version, redis.call('GET', ARGV[1] .. version .. ARGV[2])}
`;

interface LookupRedis {
  responseCacheLookup(versionKeyCount: number, ...keysAndArgs: string[]): Promise<[string, string | null]>;
}

export interface CacheRequest {
  /** Endpoint name, e.g. `open`. */
  endpoint: string;
  /** What the answer is about, e.g. `team:<id>`, `teams:<id>,<id>` (sorted) or `global`. */
  scope: string;
  /** Normalised parameters (see normalisedParams). */
  params: string;
  clockDependent: boolean;
  /**
   * The teams whose targets' data alone the answer reads (a team filter, the caller's teams), so
   * only their versions and that of all data key it; undefined: it reads every target's data.
   */
  teams?: readonly string[] | undefined;
}

/**
 * Sorted-keys text of parsed request parameters with list values sorted and deduplicated (every
 * list filter is a set): equal selections, equal text, one cache entry.
 */
export function normalisedParams(f: object): string {
  const entries = Object.entries(f)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => [k, Array.isArray(v) ? [...new Set(v as string[])].sort() : v] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify(entries);
}

export class ResponseCache {
  private readonly redis: Redis & LookupRedis;
  private readonly ttl: number;
  private readonly clockTtl: number;
  private readonly timeoutMs: number;
  private failing = false;
  private readonly inFlight = new Map<string, Promise<string>>();

  /** `namespace` says whose answers these are (`metrics`, `db`): part of every key and log line. */
  constructor(
    private readonly namespace: string,
    private readonly settings: CacheSettings,
    private readonly log: Logger,
  ) {
    settings.redis.defineCommand('responseCacheLookup', { lua: LOOKUP });
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

  /** Counts one answer by how the cache served it. */
  count(status: CacheStatus): void {
    this.settings.metrics?.cacheRequests.inc({ result: status.toLowerCase() });
  }

  private keyParts(req: CacheRequest): [string, string] {
    const digest = createHash('sha1')
      .update(this.settings.variant ?? '')
      .update('\n')
      .update(req.scope)
      .update('\n')
      .update(req.params)
      .digest('base64url');
    return [keys.cache(this.settings.names, `${this.namespace}:v`), `:${req.endpoint}:${digest}`];
  }

  /** The versions an answer depends on (src/cache/data-version.ts), in a fixed order. */
  private versionKeys(req: CacheRequest): string[] {
    const { names } = this.settings;
    if (req.teams === undefined) return [keys.dataVersion(names)];
    return [keys.sharedVersion(names), ...[...new Set(req.teams)].sort().map((t) => keys.teamVersion(names, t))];
  }

  private async lookup(req: CacheRequest): Promise<{ key: string; body: string | null } | undefined> {
    if (this.redis.status !== 'ready') return undefined;
    const [before, after] = this.keyParts(req);
    let timer: NodeJS.Timeout | undefined;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`cache lookup took longer than ${this.timeoutMs} ms`)), this.timeoutMs);
      });
      const versionKeys = this.versionKeys(req);
      const command = this.redis.responseCacheLookup(versionKeys.length, ...versionKeys, before, after);
      command.catch(() => undefined); // a late failure after the timeout is already handled
      const [version, body] = await Promise.race([command, timeout]);
      if (this.failing) {
        this.failing = false;
        this.log.info(`${this.namespace} cache available again`);
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
    this.log.warn(`${this.namespace} cache unavailable; answering without it`, { err });
  }
}

/**
 * Answers a request through the cache (or computes it when there is none) and tells which in the
 * `X-Cache` header. The body goes out as the cached JSON text, exactly as Koa would serialise it.
 */
export async function answerCached(
  ctx: Context,
  cache: ResponseCache | undefined,
  req: CacheRequest,
  compute: () => Promise<unknown>,
): Promise<void> {
  const result = cache ? await cache.through(req, compute) : { body: JSON.stringify(await compute()), status: 'BYPASS' as const };
  ctx.set('X-Cache', result.status);
  cache?.count(result.status);
  ctx.type = 'application/json; charset=utf-8';
  ctx.body = result.body;
}
