import { formatInstant } from '../domain/time.js';
import type { Paging } from '../filters/params.js';
import { merge, whereClause, type Sql } from '../filters/sql.js';
import type { Store } from '../storage/gateway.js';
import type { SourceBody } from './schema.js';
import { byId, PAGE_LIMIT, type PageOf, readPage } from '../storage/paged.js';

/** Source objects (SPEC §2.3, §6.1). */

interface SourceRow extends Omit<SourceBody, 'time'> {
  epoch: number;
  family_id: string;
}

const COLUMNS = 'id, name, component, instance, options, toUInt32(time) AS epoch, target_id, family_id';

const toSource = ({ epoch, family_id: _family, ...rest }: SourceRow): SourceBody => ({ ...rest, time: formatInstant(epoch) });

/**
 * One source with its family (for the family's MTTR). `visibleTargets` (the caller's scope,
 * src/auth/scope.ts) restricts the sources read here to those of these targets.
 */
export async function sourceById(
  store: Store,
  id: string,
  visibleTargets: Sql = { where: [], params: {} },
): Promise<(SourceBody & { familyId: string }) | undefined> {
  const where = merge({ where: ['id = {id:UUID}'], params: { id } }, visibleTargets);
  const [row] = await store.query<SourceRow>(`SELECT ${COLUMNS} FROM sources ${whereClause(where)} LIMIT 1`, where.params);
  return row ? { ...toSource(row), familyId: row.family_id } : undefined;
}

/** Sources by time, then id (SPEC §5.4). */
export async function sourcePage(store: Store, page: Paging, visibleTargets: Sql = { where: [], params: {} }): Promise<PageOf<SourceBody>> {
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
