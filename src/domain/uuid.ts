/**
 * Path identifiers are never format-validated (SPEC §5.2): a value that is not a UUID is simply
 * unknown. Queries bind ids as UUIDs, so callers check the form first instead of sending the
 * store a value it cannot parse.
 */
const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export const isUuid = (value: string) => UUID.test(value);

/** Never an entity's id here (those are UUIDv5): what a key without a value reads as in a join. */
export const NIL_UUID = '00000000-0000-0000-0000-000000000000';
