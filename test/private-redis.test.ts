import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { startPrivateRedis } from './support/private-redis.js';

/**
 * The fault tests' private Redis is their own: a port another process answers (here the shared
 * Redis, only asked PING and INFO) is refused, never handed over as if it were the test's. Three
 * test files run at a time; two tests sharing a Redis would take each other's jobs.
 */

const SHARED = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

describe('a private Redis', () => {
  it('given a port that another Redis answers, when a private one is started on it, then the start fails and names the other server', async () => {
    const port = Number(new URL(SHARED).port || 6379);
    // The shared Redis answers first: a server started here on its port could never bind it.
    const shared = new Redis(SHARED, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await shared.connect();
    expect(await shared.ping()).toBe('PONG');
    await expect(startPrivateRedis({ port })).rejects.toThrow(/answered by another Redis|exited at start/);
    expect(await shared.ping()).toBe('PONG');
    shared.disconnect();
  });

  it('given a free port, when a private one is started, then the server answering is the one started', async () => {
    const redis = await startPrivateRedis();
    const probe = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await probe.connect();
    expect(Number(/process_id:(\d+)/.exec(await probe.info('server'))?.[1])).toBe(redis.child.pid);
    probe.disconnect();
    await redis.kill();
  });
});
