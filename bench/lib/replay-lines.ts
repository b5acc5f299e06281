import type { ReportBatcher } from '../../src/ingest/batcher.js';

/**
 * Hands JSON lines to the batcher as `vulndb import --direct` does: each line parsed here, at most
 * `maxInFlight` reports submitted and not yet committed. Resolves with the number of reports once
 * all are committed.
 */
export async function replayLines(
  batcher: ReportBatcher,
  lines: AsyncIterable<string>,
  maxInFlight: number,
  onSubmitted?: (sent: number) => void,
): Promise<number> {
  const inFlight = new Set<Promise<unknown>>();
  let sent = 0;
  for await (const line of lines) {
    const p = batcher.submit({ data: JSON.parse(line), attemptsStarted: 1 }).finally(() => inFlight.delete(p));
    inFlight.add(p);
    sent += 1;
    onSubmitted?.(sent);
    if (inFlight.size >= maxInFlight) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  return sent;
}
