import { cliConfig } from '../src/cli/config.js';
import { CliError } from '../src/cli/exit.js';
import { runService } from '../src/cli/serve.js';

/**
 * The ingest worker as a process of its own (`node dist/workers/ingest.js`, the same as
 * `vulndb serve worker`): it consumes the `checks` and `checks-bulk` queues and applies their
 * reports in batches. The processing lives in src/ingest (worker.ts: the BullMQ workers, jobs.ts:
 * what a job does, batcher.ts and batch.ts: the batches), so that the service can also run it in
 * one process with the APIs (the embedded engine's data folder belongs to one process).
 */

try {
  await runService(await cliConfig(), { api: false, worker: true });
} catch (err) {
  console.error(err instanceof Error ? err.message : String(err));
  process.exit(err instanceof CliError ? err.exitCode : 1);
}
