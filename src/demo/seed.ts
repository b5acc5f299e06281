import type { Queue } from 'bullmq';
import type { Logger } from '../log.js';
import { enqueueReports } from '../queue/producer.js';
import type { Store } from '../storage/gateway.js';
import type { Locks } from '../locks/target-locks.js';
import { associateTeams } from '../teams/associations.js';
import { TEAMS } from './catalog.js';
import { demoHistory, demoTargets, teamId } from './history.js';

/** `npm run demo`: associates the demo targets with their teams and enqueues six months of scans. */

export const DEMO = { targets: 300, days: 180 };

export async function seedDemo(deps: { store: Store; locks: Locks; queue: Queue; log: Logger }): Promise<number> {
  const { store, locks, queue, log } = deps;
  const [row] = await store.query<{ n: number }>('SELECT count() AS n FROM sources');
  if ((row?.n ?? 0) > 0) {
    log.info('the store already holds data; demo history not added', { sources: row!.n });
    return 0;
  }
  for (const t of demoTargets(DEMO.targets)) await associateTeams(store, locks, t.identifier, t.teams, log);
  const end = Math.floor(Date.now() / 86_400_000) * 86_400; // today 00:00 UTC
  let chunk: unknown[] = [];
  let total = 0;
  for (const report of demoHistory({ ...DEMO, end })) {
    chunk.push(report);
    if (chunk.length === 1000) {
      await enqueueReports(queue, chunk);
      total += chunk.length;
      chunk = [];
    }
  }
  await enqueueReports(queue, chunk);
  total += chunk.length;
  log.info('demo history enqueued', {
    reports: total,
    targets: DEMO.targets,
    teams: Object.fromEntries(TEAMS.map((t) => [t, teamId(t)])),
  });
  return total;
}
