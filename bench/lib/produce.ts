/**
 * Benchmark producer, run as a child process (like a scanner or `vulndb import`): enqueues a
 * synthetic history on the checks queue in bulk, pausing while more than 20k jobs are pending.
 * Prints one JSON line when done (with the CPU time this process used).
 */
import { checksQueue, enqueueReports } from '../../src/queue/producer.js';
import { requestConnection, whenReady } from '../../src/queue/redis.js';
import { syntheticReports } from './synthetic.js';

const [redisUrl, queuePrefix, targets, scans, maxPendingArg] = process.argv.slice(2);
const maxPending = Number(maxPendingArg ?? 20_000);
const redis = requestConnection(redisUrl!);
await whenReady(redis);
const queue = checksQueue(redis, { queuePrefix: queuePrefix!, keyPrefix: 'unused' });
const started = performance.now();
let chunk: unknown[] = [];
let sent = 0;
let pausedMs = 0;
for (const report of syntheticReports({ targets: Number(targets), scans: Number(scans), churn: 0.01 })) {
  chunk.push(report);
  if (chunk.length < 500) continue;
  for (;;) {
    const c = await queue.getJobCounts('waiting', 'prioritized');
    if (c.waiting! + c.prioritized! < maxPending) break;
    const t = performance.now();
    await new Promise((r) => setTimeout(r, 50));
    pausedMs += performance.now() - t;
  }
  await enqueueReports(queue, chunk);
  sent += chunk.length;
  chunk = [];
}
await enqueueReports(queue, chunk);
sent += chunk.length;
const seconds = (performance.now() - started) / 1000;
const cpu = process.cpuUsage();
process.stdout.write(JSON.stringify({ sent, seconds, pausedSeconds: pausedMs / 1000, cpuSeconds: (cpu.user + cpu.system) / 1e6 }) + '\n');
await queue.close();
await redis.quit();
