import { dbErrors } from '../errors.js';
import type { Paging } from '../filters/params.js';
import type { QueryParams, Store } from './gateway.js';

/**
 * One page of a list query (SPEC §5.3). The page comes first; its size often tells the total
 * (a short page ends the list), otherwise a count follows. A window count in the page query would
 * make the engine materialise every matching row before the LIMIT. An offset beyond the total is
 * a 404 "Page Not Found".
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
  /** Columns of the page rows. */
  select: string;
  /** FROM clause body, e.g. `findings FINAL`. */
  from: string;
  where: string;
  /** Empty when `from` already yields its rows in the list's order. */
  orderBy: string;
  params: QueryParams;
  /**
   * Turns the page statement into the one that runs (joins its rows with more columns, say); it
   * must keep the page's rows and order.
   */
  wrap?: (pageSql: string) => string;
  /**
   * Where the statement finds the total: `window`, a window count over the list (for sets small
   * enough to materialise: one row per issue, say); `column`, a `page_total` column the wrapped
   * statement adds. Without it, a count follows when the page does not tell.
   */
  totalInPage?: 'window' | 'column';
  /** The FROM clause body and conditions a count reads, where `from` serves pages only. */
  countFrom?: string;
  countWhere?: string;
}

export function pagination(page: Paging, total: number): Pagination {
  const offset = (page.page - 1) * page.size;
  return { limit: page.size, offset, total, more: total > offset + page.size };
}

/**
 * The empty page of a sub-list whose parent is unknown (SPEC §5.2: 200 with an empty list), where
 * paging still applies: any page after the first is past the end.
 */
export function emptyPage(page: Paging): Pagination {
  if (page.page > 1) throw dbErrors.pageNotFound();
  return pagination(page, 0);
}

/** Ids in the byte order of their lowercase text (SPEC §5.4), cheaper to sort on than the text. */
export const byId = (column = 'id') => `UUIDToNum(${column})`;

/** The total for a page: known from a short page, counted otherwise. */
export async function pageTotal(
  store: Store,
  q: Pick<ListQuery, 'from' | 'where' | 'params' | 'countFrom' | 'countWhere'>,
  page: Paging,
  returned: number,
): Promise<number> {
  const offset = (page.page - 1) * page.size;
  if (returned > 0 && returned < page.size) return offset + returned;
  if (returned === 0 && offset === 0) return 0;
  const [row] = await store.query<{ n: number }>(`SELECT count() AS n FROM ${q.countFrom ?? q.from} ${q.countWhere ?? q.where}`, q.params);
  const total = row?.n ?? 0;
  if (offset > total) throw dbErrors.pageNotFound();
  return total;
}

/** One page of a list with its total (see ListQuery.totalInPage); an empty page is still counted. */
export async function pagedQuery<T>(store: Store, q: ListQuery, page: Paging): Promise<PageOf<T>> {
  const offset = (page.page - 1) * page.size;
  const pageSql = `SELECT ${q.select}${q.totalInPage === 'window' ? ', count() OVER () AS page_total' : ''}
           FROM ${q.from}
           ${q.where}
           ${q.orderBy ? `ORDER BY ${q.orderBy}` : ''}
           LIMIT {pageLimit:UInt32} OFFSET {pageOffset:UInt64}`;
  // Offsets past any real total skip straight to the count (and keep the parameter in range).
  const found =
    offset < 2 ** 53
      ? await store.query<T & { page_total?: number }>(q.wrap ? q.wrap(pageSql) : pageSql, {
          ...q.params,
          pageLimit: page.size,
          pageOffset: offset,
        })
      : [];
  if (!q.totalInPage) return { rows: found, pagination: pagination(page, await pageTotal(store, q, page, found.length)) };
  const rows = found.map(({ page_total: _total, ...row }) => row as T);
  const told = found[0]?.page_total;
  // A total the page contradicts (one kept elsewhere, not yet rewritten after a change) is not
  // used: a full page needs at least its rows before it, a short one tells the total exactly.
  const fits = told !== undefined && (rows.length === page.size ? told >= offset + rows.length : told === offset + rows.length);
  const total = fits ? told : await pageTotal(store, q, page, told === undefined ? 0 : rows.length);
  return { rows, pagination: pagination(page, total) };
}
