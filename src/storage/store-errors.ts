import type { ServiceMetrics } from '../observability/metrics.js';

/** What the store counts of its statements: the process's collectors, when it serves /metrics. */
export type StatementMetrics = Pick<ServiceMetrics, 'storeQueryDuration' | 'storeErrors'>;

/** A failure of the store itself (unreachable, engine error): callers treat it as transient. */
export class StoreError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreError';
  }
}

/** A statement ran past its time limit and was cancelled (SPEC §5.6): the database API's 503. */
export class QueryTimeout extends StoreError {
  constructor(
    readonly limitMs: number,
    options?: { cause?: unknown },
  ) {
    super(`statement cancelled at its time limit of ${limitMs} ms`, options);
    this.name = 'QueryTimeout';
  }
}

/**
 * Runs one statement: its failure becomes a StoreError, its time goes to the metrics by kind (none
 * given: a tool's store, which serves no /metrics, counts nothing).
 */
export async function guard<T>(
  what: string,
  run: () => Promise<T>,
  metrics: StatementMetrics | undefined,
  kind = what.split(' ')[0]!,
): Promise<T> {
  const timed = metrics?.storeQueryDuration.startTimer({ kind });
  try {
    return await run();
  } catch (err) {
    metrics?.storeErrors.inc({ kind });
    if (err instanceof StoreError) throw err;
    const message = err instanceof Error ? err.message : String(err);
    throw new StoreError(`${what} failed: ${message}`, { cause: err });
  } finally {
    timed?.();
  }
}
