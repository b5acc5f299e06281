/**
 * Path identifiers are never format-validated (SPEC §5.2): a value that is not a UUID is simply
 * unknown. Queries bind ids as UUIDs, so callers check the form first instead of sending the
 * store a value it cannot parse.
 */
const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export const isUuid = (value: string) => UUID.test(value);
