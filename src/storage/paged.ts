import { dbErrors } from '../errors.js';
import type { Paging } from '../filters/params.js';
import type { QueryParams, Store } from './gateway.js';

/**
 * One page of a list query (SPEC §5.3). The page and the total come back in one round trip
 * (`count() OVER ()`); only a page past the end needs a second query for the total, and an
 * offset beyond the total is a 404 "Page Not Found".
 */

export interface Pagination {
  limit: number;
  offset: number;
  total: number;
  more: boolean;
}

export interface PageOf<T> {
  rows: T[];
  pagination: Pagination;
}

export interface ListQuery {
  /** Columns of the page rows (must not include a `total` column). */
  select: string;
  /** FROM clause body, e.g. `findings FINAL`. */
  from: string;
  where: string;
  orderBy: string;
  params: QueryParams;
}

export function pagination(page: Paging, total: number): Pagination {
  const offset = (page.page - 1) * page.size;
  return { limit: page.size, offset, total, more: total > offset + page.size };
}

export async function pagedQuery<T>(store: Store, q: ListQuery, page: Paging): Promise<PageOf<T>> {
  const offset = (page.page - 1) * page.size;
  let rows: (T & { total: number })[] = [];
  // Offsets past any real total skip straight to the count (and keep the parameter in range).
  if (offset < 2 ** 53) {
    rows = await store.query<T & { total: number }>(
      `SELECT ${q.select}, count() OVER () AS total
       FROM ${q.from}
       ${q.where}
       ORDER BY ${q.orderBy}
       LIMIT {pageLimit:UInt32} OFFSET {pageOffset:UInt64}`,
      { ...q.params, pageLimit: page.size, pageOffset: offset },
    );
  }
  let total: number;
  if (rows.length > 0) {
    total = rows[0]!.total;
  } else {
    const [row] = await store.query<{ n: number }>(`SELECT count() AS n FROM ${q.from} ${q.where}`, q.params);
    total = row?.n ?? 0;
    if (offset > total) throw dbErrors.pageNotFound();
  }
  return {
    rows: rows.map(({ total: _total, ...rest }) => rest as T),
    pagination: pagination(page, total),
  };
}
