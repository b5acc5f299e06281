/**
 * Instants are UTC epoch seconds everywhere inside the service (SPEC §0.2: second precision).
 * This module parses the timestamp forms reports may carry (SPEC §3.2), date parameters
 * (YYYY-MM-DD, real calendar dates) and renders RFC 3339.
 */

/** The end of an OPEN period that has not ended: the largest ClickHouse DateTime. */
export const NEVER = 4294967295;

const SECONDS_PER_DAY = 86_400;

function isLeap(y: number): boolean {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
}

function daysInMonth(y: number, m: number): number {
  return [31, isLeap(y) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1] ?? 0;
}

function validDate(y: number, m: number, d: number): boolean {
  return m >= 1 && m <= 12 && d >= 1 && d <= daysInMonth(y, m);
}

const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:([Zz])|([+-])(\d{2}):(\d{2}))?$/;

/**
 * Parses a report timestamp: `YYYY-MM-DD HH:MM:SS` (UTC), RFC 3339 with `Z`/`z` or `±HH:MM`,
 * or a `T`-separated form without offset (UTC); any fraction is truncated. Returns epoch
 * seconds, or undefined when the text is not one of those forms or not a real instant in the
 * range the store can hold.
 */
export function parseTimestamp(text: string): number | undefined {
  const m = TIMESTAMP.exec(text);
  if (!m) return undefined;
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (!validDate(y, mo, d) || h > 23 || mi > 59 || s > 59) return undefined;
  let offset = 0;
  if (m[8]) {
    const oh = Number(m[9]);
    const om = Number(m[10]);
    if (oh > 23 || om > 59) return undefined;
    offset = (m[8] === '+' ? 1 : -1) * (oh * 3600 + om * 60);
  }
  const epoch = Date.UTC(y, mo - 1, d, h, mi, s) / 1000 - offset;
  if (epoch < 0 || epoch >= NEVER) return undefined;
  return epoch;
}

/** Parses a `YYYY-MM-DD` calendar date into the epoch second of its start (00:00:00Z). */
export function parseDate(text: string): number | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (!m) return undefined;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (!validDate(y, mo, d)) return undefined;
  return Date.UTC(y, mo - 1, d) / 1000;
}

export function addDays(epoch: number, days: number): number {
  return epoch + days * SECONDS_PER_DAY;
}

/** RFC 3339 in UTC with a `Z` suffix and no fraction, e.g. `2024-01-05T10:00:00Z`. */
export function formatInstant(epoch: number): string {
  return new Date(epoch * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Epoch seconds of a ClickHouse `DateTime('UTC')` rendered as `YYYY-MM-DD HH:MM:SS`. */
export function fromStoreDateTime(text: string): number {
  return Date.parse(`${text.replace(' ', 'T')}Z`) / 1000;
}

export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

/** Whole hours between two instants (floor of seconds / 3600), SPEC §0.2. */
export function wholeHours(seconds: number): number {
  return Math.floor(seconds / 3600);
}
