import type { BatchResult } from '../ingest/batch.js';
import type { NormalizedReport } from '../ingest/normalize.js';
import type { Logger } from '../log.js';
import type { Store } from '../storage/gateway.js';
import { teamsOf } from '../teams/associations.js';
import type { DataVersion } from './data-version.js';

/**
 * What a committed batch invalidates (src/cache/data-version.ts): the answers of the teams its
 * targets are associated with, and those about all teams' data. A batch that changed how a known
 * issue shows (in every team's findings and label filters), a retry (an earlier attempt may have
 * written anything, never bumped), or one whose teams cannot be read, invalidates every answer.
 * An issue first seen in the batch has findings only on its targets: their teams' versions cover it.
 *
 * The teams are read after the commit: an association made since is in them, and one made later
 * bumps all data itself (POST /targets).
 */
export async function bumpAfterBatch(
  deps: { store: Store; dataVersion: DataVersion; log: Logger },
  result: BatchResult,
  batch: { recovery: boolean; reports: readonly NormalizedReport[] },
): Promise<void> {
  if (batch.recovery || result.counts.issuesChanged > 0) return deps.dataVersion.bump('batch committed (shared data)');
  // Duplicates too: their report may be one a dead process stored and never told the cache of.
  const targets = [...new Set(batch.reports.map((r) => r.targetId))];
  let teams: Map<string, string[]>;
  try {
    teams = await teamsOf(deps.store, targets);
  } catch (err) {
    deps.log.warn("could not read the batch's teams; every cached answer is invalidated", { err });
    return deps.dataVersion.bump('batch committed (teams unknown)');
  }
  return deps.dataVersion.bumpBatch('batch committed', [...teams.values()].flat());
}
