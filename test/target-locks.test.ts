import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys, type RedisNames } from '../src/queue/redis.js';
import { TargetLocks } from '../src/locks/target-locks.js';
import { startPrivateRedis, type PrivateRedis } from './support/private-redis.js';

/**
 * A lock acquisition that fails half-way must not leave the locks it did take held until their TTL.
 * The failure is real: a private redis-server whose ACL lets the locking user write only some keys,
 * so part of the pipeline succeeds and part is refused (NOPERM).
 */

const names: RedisNames = { queuePrefix: 'bull-locks-test', keyPrefix: 'locks-test' };

describe('TargetLocks.acquire when Redis refuses part of it', () => {
  let server: PrivateRedis;
  let admin: Redis;
  let limited: Redis;
  beforeAll(async () => {
    server = await startPrivateRedis();
    admin = new Redis(server.url);
    // The locker may write the lock keys of targets whose id starts with "a" only.
    await admin.call('ACL', 'SETUSER', 'locker', 'on', '>pw', `~${names.keyPrefix}:lock:target:a*`, '+@all');
    limited = new Redis({ port: server.port, host: '127.0.0.1', username: 'locker', password: 'pw' });
  });
  afterAll(async () => {
    limited?.disconnect();
    admin?.disconnect();
    await server?.kill();
  });

  it('given a pipeline where one SET is refused, when acquiring, then it throws and the lock it did take is released', async () => {
    const locks = new TargetLocks(limited, names);
    await expect(locks.acquire(['a-target', 'b-target'])).rejects.toThrow(/NOPERM/);
    expect(await admin.exists(keys.targetLock(names, 'a-target'))).toBe(0);
    // And the target can be locked again at once.
    const held = await locks.acquire(['a-target']);
    expect([...held.acquired]).toEqual(['a-target']);
    await held.release();
  });
});
