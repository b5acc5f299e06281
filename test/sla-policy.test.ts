import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { parseSlaDays, slaDueAt } from '../src/sla/policy.js';

/** SPEC §10/§12.1: SLA_DAYS, validated at start, and the deadline of the period OPEN at an instant. */

const DAY = 86_400;
const NEVER = 4294967295;

describe('SLA_DAYS', () => {
  it('given no SLA_DAYS (or an empty one), when loaded, then the default policy applies and informational has no SLA', () => {
    const expected = { critical: 7, high: 30, medium: 90, low: 180, informational: null };
    expect(loadConfig({}).slaPolicy).toEqual(expected);
    expect(loadConfig({ SLA_DAYS: ' ' }).slaPolicy).toEqual(expected);
  });

  it('given a custom policy, when loaded, then only the listed severities have an SLA, spaces allowed', () => {
    expect(loadConfig({ SLA_DAYS: 'critical=1, informational = 365,' }).slaPolicy).toEqual({
      critical: 1,
      high: null,
      medium: null,
      low: null,
      informational: 365,
    });
  });

  it.each([
    ['critical:7', /SLA_DAYS: "critical:7" is not severity=days/],
    ['urgent=3', /SLA_DAYS: "urgent" is not a severity/],
    ['high=30,high=10', /SLA_DAYS: high is given twice/],
    ['low=0', /SLA_DAYS: low=0: days must be a whole number from 1 to 36500/],
    ['low=1.5', /SLA_DAYS: "low=1.5" is not severity=days/],
    ['medium=99999', /SLA_DAYS: medium=99999: days must be/],
    ['Critical=7', /SLA_DAYS: "Critical" is not a severity/],
    [',', /SLA_DAYS: no severity=days entry/],
  ])('given SLA_DAYS=%s, when loaded, then start-up fails naming the variable and the entry', (value, message) => {
    expect(() => loadConfig({ SLA_DAYS: value })).toThrow(ConfigError);
    expect(() => loadConfig({ SLA_DAYS: value })).toThrow(message);
  });
});

describe('sla_due', () => {
  const periods = { found: [1000, 10 * DAY], fixed: [5000, NEVER] };
  const policy = parseSlaDays('high=30');

  it('is the deadline of the period OPEN at the instant: its start plus the days of the severity', () => {
    expect(slaDueAt(periods, 'high', 20 * DAY, policy)).toBe(40 * DAY);
    expect(slaDueAt(periods, 'high', 2000, policy)).toBe(1000 + 30 * DAY);
  });

  it('is null when no period is OPEN then (before, between, at a fix) or the severity has no SLA', () => {
    expect(slaDueAt(periods, 'high', 999, policy)).toBeNull();
    expect(slaDueAt(periods, 'high', 5000, policy)).toBeNull();
    expect(slaDueAt(periods, 'high', 9 * DAY, policy)).toBeNull();
    expect(slaDueAt(periods, 'critical', 20 * DAY, policy)).toBeNull();
  });
});
