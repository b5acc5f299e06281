import { nowSeconds } from '../domain/time.js';
import { rewriteTotals } from './totals.js';
import type { Logger } from '../log.js';
import type { Store } from '../storage/gateway.js';
import { TimeSlices } from '../time-slices.js';
import { groupBy, rebuildPair } from './derive.js';
import { findingContent, type FindingContent, type FindingRow, type FindingState } from './finding-state.js';
import { rewriteLatest, shownLatest, storedRows, type StoredRow, targetSources, targetsToDo } from './recompute-queries.js';
import { compareRank } from './normalize.js';
import * as q from './queries.js';
import { LockTimeout, type Locks } from '../locks/target-locks.js';

/**
 * `vulndb recompute`: rebuilds every finding's state from the stored history (SPEC §3.5), e.g.
 * after a fix to the derivation. Per target, each detecting family's periods are walked again over
 * all of the family's stored sources and the finding's FOUND events — rebuildPair, as a batch in
 * recovery mode does, with no new report — and the score and latest event are taken from the
 * latest stored FOUND event. A new findings version is written only where a derived column differs
 * from the stored row (every column, not just the periods and score the worker compares: a fixed
 * rule may change how they summarise), so a correct store is left as it is. The rest follows from
 * that insert as after a batch: the counters through the materialized views, then the lists'
 * totals (rewriteTotals) and, through `onChanged`, the response cache's data version.
 *
 * Targets are done in chunks, each under its targets' ingest locks, so a worker running meanwhile
 * (server mode) never derives one of them from state this is rewriting, or the other way round.
 */

export interface RecomputeProgress {
  /** Targets done and to do. */
  targets: number;
  total: number;
  findings: number;
  /** New findings versions written, and how many of them changed the status. */
  versions: number;
  statusChanges: number;
  /** Findings whose latest event (finding_latest_events) was rewritten. */
  latestEvents: number;
  /** Findings without any FOUND event from a stored source: left as they are. */
  orphans: number;
}

export interface RecomputeOptions {
  /** Only the target with this identifier (UnknownTarget when there is none). */
  target?: string;
  /** Targets per step (locks taken, history read and versions written together). */
  chunkSize?: number;
  now?: number;
  /** Give up when no lock of a step's remaining targets could be taken for this long. */
  lockTimeoutMs?: number;
  onProgress?: (p: RecomputeProgress) => void;
  /** After each step that wrote something (the CLI bumps the data version there). */
  onChanged?: () => Promise<void>;
  log?: Logger;
}

export class UnknownTarget extends Error {
  constructor(identifier: string) {
    super(`no target with the identifier ${JSON.stringify(identifier)}`);
    this.name = 'UnknownTarget';
  }
}

const RECOMPUTE_CHUNK = 500;

const unique = <T>(xs: Iterable<T>) => [...new Set(xs)];

/** The derived columns of a row, for comparison (the identity columns never change). */
const derived = (c: FindingContent) =>
  JSON.stringify([
    c.status,
    c.score,
    c.severity,
    c.found_at,
    c.fixed_at,
    c.first_found_at,
    c.last_found_at,
    c.closed_exposure,
    c.ttr_sum,
    c.ttr_count,
    c.family_ids,
    c.family_periods,
  ]);

interface StepResult {
  findings: number;
  versions: number;
  statusChanges: number;
  latestEvents: number;
  orphans: number;
}

/**
 * SPEC §3.5 step 1: a finding's detecting families are those of the stored sources on its target
 * that reported it; each (target, family) pair is rebuilt for the findings it detected.
 */
async function rederive(
  stored: Map<string, StoredRow>,
  sources: q.StoredSource[],
  events: Awaited<ReturnType<typeof q.familyEvents>>,
  latest: Awaited<ReturnType<typeof q.latestEvents>>,
): Promise<Map<string, FindingState>> {
  const sourceById = new Map(sources.map((s) => [s.id, s]));
  const reporters = new Map<string, Set<string>>();
  const candidates = new Map<string, Set<FindingState>>();
  const states = new Map<string, FindingState>();
  for (const row of stored.values()) {
    states.set(row.id, {
      id: row.id,
      targetId: row.target_id,
      issueId: row.issue_id,
      affectedResource: row.affected_resource,
      familyPeriods: new Map(),
      score: latest.get(row.id)?.score ?? row.score,
    });
  }
  for (const e of events) {
    const state = states.get(e.findingId)!;
    const source = sourceById.get(e.sourceId);
    if (!source || source.targetId !== state.targetId) continue; // its report was never committed
    const seen = reporters.get(e.findingId);
    if (seen) seen.add(e.sourceId);
    else reporters.set(e.findingId, new Set([e.sourceId]));
    const key = q.pairKey(source.targetId, source.familyId);
    const found = candidates.get(key);
    if (found) found.add(state);
    else candidates.set(key, new Set([state]));
  }
  const sourcesByPair = groupBy(sources, (s) => q.pairKey(s.targetId, s.familyId));
  const slices = new TimeSlices();
  for (const [key, found] of candidates) {
    if (slices.due) await slices.turn();
    const [targetId, familyId] = key.split('/') as [string, string];
    rebuildPair({ targetId, familyId, reports: [], reported: [], fast: false }, [...found], sourcesByPair.get(key) ?? [], reporters);
  }
  return states;
}

