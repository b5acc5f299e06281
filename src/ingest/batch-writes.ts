import type { Store } from '../storage/gateway.js';
import { teamsOf } from '../teams/associations.js';
import type { FindingRow } from './finding-state.js';
import type { DetectionRank, NormalizedReport } from './normalize.js';
import * as q from './queries.js';
import { reconcileDerived } from './reconcile.js';
import { detectionRows, eventRows, issueObjectRows, issueRows, latestEventRow, bestClaims } from './rows.js';

/**
 * A batch's writes, one insert per table, in commit order: targets → issues → events → findings →
 * sources. A source row marks its report as ingested, so a crash before the last write leaves the
 * report to be processed again; every batch skips events already written (a retry, or the same
 * report in another job). Each step also writes what pages show of its entities (sql/0012): target
 * and issue objects after the rows they derive from, and the latest FOUND events within the events
 * insert; a retry rewrites them all for the batch's targets, issues and findings.
 */

export type WriteStep = 'targets' | 'issues' | 'events' | 'findings' | 'sources';

export class SimulatedCrash extends Error {
  constructor(step: WriteStep) {
    super(`simulated crash after writing ${step}`);
    this.name = 'SimulatedCrash';
  }
}

export interface BatchCounts {
  reports: number;
  events: number;
  findingVersions: number;
  /** Finding versions whose status differs from the one they replace (new findings included). */
  statusChanges: number;
  targets: number;
  issues: number;
  /**
   * Issues stored before whose shown form (details, labels) the batch changed: what every team's
   * answers can show (src/cache/batch-versions.ts). An issue first seen here is only in the batch's findings.
   */
  issuesChanged: number;
}

/** What a batch writes, derived in memory (src/ingest/batch.ts). */
export interface BatchWrites {
  /** The batch's reports that are not duplicates. */
  fresh: NormalizedReport[];
  targets: string[];
  findingRows: FindingRow[];
  /** Whether this detection is its finding's latest FOUND event (§3.5.6). */
  becameLatest: (findingId: string, rank: DetectionRank) => boolean;
  recovery: boolean;
  now: number;
  /** Test hook: simulate a crash right after this step's write. */
  crashAfter?: WriteStep | undefined;
}

const unique = <T>(xs: Iterable<T>) => [...new Set(xs)];

async function writeTargets(store: Store, w: BatchWrites, counts: BatchCounts): Promise<void> {
  const existing = await q.existingTargetIds(store, w.targets);
  const identifiers = new Map(w.fresh.map((r) => [r.targetId, r.identifier]));
  const created = [...identifiers].filter(([id]) => !existing.has(id));
  counts.targets = created.length;
  await store.insert(
    'targets',
    created.map(([id, identifier]) => ({ id, identifier, created_at: w.now })),
  );
  // A target's object has its teams: none for a target created here, unless associated before it
  // was (team associations can precede a target's first report).
  const described = w.recovery ? [...identifiers] : created;
  if (described.length === 0) return;
  const teams = await teamsOf(
    store,
    described.map(([id]) => id),
  );
  await store.insert(
    'target_objects',
    described.map(([id, identifier]) => ({ id, identifier, teams: teams.get(id) ?? [] })),
  );
}

async function writeIssues(store: Store, w: BatchWrites, counts: BatchCounts): Promise<void> {
  const best = bestClaims(w.fresh);
  const stored = await q.issueWinners(store, [...best.keys()]);
  const rows = issueRows(best, stored);
  counts.issues = rows.length;
  await store.insert('issue_claims', rows);
  const objects = issueObjectRows(best, stored, w.recovery);
  counts.issuesChanged = objects.filter((o) => stored.has(o.id)).length;
  await store.insert('issue_objects', objects);
}

/**
 * Events an earlier attempt wrote are skipped (and their latest ones completed), in every batch: a
 * crashed attempt's report may come back in another job — the same report delivered twice — that
 * is not in recovery, since recovery is known per job and partial writes are per report.
 *
 * Which reports those are is asked with one event each, its first detection's: a report's events
 * go into finding_events from its one report_detections row, in detection order, within one
 * insert, so an attempt that wrote any of them wrote that one first. Only for the reports found
 * is every event looked up (and its id hashed here).
 */
async function writeEvents(store: Store, w: BatchWrites, counts: BatchCounts): Promise<void> {
  const begun = await q.sourcesWithEvents(
    store,
    w.fresh.flatMap((r) =>
      r.detections.length === 0 ? [] : [{ findingId: r.detections[0]!.findingId, sourceId: r.sourceId, time: r.time }],
    ),
  );
  let keep: ((findingId: string, sourceId: string) => boolean) | undefined;
  if (begun.size > 0) {
    const all = eventRows(
      w.fresh.filter((r) => begun.has(r.sourceId)),
      w.becameLatest,
    );
    const existing = await q.existingEventIds(
      store,
      unique(all.map((e) => e.finding_id)),
      all.map((e) => e.id),
    );
    const written = all.filter((e) => existing.has(e.id));
    // By the ids hashed above rather than hashing each detection's again.
    const writtenKeys = new Set(written.map((e) => `${e.finding_id}/${e.source_id}`));
    keep = (findingId, sourceId) => !writtenKeys.has(`${findingId}/${sourceId}`);
    // A latest event written by the earlier attempt may not have reached finding_latest_events.
    await store.insert('finding_latest_events', written.filter((e) => e.became_latest === 1).map(latestEventRow));
  }
  const rows = detectionRows(w.fresh, w.becameLatest, keep);
  counts.events = rows.reduce((n, r) => n + r.finding_ids.length, 0);
  await store.insert('report_detections', rows);
}

async function writeFindings(store: Store, w: BatchWrites, counts: BatchCounts): Promise<void> {
  counts.findingVersions = w.findingRows.length;
  counts.statusChanges = w.findingRows.filter((r) => r.status !== r.prev_status).length;
  await store.insert('findings', w.findingRows);
  // A retry may follow a process killed between this insert and its views' pushes.
  if (w.recovery) await reconcileDerived(store, w.targets);
}

async function writeSources(store: Store, w: BatchWrites): Promise<void> {
  await store.insert(
    'sources',
    w.fresh.map((r) => ({
      id: r.sourceId,
      family_id: r.familyId,
      target_id: r.targetId,
      name: r.name,
      component: r.component,
      instance: r.instance,
      options: r.options,
      time: r.time,
    })),
  );
}

/** Writes the batch, step by step; fills `counts` as it goes. */
export async function writeBatch(store: Store, w: BatchWrites, counts: BatchCounts): Promise<void> {
  const steps: [WriteStep, () => Promise<void>][] = [
    ['targets', () => writeTargets(store, w, counts)],
    ['issues', () => writeIssues(store, w, counts)],
    ['events', () => writeEvents(store, w, counts)],
    ['findings', () => writeFindings(store, w, counts)],
    ['sources', () => writeSources(store, w)],
  ];
  for (const [name, write] of steps) {
    await write();
    if (w.crashAfter === name) throw new SimulatedCrash(name);
  }
}
