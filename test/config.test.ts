import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';

/** SPEC §10: the variables of this stage, validated once at start with a message naming the variable. */

describe('configuration', () => {
  it('given no variables, when loaded, then the limits and job settings take their defaults', () => {
    const c = loadConfig({});
    expect(c.dbApiAuth).toBeUndefined();
    expect(c.queryTimeoutMs).toBe(30_000);
    expect(c.jobs).toEqual({ lockMs: 30_000, maxStalls: 10 });
  });

  it('given a JWT_SECRET shorter than 32 characters, when loaded, then start-up fails naming it', () => {
    expect(() => loadConfig({ JWT_SECRET: 'x'.repeat(31) })).toThrow(ConfigError);
    expect(() => loadConfig({ JWT_SECRET: 'x'.repeat(31) })).toThrow(/JWT_SECRET: must be at least 32 characters/);
    expect(loadConfig({ JWT_SECRET: 'x'.repeat(32) }).jwt.secret).toBe('x'.repeat(32));
  });

  it('given DB_API_AUTH, when loaded, then only "jwt" (or empty) is accepted', () => {
    expect(loadConfig({ DB_API_AUTH: 'jwt' }).dbApiAuth).toBe('jwt');
    expect(loadConfig({ DB_API_AUTH: '' }).dbApiAuth).toBeUndefined();
    expect(() => loadConfig({ DB_API_AUTH: 'basic' })).toThrow(/DB_API_AUTH: must be "jwt" or empty/);
  });

  it('given job and statement limits out of range, when loaded, then start-up fails', () => {
    expect(() => loadConfig({ QUERY_TIMEOUT_MS: '0' })).toThrow(/QUERY_TIMEOUT_MS/);
    expect(() => loadConfig({ JOB_LOCK_MS: '10' })).toThrow(/JOB_LOCK_MS/);
    expect(() => loadConfig({ JOB_MAX_STALLS: 'many' })).toThrow(/JOB_MAX_STALLS/);
  });
});