/** Re-derives the findings of some targets (their locks held) and writes what differs. */
async function recomputeStep(store: Store, targets: string[], now: number): Promise<StepResult> {
  const stored = await storedRows(store, targets);
  const result: StepResult = { findings: stored.size, versions: 0, statusChanges: 0, latestEvents: 0, orphans: 0 };
  if (stored.size === 0) return result;
  const ids = [...stored.keys()];
  const sources = await targetSources(store, targets);
  const events = await q.familyEvents(store, ids, unique(sources.map((s) => s.familyId)));
  const latest = await q.latestEvents(store, ids);
  const states = await rederive(stored, sources, events, latest);

  const rows: FindingRow[] = [];
  const slices = new TimeSlices();
  for (const state of states.values()) {
    if (slices.due) await slices.turn();
    if (state.familyPeriods.size === 0) {
      result.orphans += 1;
      continue;
    }
    const row = stored.get(state.id)!;
    const content = findingContent(state);
    if (derived(content) === derived(row)) continue;
    rows.push({ ...content, version: row.version + 1, prev_status: row.status, prev_severity: row.severity, updated_at: now });
  }

  // The latest events pages show, where they are not the latest stored (written before the
  // findings, as a batch writes its events before its findings).
  const shown = await shownLatest(store, ids);
  const stale = ids.filter((id) => {
    const l = latest.get(id);
    const s = shown.get(id);
    return l !== undefined && (s === undefined || compareRank(l.rank, s) !== 0);
  });
  if (stale.length > 0) await rewriteLatest(store, stale);
  await store.insert('findings', rows);
  result.latestEvents = stale.length;
  result.versions = rows.length;
  result.statusChanges = rows.filter((r) => r.status !== r.prev_status).length;
  return result;
}

/**
 * Runs `step` on every target of `ids`, a few at a time as their locks come free (an ingest batch
 * holds its targets' locks for a second or two); LockTimeout when none could be taken for `timeoutMs`.
 */
async function underLocks(locks: Locks, ids: string[], timeoutMs: number, step: (ids: string[]) => Promise<void>): Promise<void> {
  let remaining = ids;
  let deadline = Date.now() + timeoutMs;
  while (remaining.length > 0) {
    const held = await locks.acquire(remaining);
    const got = remaining.filter((id) => held.acquired.has(id));
    try {
      if (got.length > 0) await step(got);
    } finally {
      await held.release();
    }
    remaining = remaining.filter((id) => !held.acquired.has(id));
    if (remaining.length === 0) return;
    if (got.length > 0) deadline = Date.now() + timeoutMs;
    else if (Date.now() >= deadline) throw new LockTimeout(remaining);
    else await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export async function recomputeFindings(store: Store, locks: Locks, opts: RecomputeOptions = {}): Promise<RecomputeProgress> {
  const now = opts.now ?? nowSeconds();
  const chunkSize = opts.chunkSize ?? RECOMPUTE_CHUNK;
  const targets = await targetsToDo(store, opts.target);
  if (opts.target !== undefined && targets.length === 0) throw new UnknownTarget(opts.target);
  const progress: RecomputeProgress = {
    targets: 0,
    total: targets.length,
    findings: 0,
    versions: 0,
    statusChanges: 0,
    latestEvents: 0,
    orphans: 0,
  };
  opts.onProgress?.({ ...progress });
  for (let i = 0; i < targets.length; i += chunkSize) {
    await underLocks(locks, targets.slice(i, i + chunkSize), opts.lockTimeoutMs ?? 60_000, async (ids) => {
      const r = await recomputeStep(store, ids, now);
      progress.targets += ids.length;
      progress.findings += r.findings;
      progress.versions += r.versions;
      progress.statusChanges += r.statusChanges;
      progress.latestEvents += r.latestEvents;
      progress.orphans += r.orphans;
      if (r.orphans > 0)
        opts.log?.warn('findings without a FOUND event of a stored source left as they are', { targets: ids.length, findings: r.orphans });
      // As after a batch: the lists' totals (moved only by status changes), then the data version.
      if (r.statusChanges > 0) await rewriteTotals(store, locks, opts.log);
      if (r.versions > 0 || r.latestEvents > 0) await opts.onChanged?.();
    });
    opts.onProgress?.({ ...progress });
  }
  return progress;
}
