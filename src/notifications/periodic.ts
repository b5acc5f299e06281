import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from '../log.js';
import type { RedisNames } from '../queue/redis.js';
import { enqueueEvents } from './emit.js';
import type { NotificationEvent } from './events.js';

/**
 * The periodic check (SPEC §9.1): changes that happen by the clock alone — SLA breaches, decision
 * expiries — are looked for over the window (last run, now] and emitted. The window's end is kept
 * in Redis once its events are enqueued, so a restart resumes where the last run ended (nothing
 * skipped; a run whose enqueue failed is redone, and repeats carry the same event ids). With
 * several worker processes a short lock lets one of them run each round.
 */

/** A check: the events of changes whose instant lies in (from, to], epoch seconds. */
export type PeriodicCheck = (window: { from: number; to: number }) => Promise<NotificationEvent[]>;

export interface PeriodicOptions {
  redis: Redis;
  names: RedisNames;
  queue: Queue;
  log: Logger;
  checks: PeriodicCheck[];
  intervalMs: number;
  /** Epoch seconds. */
  now: () => number;
}

/** A first run looks back one interval; a long outage is caught up at most this far. */
const MAX_WINDOW_SECONDS = 30 * 86_400;
const EVENTS_PER_JOB = 5000;

export const periodicKeys = (n: RedisNames) => ({
  checkedUntil: `${n.keyPrefix}:notifications:checked-until`,
  lock: `${n.keyPrefix}:notifications:check-lock`,
});

/** One round; returns the number of events emitted, or undefined when another process holds the round. */
export async function runChecks(opts: PeriodicOptions): Promise<number | undefined> {
  const keys = periodicKeys(opts.names);
  const token = `${process.pid}:${Math.random()}`;
  if ((await opts.redis.set(keys.lock, token, 'PX', Math.max(1000, opts.intervalMs), 'NX')) !== 'OK') return undefined;
  try {
    const to = opts.now();
    const stored = Number(await opts.redis.get(keys.checkedUntil));
    const from = Math.max(Number.isFinite(stored) && stored > 0 ? stored : to - Math.ceil(opts.intervalMs / 1000), to - MAX_WINDOW_SECONDS);
    if (to <= from) return 0;
    const events = (await Promise.all(opts.checks.map((check) => check({ from, to })))).flat();
    for (let i = 0; i < events.length; i += EVENTS_PER_JOB) await enqueueEvents(opts.queue, events.slice(i, i + EVENTS_PER_JOB));
    await opts.redis.set(keys.checkedUntil, String(to));
    return events.length;
  } finally {
    if ((await opts.redis.get(keys.lock).catch(() => null)) === token) await opts.redis.del(keys.lock).catch(() => 0);
  }
}

export function startPeriodicChecks(opts: PeriodicOptions): { stop: () => Promise<void> } {
  let current: Promise<unknown> = Promise.resolve();
  let running = false;
  const tick = () => {
    if (running) return;
    running = true;
    current = runChecks(opts)
      .then((n) => {
        if (n) opts.log.info('periodic check emitted events', { events: n });
      })
      .catch((err) => opts.log.warn('periodic notification check failed; the window is checked again next round', { err }))
      .finally(() => {
        running = false;
      });
  };
  const timer = setInterval(tick, opts.intervalMs);
  timer.unref();
  tick();
  return {
    stop: async () => {
      clearInterval(timer);
      await current;
    },
  };
}
