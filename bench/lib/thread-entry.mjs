// Threads start without the parent's `--import tsx`, and Node 20 does not apply that flag to a
// thread's own entry file: TypeScript support is registered here before the entry is loaded.
import { workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
await import(workerData.entry);
