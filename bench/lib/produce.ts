/**
 * Benchmark producer, run as a child process (like scanners or `vulndb import`): enqueues a
 * synthetic history, pausing while more than `maxPending` reports are waiting. With a bundle size
 * of 1 each report is a job on `checks` (as scanners send them); above 1 the reports travel in
 * bundles on `checks-bulk` (as `vulndb import` sends them). Prints one JSON line when done (with
 * the CPU time this process used).
 */
import type { Queue } from 'bullmq';
import { bundlesQueue, checksQueue, enqueueBundles, enqueueReports } from '../../src/queue/producer.js';
import { toBundles } from '../../src/queue/contract.js';
import { requestConnection, whenReady } from '../../src/queue/redis.js';
import { syntheticReports } from './synthetic.js';

const [redisUrl, queuePrefix, targets, scans, maxPendingArg, bundleArg] = process.argv.slice(2);
const maxPending = Number(maxPendingArg ?? 20_000);
const bundleSize = Number(bundleArg ?? 1);
const redis = requestConnection(redisUrl!);
await whenReady(redis);
const names = { queuePrefix: queuePrefix!, keyPrefix: 'unused' };
const queue: Queue = bundleSize > 1 ? bundlesQueue(redis, names) : checksQueue(redis, names);
// 500 reports per round trip to Redis, as single jobs or as bundles.
const chunkSize = Math.max(500, bundleSize);
const send = (reports: unknown[]) =>
  bundleSize === 1 ? enqueueReports(queue, reports) : enqueueBundles(queue, toBundles(reports, bundleSize));
const started = performance.now();
let chunk: unknown[] = [];
let sent = 0;
let pausedMs = 0;
for (const report of syntheticReports({ targets: Number(targets), scans: Number(scans), churn: 0.01 })) {
  chunk.push(report);
  if (chunk.length < chunkSize) continue;
  for (;;) {
    const c = await queue.getJobCounts('waiting', 'prioritized');
    if ((c.waiting! + c.prioritized!) * bundleSize < maxPending) break;
    const t = performance.now();
    await new Promise((r) => setTimeout(r, 50));
    pausedMs += performance.now() - t;
  }
  await send(chunk);
  sent += chunk.length;
  chunk = [];
}
if (chunk.length > 0) await send(chunk);
sent += chunk.length;
const seconds = (performance.now() - started) / 1000;
const cpu = process.cpuUsage();
process.stdout.write(`${JSON.stringify({ sent, seconds, pausedSeconds: pausedMs / 1000, cpuSeconds: (cpu.user + cpu.system) / 1e6 })}\n`);
await queue.close();
await redis.quit();
