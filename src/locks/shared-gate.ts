import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from '../log.js';
import type { RedisNames } from '../queue/redis.js';
import { CommitGate } from './commit-gate.js';

/**
 * The commit gate across processes (SPEC §14, server mode): the workers and API processes that
 * write to a ClickHouse server are many, and `vulndb backup` runs in yet another, so the gate
 * lives in Redis. A writer registers a lease before its first write (refused while the gate is
 * closed) and removes it after its last; the closer sets the closed key, then waits until no
 * live lease is left. Both steps are single scripts, so a writer either registered before the
 * close (the closer waits for it) or sees it closed (it waits).
 *
 * Nothing can hold ingestion forever: the closed key expires after `maxHoldMs` whatever becomes
 * of the closer (a crashed CLI), and a closer that outlives it fails its snapshot instead of
 * calling it consistent; a lease expires `leaseMs` after its last renewal, so a writer that died
 * mid-batch delays a close by that much at most.
 */

const ENTER = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 1`;

const RENEW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local renewed = redis.call('ZADD', KEYS[1], 'XX', 'CH', now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return renewed`;

/** Live leases left (expired ones are dropped first). */
const LIVE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
return redis.call('ZCARD', KEYS[1])`;

const OPEN = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

export const gateKeys = (n: RedisNames) => ({
  closed: `${n.keyPrefix}:snapshot-gate:closed`,
  writers: `${n.keyPrefix}:snapshot-gate:writers`,
});

export interface SharedGateTimes {
  /** A lease's life without renewal (renewed every third of it while its writes run). */
  leaseMs: number;
  /** How often a writer asks again while the gate is closed. */
  pollMs: number;
}

export const DEFAULT_GATE_TIMES: SharedGateTimes = { leaseMs: 15_000, pollMs: 25 };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The process's commit gate when the store is a server: a pass also holds a lease in Redis.
 * The connection must wait for Redis rather than fail (ioredis `maxRetriesPerRequest: null`):
 * while Redis is away, writes wait, as they must while the gate cannot be read.
 */
export class SharedCommitGate extends CommitGate {
  private readonly keys: ReturnType<typeof gateKeys>;

  constructor(
    private readonly redis: Redis,
    names: RedisNames,
    private readonly log: Logger,
    private readonly times: SharedGateTimes = DEFAULT_GATE_TIMES,
  ) {
    super();
    this.keys = gateKeys(names);
  }

  override pass<T>(work: () => Promise<T>): Promise<T> {
    if (this.nested) return work();
    return super.pass(() => this.leased(work));
  }

  private async leased<T>(work: () => Promise<T>): Promise<T> {
    const id = randomUUID();
    const waitStart = Date.now();
    let warned = false;
    while ((await this.redis.eval(ENTER, 2, this.keys.closed, this.keys.writers, id, this.times.leaseMs)) !== 1) {
      if (!warned && Date.now() - waitStart > 1000) {
        warned = true;
        this.log.info('writes wait: a snapshot holds the commit gate', { key: this.keys.closed });
      }
      await sleep(this.times.pollMs);
    }
    if (warned) this.log.info('commit gate open again', { waitedMs: Date.now() - waitStart });
    const renew = setInterval(() => {
      void (this.redis.eval(RENEW, 1, this.keys.writers, id, this.times.leaseMs) as Promise<number>).then(
        (kept) => kept === 0 && this.log.warn('a commit gate lease lapsed while its writes ran (process paused?)', { id }),
        (err: unknown) => this.log.warn('renewing a commit gate lease failed', { err }),
      );
    }, this.times.leaseMs / 3);
    try {
      return await work();
    } finally {
      clearInterval(renew);
      await this.redis.zrem(this.keys.writers, id).catch((err: unknown) => this.log.warn('leaving the commit gate failed', { err }));
    }
  }
}

/** The gate could not be closed, or was not held for the whole closure. */
export class GateRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GateRefused';
  }
}

export interface CloseOptions {
  /** The closed key's life: the longest writers can be held, even if the closer dies. */
  maxHoldMs: number;
  /** How long to wait for the writers inside to finish before giving up. */
  drainMs: number;
  pollMs?: number;
}

/**
 * Closes the shared gate for `work` (one closer at a time), run once no writer is inside;
 * resolves to its result and how long writers were held. Throws GateRefused when another closer
 * holds the gate, when writers do not finish within `drainMs`, or when `work` outlived `maxHoldMs`
 * (the gate reopened on its own under it, so its instant is not one).
 */
export async function closeSharedGate<T>(
  redis: Redis,
  names: RedisNames,
  opts: CloseOptions,
  work: () => Promise<T>,
): Promise<{ result: T; heldMs: number }> {
  const keys = gateKeys(names);
  const id = randomUUID();
  const started = Date.now();
  if ((await redis.set(keys.closed, id, 'PX', opts.maxHoldMs, 'NX')) !== 'OK')
    throw new GateRefused(`another snapshot holds the commit gate (${keys.closed} is set): wait for it, or for the key to expire`);
  try {
    while (((await redis.eval(LIVE, 1, keys.writers)) as number) > 0) {
      if (Date.now() - started > opts.drainMs)
        throw new GateRefused(`writers were still committing after ${opts.drainMs} ms: no snapshot taken (ingestion was held meanwhile)`);
      await sleep(opts.pollMs ?? 10);
    }
    const result = await work();
    if ((await redis.get(keys.closed)) !== id)
      throw new GateRefused(
        `the commit gate reopened on its own after ${opts.maxHoldMs} ms, before the tables were frozen: no snapshot taken`,
      );
    return { result, heldMs: Date.now() - started };
  } finally {
    await redis.eval(OPEN, 1, keys.closed, id);
  }
}
