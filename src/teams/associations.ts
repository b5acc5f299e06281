import { targetId } from '../domain/ids.js';
import { nowSeconds } from '../domain/time.js';
import type { Logger } from '../log.js';
import { acquireAll, LockTimeout, type Locks } from '../locks/target-locks.js';
import type { Store } from '../storage/gateway.js';
import { copyTargetToTeams } from './team-copies.js';

/**
 * Target–team associations (target_teams): written by POST /targets and the demo, read by the
 * target lists and by ingestion (a target's object carries its teams).
 */

/** Teams one target may have in all (SPEC §5.6); checked under the target's lock (associateTeams). */
const MAX_TEAMS_PER_TARGET = 1000;

/**
 * Each target's teams in association order (a pair written twice keeps its first position): of
 * the targets bound as `ids`, or of all.
 */
export const teamsOfSql = (targets: 'ids' | 'all') => `SELECT target, arrayMap(x -> x.2, arraySort(groupArray((seq, team)))) AS teams
     FROM
     (
         SELECT target_id AS target, team, min(associated_seq) AS seq
         FROM target_teams
         ${targets === 'ids' ? 'WHERE target_id IN {ids:Array(UUID)}' : ''}
         GROUP BY target_id, team
     )
     GROUP BY target`;
const TEAMS_OF = teamsOfSql('ids');

export async function teamsOf(store: Store, targetIds: string[]): Promise<Map<string, string[]>> {
  if (targetIds.length === 0) return new Map();
  const rows = await store.query<{ target: string; teams: string[] }>(TEAMS_OF, { ids: targetIds });
  return new Map(rows.map((r) => [r.target, r.teams]));
}

/** An association would give the target more than MAX_TEAMS_PER_TARGET teams (SPEC §5.6). */
export class TooManyTeams extends Error {
  constructor(readonly targetId: string) {
    super(`target ${targetId} would have more than ${MAX_TEAMS_PER_TARGET} teams`);
    this.name = 'TooManyTeams';
  }
}

/**
 * The teams of a stored target (undefined when the target is not stored yet) and the sequence
 * number its next association starts at: after the clock's microseconds and after every stored
 * one, so that association order survives several associations within one millisecond.
 */
async function storedTeams(store: Store, id: string): Promise<{ teams: string[] | undefined; nextSeq: number }> {
  const [stored, teams, seq] = await Promise.all([
    store.query<{ n: number }>('SELECT count() AS n FROM targets WHERE id = {id:UUID}', { id }),
    teamsOf(store, [id]),
    store.query<{ last: number | string }>('SELECT max(associated_seq) AS last FROM target_teams WHERE target_id = {id:UUID}', { id }),
  ]);
  return {
    teams: (stored[0]?.n ?? 0) > 0 ? (teams.get(id) ?? []) : undefined,
    nextSeq: Math.max(Date.now() * 1000, Number(seq[0]?.last ?? 0) + 1),
  };
}

/**
 * POST /targets (SPEC §6.6): find or create the target and add the teams it lacks, in request
 * order. Associations are never removed.
 *
 * Runs under the target's ingest lock, so no batch writes the target's findings between the new
 * association and the copy of its findings into the team (see sql/0009_team_copies.sql). Every
 * requested team gets the copy, not only the added ones: a retry heals an association whose copy
 * was cut short.
 *
 * Without Redis no lock can be taken, but no batch can start either (batches take their locks in
 * Redis too): the association goes ahead, and only a batch already writing when Redis went away
 * could slip a finding version past the copy. `log` hears about it.
 */
export async function associateTeams(
  store: Store,
  locks: Locks,
  identifier: string,
  teams: string[],
  log?: Logger,
): Promise<{ id: string; identifier: string; teams: string[] }> {
  const id = targetId(identifier);
  const held = await acquireAll(locks, [id]).catch((err: unknown) => {
    if (err instanceof LockTimeout) throw err;
    log?.warn('target lock unavailable; associating teams without it', { target: id, err });
    return undefined;
  });
  try {
    const { teams: current, nextSeq } = await storedTeams(store, id);
    if (!current) await store.insert('targets', [{ id, identifier, created_at: nowSeconds() }]);
    const known = new Set(current ?? []);
    const requested = [...new Set(teams)];
    const added = requested.filter((t) => !known.has(t));
    // Counted under the target's lock, which every association takes: two requests cannot both
    // pass the limit on the same count (without Redis, see above, they could).
    if (known.size + added.length > MAX_TEAMS_PER_TARGET) throw new TooManyTeams(id);
    await store.insert(
      'target_teams',
      added.map((team, i) => ({ team, target_id: id, associated_seq: nextSeq + i })),
    );
    const target = { id, identifier, teams: [...(current ?? []), ...added] };
    await store.insert('target_objects', [target]);
    if (current) await copyTargetToTeams(store, id, requested);
    return target;
  } finally {
    await held?.release().catch((err: unknown) => log?.warn('releasing the target lock failed', { target: id, err }));
  }
}
