import type { Queue } from 'bullmq';

/**
 * What the worker made of an import's bundles (`vulndb import --wait`): each completed bundle job
 * returns how its reports went (src/ingest/jobs.ts), so the import can say that a re-import changed
 * nothing (duplicates: the same reports, or the same scanner document, imported before).
 */

export interface ProcessedReports {
  ingested: number;
  duplicates: number;
  ignored: number;
  /** Completed bundles whose outcome is no longer kept (completed jobs are kept an hour, 1,000 at most). */
  unknownBundles: number;
}

interface BundleOutcome {
  ingested?: number;
  duplicates?: number;
  ignored?: number;
}

/** Sums the outcomes of the completed jobs among `ids` (failed ones are `failedBundles`' concern). */
export async function processedReports(queue: Queue, ids: Iterable<string>): Promise<ProcessedReports> {
  const out: ProcessedReports = { ingested: 0, duplicates: 0, ignored: 0, unknownBundles: 0 };
  const all = [...ids];
  // A hundred lookups in flight at a time: one bundle holds up to 1,000 reports.
  for (let i = 0; i < all.length; i += 100) {
    const jobs = await Promise.all(all.slice(i, i + 100).map((id) => queue.getJob(id)));
    for (const job of jobs) {
      const outcome = job?.returnvalue as BundleOutcome | null | undefined;
      if (!outcome || typeof outcome !== 'object') {
        if (!job?.failedReason) out.unknownBundles += 1;
        continue;
      }
      out.ingested += outcome.ingested ?? 0;
      out.duplicates += outcome.duplicates ?? 0;
      out.ignored += outcome.ignored ?? 0;
    }
  }
  return out;
}

/** The summary's words for them: `processed: ingested 3, duplicates 1` and what a duplicate means. */
export function processedText(p: ProcessedReports): string {
  const unknown = p.unknownBundles > 0 ? `, ${p.unknownBundles} bundles' outcome no longer kept` : '';
  return `processed: ingested ${p.ingested}, duplicates ${p.duplicates}${unknown}`;
}

export function duplicatesNote(p: ProcessedReports): string | undefined {
  if (p.duplicates === 0) return undefined;
  const all = p.ingested === 0 && p.unknownBundles === 0;
  return `  ${all ? 'every report was' : `${p.duplicates} reports were`} a duplicate: imported before, nothing changed\n`;
}

type Rejections = { rejected: number; rejections: { origin: string; reason: string }[] };

/** The first rejections of an import, each with where it was read, and how many more there were. */
export function printRejections(summary: Rejections) {
  for (const r of summary.rejections) process.stdout.write(`  rejected ${r.origin}: ${r.reason}\n`);
  if (summary.rejected > summary.rejections.length) {
    process.stdout.write(`  … and ${summary.rejected - summary.rejections.length} more rejections\n`);
  }
}
