import type { Paging } from '../filters/params.js';
import type { QueryParams, StatementOptions, Store } from './gateway.js';

/**
 * Pagination arithmetic and the count of a list (SPEC §5.3). A list's page statement ends in
 * PAGE_LIMIT; its size often tells the total (a short page ends the list), otherwise the list's
 * count statement runs. (A window count in the page statement would make the engine materialise
 * every matching row before the LIMIT.) An offset beyond the total is PageNotFound, which the
 * database API answers 404 "Page Not Found".
 */

interface Pagination {
  limit: number;
  offset: number;
  total: number;
  more: boolean;
}

export interface PageOf<T> {
  rows: T[];
  pagination: Pagination;
}

/** A page past the end of its list. */
export class PageNotFound extends Error {
  constructor() {
    super('page past the end of the list');
    this.name = 'PageNotFound';
  }
}

/** The end of every page statement; pageParams binds it. */
export const PAGE_LIMIT = 'LIMIT {pageLimit:UInt32} OFFSET {pageOffset:UInt64}';

const offsetOf = (page: Paging) => (page.page - 1) * page.size;

export const pageParams = (page: Paging) => ({ pageLimit: page.size, pageOffset: offsetOf(page) });

/** Offsets past any real total skip the page statement straight to the count (and keep the parameter in range). */
export const pageCanHoldRows = (page: Paging) => offsetOf(page) < 2 ** 53;

export function pagination(page: Paging, total: number): Pagination {
  const offset = offsetOf(page);
  return { limit: page.size, offset, total, more: total > offset + page.size };
}

/**
 * The empty page of a sub-list whose parent is unknown (SPEC §5.2: 200 with an empty list), where
 * paging still applies: any page after the first is past the end.
 */
export function emptyPage(page: Paging): Pagination {
  if (page.page > 1) throw new PageNotFound();
  return pagination(page, 0);
}

/** Ids in the byte order of their lowercase text (SPEC §5.4), cheaper to sort on than the text. */
export const byId = (column = 'id') => `UUIDToNum(${column})`;

/** A count statement: `SELECT count() AS n FROM …`. */
export interface CountStatement {
  sql: string;
  params: QueryParams;
  options?: StatementOptions | undefined;
}

/** The total for a page of `returned` rows: known from a short page, counted otherwise. */
export async function pageTotal(store: Store, count: CountStatement, page: Paging, returned: number): Promise<number> {
  const offset = offsetOf(page);
  if (returned > 0 && returned < page.size) return offset + returned;
  if (returned === 0 && offset === 0) return 0;
  const [row] = await store.query<{ n: number }>(count.sql, count.params, count.options);
  const total = row?.n ?? 0;
  if (offset > total) throw new PageNotFound();
  return total;
}

/**
 * The total a page statement told in a column (a window count, or totals kept elsewhere), where
 * the page agrees with it; otherwise the count runs. A told total not yet rewritten after a change
 * can contradict the page: a full page needs at least its rows before it, a short one tells the
 * total exactly.
 */
export function toldTotal(store: Store, count: CountStatement, page: Paging, returned: number, told: number | undefined): Promise<number> {
  const offset = offsetOf(page);
  const fits = told !== undefined && (returned === page.size ? told >= offset + returned : told === offset + returned);
  return fits ? Promise.resolve(told) : pageTotal(store, count, page, told === undefined ? 0 : returned);
}

/** One page of a list: its page statement (ending in PAGE_LIMIT), then its count where the page does not tell. */
export async function readPage<T>(
  store: Store,
  statements: { page: string; count: string },
  params: QueryParams,
  page: Paging,
  options?: StatementOptions,
): Promise<PageOf<T>> {
  const rows = pageCanHoldRows(page) ? await store.query<T>(statements.page, { ...params, ...pageParams(page) }, options) : [];
  const total = await pageTotal(store, { sql: statements.count, params, options }, page, rows.length);
  return { rows, pagination: pagination(page, total) };
}
