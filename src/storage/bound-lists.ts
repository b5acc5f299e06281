/**
 * `column IN` a bound list of UUIDs, in the form the engine evaluates fast at the list's size.
 *
 * ClickHouse 26 turns `IN {p:Array(UUID)}` into a set in linear time up to 65,536 elements and
 * falls off a cliff beyond (a list just past the limit costs a hundred times more), while the same
 * list read through a subquery stays linear. Ingest
 * batches reach such lists (ten vulnerabilities in each of 8,000 reports are 80,000 finding ids),
 * so every list a batch binds goes through here. Below the limit the plain form is kept: the
 * primary key can use it (the session caps index use for subquery sets at 1,000 values).
 */
export const PLAIN_LIST_LIMIT = 65_536;

export function inUuids(column: string, param: string, values: readonly string[]): string {
  return values.length > PLAIN_LIST_LIMIT
    ? `${column} IN (SELECT arrayJoin({${param}:Array(UUID)}))`
    : `${column} IN {${param}:Array(UUID)}`;
}
