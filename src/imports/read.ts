/**
 * Reading a parsed JSON document field by field: each reader returns the value (or undefined/[]
 * when absent or null) and throws `Malformed`, naming the field's path, when it has another type.
 * The converters read scanner documents this way rather than through a schema: a document of
 * thousands of results would otherwise be copied whole once more before conversion.
 */

export type JsonObject = Record<string, unknown>;

export class Malformed extends Error {
  constructor(path: string, expected: string) {
    super(`${path}: must be ${expected}`);
    this.name = 'Malformed';
  }
}

/** The path of a member: `runs[0]`, `runs[0].tool`. */
export const at = (path: string, key: string | number): string =>
  typeof key === 'number' ? `${path}[${key}]` : path === '' ? key : `${path}.${key}`;

export function object(value: unknown, path: string): JsonObject | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'object' && !Array.isArray(value)) return value as JsonObject;
  throw new Malformed(path, 'an object');
}

export function requiredObject(value: unknown, path: string): JsonObject {
  return object(value, path) ?? fail(path, 'an object');
}

export function list(value: unknown, path: string): unknown[] {
  if (value === null || value === undefined) return [];
  if (Array.isArray(value)) return value;
  throw new Malformed(path, 'an array');
}

export function text(value: unknown, path: string): string | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'string') return value;
  throw new Malformed(path, 'a string');
}

export function integer(value: unknown, path: string): number | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  throw new Malformed(path, 'an integer');
}

export function number(value: unknown, path: string): number | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  throw new Malformed(path, 'a number');
}

export function texts(value: unknown, path: string): string[] {
  const items = list(value, path);
  for (let i = 0; i < items.length; i++) if (typeof items[i] !== 'string') throw new Malformed(at(path, i), 'a string');
  return items as string[];
}

export function fail(path: string, expected: string): never {
  throw new Malformed(path, expected);
}
