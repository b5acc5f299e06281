import { Worker, workerData } from 'node:worker_threads';

/**
 * Starts a thread running a TypeScript module of the benchmarks (through ./thread-entry.mjs); the
 * module reads what it was given with threadData().
 */
export function startThread(entry: URL, data?: unknown): Worker {
  return new Worker(new URL('./thread-entry.mjs', import.meta.url), { workerData: { entry: entry.href, data } });
}

export const threadData = <T>(): T => (workerData as { data: T }).data;
