import { formatInstant } from '../domain/time.js';
import type { Paging } from '../filters/params.js';
import { merge, whereClause, type Sql } from '../filters/sql.js';
import type { Store } from '../storage/gateway.js';
import { byId, PAGE_LIMIT, type PageOf, readPage } from '../storage/paged.js';

/** Source objects (SPEC §2.3, §6.1). */

export interface Source {
  id: string;
  name: string;
  component: string;
  instance: string;
  options: string;
  time: string;
  target_id: string;
}

interface SourceRow extends Omit<Source, 'time'> {
  epoch: number;
  family_id: string;
}

const COLUMNS = 'id, name, component, instance, options, toUInt32(time) AS epoch, target_id, family_id';

const toSource = ({ epoch, family_id: _family, ...rest }: SourceRow): Source => ({ ...rest, time: formatInstant(epoch) });

export async function sourcesByIds(store: Store, ids: string[]): Promise<Map<string, Source>> {
  if (ids.length === 0) return new Map();
  const rows = await store.query<SourceRow>(`SELECT DISTINCT ${COLUMNS} FROM sources WHERE id IN {ids:Array(UUID)}`, { ids });
  return new Map(rows.map((r) => [r.id, toSource(r)]));
}

/**
 * One source with its family (for the family's MTTR). `visibleTargets` (the caller's scope,
 * src/auth/scope.ts) restricts the sources read here to those of these targets.
 */
export async function sourceById(
  store: Store,
  id: string,
  visibleTargets: Sql = { where: [], params: {} },
): Promise<(Source & { familyId: string }) | undefined> {
  const where = merge({ where: ['id = {id:UUID}'], params: { id } }, visibleTargets);
  const [row] = await store.query<SourceRow>(`SELECT ${COLUMNS} FROM sources ${whereClause(where)} LIMIT 1`, where.params);
  return row ? { ...toSource(row), familyId: row.family_id } : undefined;
}

/** Sources by time, then id (SPEC §5.4). */
export async function sourcePage(store: Store, page: Paging, visibleTargets: Sql = { where: [], params: {} }): Promise<PageOf<Source>> {
  const where = whereClause(visibleTargets);
  const result = await readPage<SourceRow>(
    store,
    {
      page: `SELECT ${COLUMNS} FROM sources ${where} ORDER BY time, ${byId()} ${PAGE_LIMIT}`,
      count: `SELECT count() AS n FROM sources ${where}`,
    },
    visibleTargets.params,
    page,
  );
  return { rows: result.rows.map(toSource), pagination: result.pagination };
}
