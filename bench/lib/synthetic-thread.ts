import { parentPort } from 'node:worker_threads';
import { threadData } from './thread.js';
import { syntheticReports, type SyntheticOptions } from './synthetic.js';

/** bench/lib/synthetic-texts.ts's thread: the history as JSON lines, a chunk per request. */
const CHUNK = 500;
const reports = syntheticReports(threadData<SyntheticOptions>());
parentPort!.on('message', () => {
  const texts: string[] = [];
  // Not for…of: leaving that loop would close the generator.
  while (texts.length < CHUNK) {
    const next = reports.next();
    if (next.done) break;
    texts.push(JSON.stringify(next.value));
  }
  parentPort!.postMessage(texts);
});
