import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { closeSharedGate, GateRefused, gateKeys, SharedCommitGate } from '../src/locks/shared-gate.js';
import { silentLogger } from '../src/log.js';
import type { RedisNames } from '../src/queue/redis.js';
import { REDIS_URL } from './support/service.js';

/**
 * The commit gate across processes (SPEC §14, server mode), on the tests' Redis under key
 * prefixes of their own: a close waits for the writers inside and holds the ones arriving; a
 * crashed closer or writer holds nothing longer than its key's life.
 */

const connections: Redis[] = [];
const connect = () => {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  connections.push(redis);
  return redis;
};
const fresh = (): RedisNames => ({ queuePrefix: 'bull', keyPrefix: `test-gate-${randomUUID()}` });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const times = { leaseMs: 600, pollMs: 10 };

afterAll(async () => {
  for (const r of connections) {
    await r.quit();
  }
});

describe('the shared commit gate', () => {
  it('a close waits for the writer inside, and a writer arriving meanwhile waits for it to open', async () => {
    const names = fresh();
    // Two "processes": each its own connection and gate.
    const a = new SharedCommitGate(connect(), names, silentLogger, times);
    const b = new SharedCommitGate(connect(), names, silentLogger, times);
    const order: string[] = [];
    let finishFirst!: () => void;
    let firstIn!: () => void;
    const entered = new Promise<void>((resolve) => (firstIn = resolve));
    const first = a.pass(async () => {
      order.push('first in');
      firstIn();
      await new Promise<void>((resolve) => (finishFirst = resolve));
      order.push('first out');
    });
    await entered;
    const observer = connect();
    const closing = closeSharedGate(connect(), names, { maxHoldMs: 5000, drainMs: 5000 }, async () => {
      order.push('closed');
      await sleep(200);
      order.push('opening');
    });
    while ((await observer.exists(gateKeys(names).closed)) === 0) await sleep(5);
    const second = b.pass(async () => {
      // Nested writes of the same pass do not wait for the gate (or take a second lease).
      await b.pass(async () => order.push('second in'));
    });
    // The closer waits for the first writer, the second writer for the closer.
    await sleep(200);
    expect(order).toEqual(['first in']);
    finishFirst();
    const { heldMs } = await closing;
    await Promise.all([first, second]);
    expect(order).toEqual(['first in', 'first out', 'closed', 'opening', 'second in']);
    expect(heldMs).toBeGreaterThanOrEqual(200);
    expect(await connect().zcard(gateKeys(names).writers)).toBe(0);
    expect(await connect().exists(gateKeys(names).closed)).toBe(0);
  });

  it('a closer that died holds writers no longer than its key lives', async () => {
    const names = fresh();
    // What a CLI killed under the gate leaves behind.
    await connect().set(gateKeys(names).closed, 'dead-closer', 'PX', 300);
    const gate = new SharedCommitGate(connect(), names, silentLogger, times);
    const started = Date.now();
    await gate.pass(async () => undefined);
    const waited = Date.now() - started;
    expect(waited).toBeGreaterThanOrEqual(250);
    expect(waited).toBeLessThan(2000);
  });

  it('a writer that died delays a close by its lease at most', async () => {
    const names = fresh();
    const redis = connect();
    // A lease registered by a process that died mid-batch (expiring 600 ms from now).
    const [s, us] = await redis.time();
    const now = Number(s) * 1000 + Math.floor(Number(us) / 1000);
    await redis.zadd(gateKeys(names).writers, now + times.leaseMs, 'dead-writer');
    const registered = Date.now();
    await closeSharedGate(redis, names, { maxHoldMs: 5000, drainMs: 5000 }, async () => undefined);
    expect(Date.now() - registered).toBeGreaterThanOrEqual(times.leaseMs - 50);
    expect(Date.now() - registered).toBeLessThan(3000);
  });

  it('refuses a second closer, writers that do not finish, and a closure that outlived the key', async () => {
    const names = fresh();
    const redis = connect();
    const opts = { maxHoldMs: 5000, drainMs: 5000 };
    let release!: () => void;
    let held!: () => void;
    const closed = new Promise<void>((resolve) => (held = resolve));
    const holding = closeSharedGate(redis, names, opts, () => {
      held();
      return new Promise<void>((resolve) => (release = resolve));
    });
    await closed;
    await expect(closeSharedGate(connect(), names, opts, async () => undefined)).rejects.toThrow(/another snapshot holds the commit gate/);
    release();
    await holding;

    const gate = new SharedCommitGate(connect(), names, silentLogger, times);
    let finish!: () => void;
    let inside!: () => void;
    const entered = new Promise<void>((resolve) => (inside = resolve));
    const long = gate.pass(() => {
      inside();
      return new Promise<void>((resolve) => (finish = resolve));
    });
    await entered;
    await expect(closeSharedGate(redis, names, { maxHoldMs: 5000, drainMs: 200 }, async () => undefined)).rejects.toThrow(
      /writers were still committing after 200 ms/,
    );
    // The refused close left the gate open: the writer's next pass goes through.
    finish();
    await long;
    await gate.pass(async () => undefined);

    const late = closeSharedGate(redis, names, { maxHoldMs: 200, drainMs: 1000 }, () => sleep(400));
    await expect(late).rejects.toBeInstanceOf(GateRefused);
    await expect(late).rejects.toThrow(/reopened on its own after 200 ms/);
  });

  it('a lease stays alive while its writes run longer than the lease', async () => {
    const names = fresh();
    const gate = new SharedCommitGate(connect(), names, silentLogger, times);
    let closedAt = 0;
    let writesEndedAt = 0;
    let inside!: () => void;
    const entered = new Promise<void>((resolve) => (inside = resolve));
    const writes = gate.pass(async () => {
      inside();
      await sleep(3 * times.leaseMs);
      writesEndedAt = Date.now();
    });
    await entered;
    await closeSharedGate(connect(), names, { maxHoldMs: 5000, drainMs: 5000 }, async () => {
      closedAt = Date.now();
    });
    await writes;
    expect(closedAt).toBeGreaterThanOrEqual(writesEndedAt);
  });
});
